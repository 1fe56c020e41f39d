"""The scan from a loaded study to its result, for both tests (BOOST for case-control, PLINK's
linear test for a quantitative trait): settings and their checks, tiles of the pair triangle, what
they accumulate, the per-tile checkpoint, part files and their merge, progress and stages."""
