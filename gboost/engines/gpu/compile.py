"""The kernels' CUDA source (package data, gboost/engines/kernels/) and its compilation: one CuPy
RawModule (NVRTC) per device and configuration, compiled on first use only."""
from __future__ import annotations

import threading
from importlib import resources

from gboost.engines.gpu.config import KernelConfig, MmaConfig
from gboost.engines.gpu.cuda import cupy
from gboost.engines.gpu.kernel_args import arg_macros, layout_asserts

KERNEL_FILE = "boost_screen.cu"
COMMON_FILE = "boost_common.cu"
MMA_KERNEL_FILE = "boost_mma.cu"
# The four counting modes' screen kernels (2 * rows-have-missing + columns-have-missing), per path.
MODE_KERNELS = ("gb_screen_22", "gb_screen_23", "gb_screen_32", "gb_screen_33")
# The CUDA-core path's fifth mode, 4: blocks with missing calls counted by correction
# (gboost/engines/gpu/missing_lists.py), and the two kernels that build its inputs.
LIST_MODE_KERNEL = "gb_screen_2c"
LIST_BUILD_KERNELS = ("gb_transpose_planes", "gb_miss_lists")
MMA_MODE_KERNELS = ("gm_screen_22", "gm_screen_23", "gm_screen_32", "gm_screen_33")
# The modes with missing calls at the rows (<3,2>, <3,3>) counting from the planes' fragment-native copy
# (boost_mma.cu, gm_count_class; MmaCounting.frag), by mode index.
MMA_FAST_KERNELS = {2: "gm_screen_32f", 3: "gm_screen_33f"}


def read_kernel(name: str) -> str:
    return (resources.files("gboost.engines") / "kernels" / name).read_text(encoding="utf-8")


def kernel_source() -> str:
    """The CUDA source of the CUDA-core screen kernels (package data), then the layout checks of their
    argument struct (kernel_args.py)."""
    return read_kernel(COMMON_FILE) + "\n" + read_kernel(KERNEL_FILE) + "\n" + layout_asserts("gb_params")


def mma_kernel_source() -> str:
    """The CUDA source of the tensor-core screen kernels (package data), after their argument list
    (kernel_args.py)."""
    return arg_macros("gm_screen", "GM_SCREEN") + read_kernel(COMMON_FILE) + "\n" + read_kernel(MMA_KERNEL_FILE)


def compile_module(device_id: int, code: str, options: tuple[str, ...], names: tuple[str, ...]) -> dict:
    """Compile ``code`` with ``options`` (NVRTC) for ``device_id``; its functions ``names`` by name."""
    cp = cupy()
    with cp.cuda.Device(device_id):
        module = cp.RawModule(code=code, options=tuple(options))
        return {name: module.get_function(name) for name in names}


_KERNELS: dict[tuple[int, object], dict] = {}
_KERNELS_LOCK = threading.Lock()


def kernels(device_id: int, config: KernelConfig | MmaConfig) -> dict:
    """The compiled kernels for ``device_id`` and ``config``, compiled (NVRTC) on first use only:
    the mode kernels, ``gb_reduce_partials``, ``gb_decode_bed`` and, for the CUDA cores, the lists'
    build kernels, for the tensor cores ``gm_layout``."""
    key = (device_id, config)
    with _KERNELS_LOCK:
        got = _KERNELS.get(key)
        if got is None:
            if isinstance(config, MmaConfig):
                code = mma_kernel_source()
                names = (*MMA_MODE_KERNELS, *MMA_FAST_KERNELS.values(), "gb_reduce_partials", "gm_layout",
                         "gb_decode_bed")
            else:
                code = kernel_source()
                names = (*MODE_KERNELS, LIST_MODE_KERNEL, *LIST_BUILD_KERNELS, "gb_reduce_partials", "gb_decode_bed")
            got = compile_module(device_id, code, config.options(), names)
            _KERNELS[key] = got
    return got
