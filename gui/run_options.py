"""Every setting of one scan, in one object: what the Run panel reads and the scan job consumes.

The fields mirror ``gboost scan``'s arguments (gboost/cli/__init__.py), grouped by the stage that uses them:
opening the input (``allow_no_sex``, ``pheno``, ``pheno_name``, ``mpheno``), QC (:class:`gboost.data.study.QCOptions`), the scan
(:class:`gboost.pipeline.scan.ScanParams`, whose ``perm``, ``perm_seed`` and ``within`` are ``--perm``'s label
permutations after it) and the covariate refit (``covar``, ``covar_name``, ``covar_number``). Keeping them
together lets a shared pipeline take the whole object in one hand-over.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gboost.readers.sample_ids import IdMode
from gboost.pipeline.params import seed_without_perm
from gboost.pipeline.scan import PERM_WITH_COVARIATES, ScanParams
from gboost.data.study import QCOptions


@dataclass
class RunOptions:
    qc: QCOptions = field(default_factory=QCOptions)
    params: ScanParams = field(default_factory=ScanParams)
    allow_no_sex: bool = False  # --allow-no-sex: keep phenotypes of samples of unknown sex
    pheno: str | None = None  # --pheno FILE
    pheno_name: str | None = None  # --pheno-name NAME: the --pheno file's column of this name
    mpheno: int | None = None  # --mpheno N: its N-th phenotype column
    covar: str | None = None  # --covar FILE
    covar_name: list[str] | None = None  # --covar-name a,b
    covar_number: list[int] | None = None  # --covar-number 1-3,5
    ids: IdMode = field(default_factory=IdMode)  # VCF/BGEN sample IDs: --double-id, --const-fid, --id-delim
    hard_call_threshold: float = 0.1  # BGEN: --hard-call-threshold
    set_file: str | None = None  # --set FILE: the candidate sets
    make_set: str | None = None  # --make-set FILE: the candidate sets as ranges (CHR START END NAME)
    set_mode: str = "set-by-all"  # with a set file: --set-by-all or --set-by-set

    def set_args(self):
        """The candidate-set flags as the CLI's parsed arguments (gboost.cli's _set_mode/_read_sets read them)."""
        from types import SimpleNamespace

        return SimpleNamespace(set_file=self.set_file, make_set=self.make_set, fast_epistasis=None, part=None,
                               set_by_all=self.set_mode == "set-by-all", set_by_set=self.set_mode == "set-by-set")

    def check_sets(self) -> None:
        """The CLI's check of the candidate-set flags (one set file, one mode); ValueError in its words."""
        if self.set_file or self.make_set:
            from gboost.cli import _set_mode

            _set_mode(self.set_args())

    def check_perm(self) -> None:
        """The CLI's checks of --perm against the other flags (gboost/cli/__init__.py, before the
        read), in its words (ValueError): covariates make the labels not exchangeable, and a seed
        needs permutations to seed. (--within without --perm is ScanParams' own refusal.) The panel's
        seed 0 is the CLI's default, a seed not given."""
        p = self.params
        if p.perm and self.covar:
            raise ValueError(f"{self.covar}: {PERM_WITH_COVARIATES}")
        if p.perm_seed and not p.perm:
            raise ValueError(seed_without_perm(p.perm_seed))

    def candidate_study(self, study, log=None):
        """``study`` as the candidate-set scan screens it (--set with its mode), the CLI's library
        calls (gboost.data.candidates); ``study`` itself without --set. InputError on a bad set file."""
        if not (self.set_file or self.make_set):
            return study
        from gboost.cli import _read_sets
        from gboost.data.candidates import rectangle_study

        sets = _read_sets(self.set_args())
        return rectangle_study(study, sets, self.set_mode, log=log)

    def load_key(self) -> tuple:
        """What a loaded study depends on: a study loaded with another key must be reloaded."""
        return (self.qc, self.allow_no_sex, self.pheno, self.pheno_name, self.mpheno, self.ids,
                self.hard_call_threshold)

    def input_kwargs(self) -> dict:
        """Keyword arguments of ``gboost.data.inputs.open_input`` beyond the fileset itself."""
        return {"pheno": self.pheno, "allow_no_sex": self.allow_no_sex, "ids": self.ids,
                "hard_call_threshold": self.hard_call_threshold, "pheno_name": self.pheno_name,
                "mpheno": self.mpheno}

    def covariates(self, study):
        """``gboost.stats.covariates.read_covariates`` of the --covar file for ``study``, as the CLI calls it."""
        from gboost.stats.covariates import read_covariates

        return read_covariates(self.covar, study, self.covar_name, self.covar_number)

    def command(self, path: str | None, out: str) -> str:
        """The ``gboost scan`` command that reproduces this scan of the study at ``path`` into
        ``out``: the input's flags, --out, then :meth:`cli_args` (quoted for a POSIX shell)."""
        import shlex

        args = ["gboost", "scan", *input_args(path), "--out", out, *self.cli_args()]
        return " ".join(shlex.quote(a) for a in args)

    def cli_args(self) -> list[str]:
        """The same settings as ``gboost scan`` arguments (for the log: a run a user can repeat)."""
        out: list[str] = []
        q, p = self.qc, self.params
        for name in ("maf", "geno", "mind", "hwe"):
            if getattr(q, name) is not None:
                out += [f"--{name}", f"{getattr(q, name):g}"]
        for name in ("extract", "exclude", "keep", "remove", "keep_fam", "remove_fam"):
            if getattr(q, name):
                out += [f"--{name.replace('_', '-')}", getattr(q, name)]
        if q.keep_allele_order:
            out.append("--keep-allele-order")
        if q.chrom:
            out += ["--chr", ",".join(q.chrom)]
        if q.allow_extra_chr:
            out.append("--allow-extra-chr")
        if self.allow_no_sex:
            out.append("--allow-no-sex")
        if self.pheno:
            out += ["--pheno", self.pheno]
            if self.pheno_name is not None:
                out += ["--pheno-name", self.pheno_name]
            if self.mpheno is not None:
                out += ["--mpheno", str(self.mpheno)]
        from gui.format_options import id_mode_args

        out += id_mode_args(self.ids)
        if self.hard_call_threshold != 0.1:
            out += ["--hard-call-threshold", f"{self.hard_call_threshold:g}"]
        if self.covar:
            out += ["--covar", self.covar]
            if self.covar_name:
                out += ["--covar-name", ",".join(self.covar_name)]
            if self.covar_number:
                out += ["--covar-number", ",".join(map(str, self.covar_number))]
        for flag, name in (("--set", self.set_file), ("--make-set", self.make_set)):
            if name:
                out += [flag, name]
        if self.set_file or self.make_set:
            out.append(f"--{self.set_mode}")
        out += ["--epi1", f"{p.epi1:g}", "--epi2", f"{p.epi2:g}", "--device", p.device]
        for flag, v in (("--threads", p.threads), ("--tile", p.tile), ("--dask", p.dask),
                        ("--min-distance", p.min_distance_kb), ("--max-r2", p.max_r2)):
            if v is not None:
                out += [flag, f"{v:g}" if isinstance(v, float) else str(v)]
        if p.gpus:
            out += ["--gpus", ",".join(map(str, p.gpus))]
        if p.allelic:
            out.append("--allelic")
        if p.calibration_pairs != ScanParams.calibration_pairs:
            out += ["--calibration-pairs", str(p.calibration_pairs)]
        if p.perm:
            out += ["--perm", str(p.perm)]
        if p.perm_seed:
            out += ["--perm-seed", str(p.perm_seed)]
        if p.within:
            out += ["--within", p.within]
        return out


def input_args(path: str | None) -> list[str]:
    """``gboost scan``'s input flags for the study the window opened from ``path``."""
    if path is None:
        return []
    from gui.loading import input_kwargs

    kw = input_kwargs(path)
    out: list[str] = []
    for key, flag in (("bfile", "--bfile"), ("pfile", "--pfile"), ("vcf", "--vcf"), ("bgen", "--bgen"),
                      ("sample", "--sample"), ("boost_matrix", "--boost-matrix")):
        if kw.get(key):
            out += [flag, kw[key]]
    if "ped" in kw or "map_file" in kw:
        ped = kw.get("ped") or kw["map_file"][:-4] + ".ped"
        out += ["--ped", ped, "--map", kw.get("map_file") or ped[:-4] + ".map"]
    return out
