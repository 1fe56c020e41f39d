"""What a scan writes: the output folder and its ownership, pairs.tsv, PLINK's files, run.json."""
