"""Readers of the genotype and phenotype formats (PLINK 1 and 2, VCF, BGEN, the BOOST text matrix),
each giving the data layer a GenotypeSource."""
