"""The study as data: opening an input, PLINK's QC, the genotype records and their bit planes, and
seeded studies for tests and benchmarks."""
