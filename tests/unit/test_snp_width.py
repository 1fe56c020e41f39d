"""PLINK's SNP column width (gboost.data.study.plink_snp_width): the vectorised rule equals the plain
loop over IDs in file order, on random length sequences, non-ASCII IDs and object arrays."""
import numpy as np

from gboost.data.study import plink_snp_width


def _loop(ids) -> int:  # the rule as PLINK 1.9 applies it, one ID at a time
    w = 4
    for x in ids:
        n = len(str(x).encode("utf-8"))
        if n > w:
            w = n + 2
    return w


def test_equals_the_loop_on_random_lengths():
    rng = np.random.default_rng(24)
    for _ in range(3000):
        lengths = rng.integers(0, 16, size=rng.integers(1, 40))
        ids = np.array(["r" * int(k) for k in lengths])
        assert plink_snp_width(ids) == _loop(ids), lengths.tolist()


def test_awkward_inputs():
    assert plink_snp_width(np.array(["abcde", "abcdef"])) == 7  # 'abcdef' is not longer than 7
    assert plink_snp_width(np.array(["abcdef", "abcde"])) == 8
    assert plink_snp_width(np.array([], dtype="U1")) == 4
    uni = np.array(["é" * 3, "ab"])  # 6 bytes in UTF-8, as PLINK counts
    assert plink_snp_width(uni) == _loop(uni) == 8
    obj = np.array(["rs1", "rs_long_name"], dtype=object)
    assert plink_snp_width(obj) == _loop(obj) == 14
    assert plink_snp_width(["x" * 9]) == 11
