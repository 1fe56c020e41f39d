"""The kernels compile, on a host with nvcc and no GPU: every configuration the engine can resolve
(MmaConfig.builds, the CUDA cores' KernelConfig) for sm_90, and the tensor cores' for sm_80 too (their
mma.sync path), from the same source and options NVRTC gets on the device (compile.py, config.py);
and the configurations MmaCounting.build asks for are among those (so this covers what can run).
Skipped where nvcc is not installed."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace

import pytest

from gboost.engines.gpu import counting as ways
from gboost.engines.gpu.compile import kernel_source, mma_kernel_source
from gboost.engines.gpu.config import KernelConfig, MmaConfig

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")

MMA_BUILDS = MmaConfig().builds()


def _nvcc(tmp_path, source: str, options, arch: str) -> str:
    src = tmp_path / "k.cu"
    src.write_text(source)
    run = subprocess.run([NVCC, f"-arch={arch}", "-cubin", "-o", str(tmp_path / "k.cubin"), *options, str(src)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-4000:]
    return run.stderr


def test_the_engine_asks_only_for_configurations_that_builds_lists(monkeypatch):
    asked = []

    class Fn:
        def __init__(self, static):
            self.shared_size_bytes, self.max_dynamic_shared_size_bytes, self.num_regs = static, 0, 128

    def fake_kernels(device_id, config):
        asked.append(config)
        names = (*ways.MMA_MODE_KERNELS, *ways.MMA_FAST_KERNELS.values())
        return {name: Fn(36400 if config.f32_screen and name.endswith("22") else 25632) for name in names}

    monkeypatch.setattr(ways, "kernels", fake_kernels)
    for base in (MmaConfig(), MmaConfig(f32_screen=False)):
        for n_ctrl, n_case in ((50, 50), (2500, 2500), (10_000, 10_000), (70_000, 10)):
            cfg = base.for_classes(n_ctrl, n_case)
            for optin in (227 << 10, 99 << 10, 48 << 10):
                ways.MmaCounting(cfg, 80, 40).build(0, dict(sharedMemPerBlockOptin=optin, multiProcessorCount=132),
                                                    n_ctrl + n_case)
        assert set(asked) <= set(base.builds()), set(asked) - set(base.builds())
        asked.clear()
    assert len(set(MMA_BUILDS)) == 8 and replace(MmaConfig(), f32_screen=False, stages=0) in MMA_BUILDS


def _build_id(c: MmaConfig) -> str:
    return f"tr{c.warp_rows // 16}-f32{int(c.f32_screen)}-sfu{c.sfu_xlogx}-st{c.stages}"


# What ptxas (nvcc 13.0, sm_90) allocates for the screen kernels of each build: (bytes of spill stores,
# bytes of spill loads) of gm_screen_22, _23, _32, _33, _32f, _33f, every one at 128 registers. The
# <3,3> kernel is bound by instructions issued, so a source change that moves these is a performance
# change to measure on the device; a change meant to leave the code alone (a split into functions, a
# rename) must leave them as they are. Another nvcc allocates otherwise: the check runs on 13.0 only.
MMA_RESOURCES_NVCC = "13.0"
MMA_SCREEN_KERNELS = ("gm_screen_22", "gm_screen_23", "gm_screen_32", "gm_screen_33", "gm_screen_32f", "gm_screen_33f")
MMA_RESOURCES = {
    "tr2-f321-sfu1-st8": ((80, 100), (0, 0), (0, 0), (48, 64), (16, 24), (48, 64)),
    "tr2-f321-sfu2-st8": ((80, 100), (0, 0), (0, 0), (48, 64), (16, 24), (48, 64)),
    "tr2-f320-sfu1-st8": ((228, 124), (164, 200), (192, 264), (536, 608), (192, 264), (536, 608)),
    "tr2-f320-sfu1-st0": ((312, 380), (164, 200), (192, 264), (536, 608), (192, 264), (536, 608)),
    "tr1-f321-sfu1-st8": ((64, 80), (36, 24), (56, 36), (20, 16), (60, 44), (76, 52)),
    "tr1-f321-sfu2-st8": ((88, 96), (36, 24), (56, 36), (20, 16), (60, 44), (76, 52)),
    "tr1-f320-sfu1-st8": ((120, 132), (48, 128), (204, 220), (816, 432), (204, 220), (816, 432)),
    "tr1-f320-sfu1-st0": ((116, 172), (48, 128), (204, 220), (816, 432), (204, 220), (816, 432)),
}


def _resources(log: str) -> dict[str, tuple[int, int, int]]:
    """(spill stores, spill loads, registers) of each kernel in ptxas's -v report."""
    out, name = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            name = m.group(1)
            continue
        for pat in (r"(\d+) bytes spill stores", r"(\d+) bytes spill loads", r"Used (\d+) registers"):
            m = re.search(pat, line)
            if m and name:
                out.setdefault(name, []).append(int(m.group(1)))
    return {k: tuple(v) for k, v in out.items()}


def _nvcc_release() -> str:
    m = re.search(r"release (\d+\.\d+)", subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout)
    return m.group(1) if m else ""


def test_the_recorded_resources_cover_every_build():
    assert set(MMA_RESOURCES) == {_build_id(c) for c in MMA_BUILDS}


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("config", MMA_BUILDS, ids=_build_id)
def test_every_tensor_core_build_compiles(tmp_path, config, arch):
    """Each build compiles; on sm_90 with nvcc 13.0 its screen kernels keep the recorded registers and spills."""
    log = _nvcc(tmp_path, mma_kernel_source(), (*config.options(), "-Xptxas", "-v"), arch)
    assert "error" not in log.lower()
    if arch != "sm_90" or _nvcc_release() != MMA_RESOURCES_NVCC:
        return
    got = _resources(log)
    want = {n: (*spill, 128) for n, spill in zip(MMA_SCREEN_KERNELS, MMA_RESOURCES[_build_id(config)])}
    assert {n: got[n] for n in MMA_SCREEN_KERNELS} == want


@pytest.mark.slow
@needs_nvcc
def test_the_cuda_core_build_compiles(tmp_path):
    log = _nvcc(tmp_path, kernel_source(), KernelConfig().options(), "sm_90")
    assert "error" not in log.lower()


# -- the kernels' arguments (kernel_args.py): one description, the struct's layout checked by the compiler

def test_the_argument_struct_is_the_argument_list_it_replaced():
    """gb_params lays its fields out where the CUDA cores' separate arguments were (C's alignment), and
    the tensor cores' generated list is the same fields in the same order with bar and barc after."""
    from gboost.engines.gpu import kernel_args as ka

    offs = {m: o for m, _, o in ka.leaves(ka.STRUCTS["gb_params"])}
    assert (offs["t.planes_r"], offs["t.stride_r"], offs["t.off_r"], offs["t.planes_c"]) == (0, 8, 12, 16)
    assert (offs["t.n_tab"], offs["t.surv_n"], offs["t.surv_cap"], offs["t.surv_ij"]) == (96, 104, 112, 120)
    assert (offs["t.part.rp_sig"], offs["t.part.cp_partner"], offs["one"], offs["gt"], offs["S"]) == (144, 200, 208,
                                                                                                     216, 224)
    assert ka.DTYPES["gb_params"].itemsize == 256
    macros = ka.arg_macros("gm_screen", "GM_SCREEN")
    args = macros.splitlines()[0].split(" ", 2)[2].split(", ")
    assert args[:3] == ["const gb_u64* __restrict__ planes_r", "int stride_r", "int off_r"]
    assert args[-3:] == ["int* __restrict__ cp_partner", "float* __restrict__ bar", "float* __restrict__ barc"]
    assert len(args) == 34


def test_pack_fills_every_field_by_name_and_refuses_a_missing_or_unknown_one():
    import numpy as np

    from gboost.engines.gpu import kernel_args as ka

    class Arr:  # a device array as CuPy's: its address at .data.ptr
        def __init__(self, ptr):
            self.data = type("P", (), {"ptr": ptr})()

    names = [m for m, _, _ in ka.leaves(ka.TILE)]
    tile = {m: i + 1 for i, m in enumerate(names) if not m.startswith("part.")}
    tile["planes_r"] = Arr(0xABCDEF012345)
    tile["part"] = {m.split(".")[1]: 1000 + i for i, m in enumerate(names) if m.startswith("part.")}
    lists = dict(gt=None, S=1 << 40, G=7, lst=Arr(64), L1=9)
    rec = ka.pack("gb_params", dict(t=tile, one=1, **lists))
    assert isinstance(rec, np.void) and rec.dtype == ka.DTYPES["gb_params"]
    raw = rec.tobytes()
    at = {m: o for m, _, o in ka.leaves(ka.STRUCTS["gb_params"])}
    word = lambda m, n: int.from_bytes(raw[at[m]:at[m] + n], "little")  # noqa: E731
    assert word("t.planes_r", 8) == 0xABCDEF012345 and word("t.stride_r", 4) == names.index("stride_r") + 1
    assert word("t.part.cp_best", 8) == 1000 + names.index("part.cp_best")
    assert (word("gt", 8), word("S", 8), word("G", 4), word("lst", 8), word("L1", 4)) == (0, 1 << 40, 7, 64, 9)
    with pytest.raises(ValueError, match="missing.*L1"):
        ka.pack("gb_params", dict(t=tile, one=1, gt=None, S=0, G=0, lst=None))
    with pytest.raises(ValueError, match="unknown.*bogus"):
        ka.pack("gb_params", dict(t=tile, one=1, bogus=0, **lists))
    flat = ka.flat("gm_screen", dict(t=tile, bar="BAR", barc="BARC"))
    assert flat[0] is tile["planes_r"] and flat[-2:] == ("BAR", "BARC") and len(flat) == 34
    assert flat[1].dtype == np.int32 and flat[1] == tile["stride_r"]


@pytest.mark.slow
@needs_nvcc
def test_a_description_unlike_the_struct_does_not_compile(tmp_path, monkeypatch):
    """The static_asserts compile.py appends hold for the description as it is, and fail when it
    disagrees with the .cu's struct (two fields swapped)."""
    from gboost.engines.gpu import kernel_args as ka

    _nvcc(tmp_path, kernel_source(), KernelConfig().options(), "sm_90")
    fields = list(ka.STRUCTS["gb_params"])
    fields[2], fields[3] = fields[3], fields[2]  # gt and S
    monkeypatch.setitem(ka.STRUCTS, "gb_params", tuple(fields))
    monkeypatch.setitem(ka.DTYPES, "gb_params", ka.dtype_of(fields))
    src = tmp_path / "bad.cu"
    src.write_text(kernel_source())
    run = subprocess.run([NVCC, "-arch=sm_90", "-ptx", "-o", str(tmp_path / "bad.ptx"), *KernelConfig().options(),
                          str(src)], capture_output=True, text=True)
    assert run.returncode != 0 and "gb_params.S: offset" in run.stderr, run.stderr[-2000:]


def test_the_runner_gives_every_tile_field_and_each_counting_its_own():
    """DeviceRunner._launch's fields (no device: a stand-in runner and kernels) are the description's, so
    each counting's launch packs them: the CUDA cores' struct (mode 4 with the lists' fields), the tensor
    cores' separate arguments with the bars."""
    from types import SimpleNamespace

    import numpy as np

    from gboost.engines.base import Tile
    from gboost.engines.gpu import kernel_args as ka
    from gboost.engines.gpu.device import DeviceRunner

    got = []

    class Kernel:
        def __call__(self, grid, block, args, shared_mem=0):
            got.append(args)

    for way in (ways.PopcCounting(KernelConfig(), 80, 40), ways.MmaCounting(MmaConfig(), 80, 40)):
        build = ways.Build({name: Kernel() for name in (*way.mode_kernels, *ways.MMA_FAST_KERNELS.values())}, 0,
                           False, {name: 0 for name in (*way.mode_kernels, *ways.MMA_FAST_KERNELS.values())},
                           {name: 4 for name in (*way.mode_kernels, *ways.MMA_FAST_KERNELS.values())})
        lists = SimpleNamespace(args=dict(gt=None, S=64, G=1, lst=None, L1=3))
        runner = SimpleNamespace(way=way, build=build, counts=1, miss=2, xlx=3, thr=4, n_tab=5, bar=np.zeros(8, "f4"),
                                 props=dict(multiProcessorCount=1), _uploading=None, lists=lists)
        slot = SimpleNamespace(surv_n=6, cap=7, surv_ij=8, surv_ksa=9, surv_tab=10,
                               part=dict(r=(11, 12, 13, 14), c=(15, 16, 17, 18)))
        modes = (0, 4) if way.name == "popc" else (0, 3)
        for mode in modes:
            DeviceRunner._launch(runner, mode, True, Tile(0, 0, 10, 0, 10), slot, (100, 10, 0), (200, 10, 0), 1, 1)
        for args in got:
            assert len(args) == (1 if way.name == "popc" else 34)
        if way.name == "popc":
            first, corr = got[0][0], got[1][0]
            assert first["t"]["planes_c"] == 200 and first["t"]["part"]["cp_partner"] == 18 and first["one"] == 1
            assert (first["S"], corr["S"], corr["L1"]) == (0, 64, 3)
        else:
            assert got[0][0] == 100 and got[0][-3] == 18 and got[0][-2].size == 4
        got.clear()
