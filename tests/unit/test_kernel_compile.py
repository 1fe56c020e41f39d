"""The kernels compile, on a host with nvcc and no GPU: every configuration the engine can resolve
(MmaConfig.builds, the CUDA cores' KernelConfig) for sm_90, and the tensor cores' for sm_80 too (their
mma.sync path), from the same source and options NVRTC gets on the device (compile.py, config.py);
and the configurations MmaCounting.build asks for are among those (so this covers what can run).
Skipped where nvcc is not installed."""
from __future__ import annotations

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


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
@pytest.mark.parametrize("config", MMA_BUILDS, ids=lambda c: f"tr{c.warp_rows // 16}-f32{int(c.f32_screen)}-"
                         f"sfu{c.sfu_xlogx}-st{c.stages}")
def test_every_tensor_core_build_compiles(tmp_path, config, arch):
    log = _nvcc(tmp_path, mma_kernel_source(), config.options(), arch)
    assert "error" not in log.lower()


@pytest.mark.slow
@needs_nvcc
def test_the_cuda_core_build_compiles(tmp_path):
    log = _nvcc(tmp_path, kernel_source(), KernelConfig().options(), "sm_90")
    assert "error" not in log.lower()
