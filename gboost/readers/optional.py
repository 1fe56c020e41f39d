"""Optional packages behind the readers of other formats (PLINK 2, VCF/BCF, BGEN).

pgenlib (.pgen; LGPL-3), cyvcf2 (VCF/BCF; MIT) and cbgen (BGEN; MIT) are not needed for PLINK 1
filesets, so gboost does not depend on them: ``pip install 'gboost[formats]'`` adds all three.
A user who points gboost at such a file without the package gets one line saying what to
install (exit code 2 in the CLI), never an ImportError traceback.
"""
from __future__ import annotations

import importlib

from gboost.errors import InputError

# module -> (pip package, what it reads)
PACKAGES = {
    "pgenlib": ("pgenlib", "PLINK 2 .pgen filesets (--pfile)"),
    "cyvcf2": ("cyvcf2", "VCF/BCF files (--vcf)"),
    "cbgen": ("cbgen", "BGEN files (--bgen)"),
}


def require(module: str, path: str | None = None):
    """Import an optional reader package, or raise :class:`InputError` naming the pip command."""
    try:
        return importlib.import_module(module)
    except ImportError:
        package, what = PACKAGES[module]
        raise InputError(path, f"reading {what} needs the optional package {package}: "
                               f"pip install 'gboost[formats]' (or pip install {package})") from None
