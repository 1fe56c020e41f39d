"""A scan's settings: the one flat object a user fills (:class:`ScanParams`, one field per ``gboost
scan`` flag) and the three narrow views the pipeline's stages take.

- :class:`ScreenParams`: what the screen's results depend on (with the study). The checkpoint
  fingerprints exactly this, so a change here is a change of what --resume accepts.
- :class:`EngineOptions`: which engine screens and how; never changes a result (every engine gives
  the same bytes: docs/DESIGN.md, "Invariants").
- :class:`ReportOptions`: what finalize and the output files add (the marginal test, filters of
  pairs.tsv, calibration).
- :class:`PermutationOptions`: ``--perm``'s label permutations after the scan (their maxima give
  pairs.tsv's EMP2; gboost/pipeline/permute.py). The checkpoint pins them too.

Why one flat object and three views rather than three objects the user builds: the flags, the GUI's
Run panel, part.json and the tests all speak in flat fields; each stage takes only its view, so what
a stage depends on is written in its signature.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from gboost.stats.pvalues import Thresholds


@dataclass(frozen=True)
class ScreenParams:
    """What the screen's results depend on, beside the study."""

    epi1: float = 5e-6  # screen and report threshold (PLINK's default for --fast-epistasis boost)
    epi2: float = 0.01  # the .summary's N_SIG threshold
    part: tuple[int, int] | None = None  # (k, n): the k-th of n parts of the triangle

    def thresholds(self) -> Thresholds:
        return Thresholds.of(self.epi1, self.epi2)

    def fingerprint(self) -> dict:
        """The checkpoint manifest's entries for these settings (gboost/pipeline/checkpoint.py)."""
        return {"epi1": self.epi1, "epi2": self.epi2, "part": list(self.part) if self.part else None}


@dataclass(frozen=True)
class EngineOptions:
    """Which engine screens the tiles (:func:`gboost.engines.make_engine`); results never depend on it."""

    device: str = "auto"  # 'auto', 'cpu' or 'gpu'
    threads: int | None = None
    tile: int | None = None
    gpus: tuple[int, ...] | None = None
    dask: str | None = None  # scheduler address or 'local:N': tiles run as Dask tasks


@dataclass(frozen=True)
class ReportOptions:
    """What finalize and the outputs add to the screen."""

    allelic: bool = False  # marginal test: BOOST's 2-df LR (default) or PLINK's 1-df allelic chi2
    min_distance_kb: float | None = None  # pairs.tsv: leave out pairs closer than this on one chromosome
    max_r2: float | None = None  # pairs.tsv: leave out pairs in LD above this r^2
    calibration_pairs: int = 200_000  # exact tests of a random sample of pairs for lambda (0: off)


@dataclass(frozen=True)
class PermutationOptions:
    """``--perm N``: N permutations of the case/control labels after the scan (0: none), seeded by
    ``perm_seed``, within the clusters of the ``within`` file (PLINK's --within) when given."""

    perm: int = 0
    perm_seed: int = 0
    within: str | None = None


@dataclass
class ScanParams:
    """Every setting of ``gboost scan`` beyond the input and QC, flat (one field per flag)."""

    epi1: float = 5e-6
    epi2: float = 0.01
    device: str = "auto"
    threads: int | None = None
    tile: int | None = None
    gpus: list[int] | None = None
    dask: str | None = None
    allelic: bool = False
    part: tuple[int, int] | None = None
    min_distance_kb: float | None = None
    max_r2: float | None = None
    calibration_pairs: int = 200_000
    perm: int = 0
    perm_seed: int = 0
    within: str | None = None

    def __post_init__(self):
        from gboost.pipeline.validate import check_setting, check_type, dask_setting, gpu_ids

        owner = "ScanParams"
        for name in ("epi1", "epi2"):
            check_type(owner, name, getattr(self, name), "number", optional=False)
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ValueError(f"--{name} must be between 0 and 1 (exclusive), got {v}")
        check_type(owner, "device", self.device, "str", optional=False)
        if self.device not in ("auto", "cpu", "gpu"):
            raise ValueError(f"--device must be auto, cpu or gpu, got {self.device!r}")
        check_setting(owner, "threads", self.threads, "int")
        check_setting(owner, "tile", self.tile, "int")
        if self.gpus is not None:
            if isinstance(self.gpus, (str, bytes)) or not hasattr(self.gpus, "__iter__"):
                raise TypeError(f"{owner}: gpus must be a list of device numbers or None, got "
                                f"{type(self.gpus).__name__} {self.gpus!r}")
            self.gpus = gpu_ids(list(self.gpus))
        self.dask = dask_setting(owner, self.dask)
        check_type(owner, "allelic", self.allelic, "bool", optional=False)
        if self.part is not None:
            if isinstance(self.part, (str, bytes)) or len(tuple(self.part)) != 2:
                raise TypeError(f"{owner}: part must be (k, n) or None, got {type(self.part).__name__} {self.part!r}")
            for x in self.part:
                check_type(owner, "part", x, "int", optional=False)
            k, n = (int(x) for x in self.part)
            if not 1 <= k <= n:
                raise ValueError(f"--part {k}/{n}: need 1 <= K <= N")
            self.part = (k, n)
        check_setting(owner, "min_distance_kb", self.min_distance_kb)
        check_setting(owner, "max_r2", self.max_r2)
        check_type(owner, "calibration_pairs", self.calibration_pairs, "int", optional=False)
        if self.calibration_pairs < 0:
            raise ValueError(f"--calibration-pairs must be 0 (no calibration) or more, got {self.calibration_pairs}")
        self._check_permutations(owner)

    def _check_permutations(self, owner: str) -> None:
        check_permutations(self, owner)

    @classmethod
    def of(cls, screen: ScreenParams = ScreenParams(), engine: EngineOptions = EngineOptions(),
           report: ReportOptions = ReportOptions(),
           permutations: PermutationOptions = PermutationOptions()) -> "ScanParams":
        """The flat settings from the views."""
        kw = {**asdict(screen), **asdict(engine), **asdict(report), **asdict(permutations)}
        kw["gpus"] = list(engine.gpus) if engine.gpus is not None else None
        return cls(**kw)

    @property
    def screen(self) -> ScreenParams:
        return ScreenParams(**_pick(self, ScreenParams))

    def checkpoint_settings(self) -> tuple[str, dict]:
        """The test and the settings a checkpoint pins (gboost/pipeline/checkpoint.py): the screen's,
        and with --perm the permutations' (N, seed, and the --within file's bytes: the strata), so
        that a --resume continues the same permutations."""
        settings = self.screen.fingerprint()
        if self.perm:
            settings["perm"] = perm_settings(self)
        return "boost", settings

    @property
    def permutations(self) -> PermutationOptions:
        return PermutationOptions(**_pick(self, PermutationOptions))

    @property
    def engine(self) -> EngineOptions:
        kw = _pick(self, EngineOptions)
        kw["gpus"] = tuple(self.gpus) if self.gpus is not None else None
        return EngineOptions(**kw)

    @property
    def report(self) -> ReportOptions:
        return ReportOptions(**_pick(self, ReportOptions))

    def thresholds(self) -> Thresholds:
        return self.screen.thresholds()



def seed_without_perm(seed) -> str:
    """The refusal of --perm-seed given without --perm (the CLI's and the GUI's, both tests)."""
    return f"--perm-seed {seed} seeds the --perm permutations, but no --perm was given; add --perm N"


def check_permutations(params, owner: str) -> None:
    """``perm``, ``perm_seed`` and ``within`` of ``params`` (a case-control ScanParams or a
    quantitative trait's QTParams: the same flags, the same words) checked and normalised in place."""
    import os

    from gboost.pipeline.validate import check_setting, check_type

    check_type(owner, "perm", params.perm, "int", optional=False)
    if params.perm:  # (0: no permutations, the library's default; the command line's --perm starts at 1)
        check_setting(owner, "perm", params.perm, "int")
    check_type(owner, "perm_seed", params.perm_seed, "int", optional=False)
    check_setting(owner, "perm_seed", params.perm_seed, "int")
    check_type(owner, "within", params.within, "path")
    params.perm, params.perm_seed = int(params.perm), int(params.perm_seed)
    if params.within is not None:
        params.within = os.fspath(params.within)
        if not params.perm:
            raise ValueError(f"--within {params.within} gives the clusters to permute labels within, but no --perm "
                             "was given; add --perm N")
    if params.perm and params.part:
        raise ValueError("--perm takes the maximum over every pair of the study, which a --part does not see; "
                         "run --perm without --part")


def perm_settings(params) -> dict:
    """What a checkpoint pins of ``--perm`` (N, seed, and the --within file's bytes: the strata),
    so that a --resume continues the same permutations."""
    return {"n": params.perm, "seed": params.perm_seed, "within_sha256": within_sha256(params.within)}

def within_sha256(path) -> str | None:
    """SHA-256 of a --within file's bytes (the checkpoint pins the strata by it), None without one."""
    if path is None:
        return None
    import hashlib
    from pathlib import Path

    from gboost.errors import InputError

    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise InputError(path, f"cannot read the --within file: {exc.strerror or exc}") from None


def _pick(params: ScanParams, view) -> dict:
    return {f.name: getattr(params, f.name) for f in fields(view)}


def results_key(flat: dict) -> dict:
    """Of a flat settings dict (part.json's), the entries that change results, --part aside: two
    parts merge only when these agree (gboost/pipeline/parts.py)."""
    names = [f.name for f in fields(ScreenParams) if f.name != "part"] + [f.name for f in fields(ReportOptions)]
    return {k: flat.get(k) for k in names}
