"""Builds of the GPU kernels for measurement only. They live in bench/, not in the package, because
some give wrong results: the package's MmaConfig can express only builds that give the right ones.

* :class:`BenchMmaConfig`: an MmaConfig (usable wherever one is, e.g. ``GpuEngine(mma_config=...)``)
  with two more knobs: ``count_only`` (``GM_COUNT_ONLY=1``: the tables counted and filled, no KSA,
  survivors or summary values: wrong results, for the counting's share of the kernel time) and
  ``defines`` (extra ``-D NAME=VALUE``, for the kernel's switches: ``GM_PROBE=1`` or ``2``, timing
  probes of the missing-call pre-screen with wrong results; ``GM_XBAR=0``).
* :class:`BenchKernelConfig`: a KernelConfig with extra ``defines`` (the CUDA-core kernels' switches).
* :func:`popc_ceiling_kernel`, :func:`mma_ceiling_kernel`: the device's ceilings (bench/kernels/),
  compiled after the production source with the default options.

Imported by bench_gpu.py and bench_popc_missing.py; run alone it prints this text.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gboost.engines.gpu import KernelConfig, MmaConfig, kernel_source, mma_kernel_source  # noqa: E402
from gboost.engines.gpu.compile import compile_module  # noqa: E402

_KERNELS = Path(__file__).resolve().parent / "kernels"


@dataclass(frozen=True)
class BenchMmaConfig(MmaConfig):
    """MmaConfig plus the bench-only switches (see the module's docstring)."""

    count_only: bool = False
    defines: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # further NVRTC options as given (``-lineinfo`` for Nsight Compute's source view)

    def __post_init__(self):
        super().__post_init__()
        if self.count_only and self.f32_screen:
            # The counting-only build has no pre-screen (boost_mma.cu compiles it under
            # GM_F32 && !GM_COUNT_ONLY), so the engine must plan shared memory as for GM_F32=0.
            object.__setattr__(self, "f32_screen", False)

    def options(self) -> tuple[str, ...]:
        return (*super().options(), f"-DGM_COUNT_ONLY={int(self.count_only)}", *(f"-D{d}" for d in self.defines),
                *self.extra)


@dataclass(frozen=True)
class BenchKernelConfig(KernelConfig):
    """KernelConfig plus ``defines`` (extra ``-D NAME=VALUE``), e.g. ``GB_MINB2C=3``: the blocks per SM
    the mode-4 kernel's registers aim at."""

    defines: tuple[str, ...] = ()

    def options(self) -> tuple[str, ...]:
        return (*super().options(), *(f"-D{d}" for d in self.defines))


def popc_ceiling_kernel(device_id: int = 0):
    """gb_popc_ceiling (bench/kernels/popc_ceiling.cu): AND + 64-bit popcount from registers."""
    code = kernel_source() + "\n" + (_KERNELS / "popc_ceiling.cu").read_text(encoding="utf-8")
    return compile_module(device_id, code, KernelConfig().options(), ("gb_popc_ceiling",))["gb_popc_ceiling"]


def mma_ceiling_kernel(device_id: int = 0):
    """gm_mma_ceiling (bench/kernels/mma_ceiling.cu): m16n8k256 b1 AND+POPC mmas from registers."""
    code = mma_kernel_source() + "\n" + (_KERNELS / "mma_ceiling.cu").read_text(encoding="utf-8")
    return compile_module(device_id, code, MmaConfig().options(), ("gm_mma_ceiling",))["gm_mma_ceiling"]


if __name__ == "__main__":
    print(__doc__)
