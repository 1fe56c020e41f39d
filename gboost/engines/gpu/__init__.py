"""GPU engine: the GBOOST kernel through CuPy, tiles of the pair triangle screened on the device.

A tile is screened by one launch per counting mode present in it: tables counted, PLINK's DF,
KSA from a ``c ln c`` table, survivors appended to a bounded buffer, and per-SNP partial
summaries over the non-surviving pairs reduced on the device. Only the survivors (with their
tables) and the per-SNP partials come back to the host. A survivor buffer that overflows is
grown and the tile screened again, so no pair is ever dropped.

Two ways of counting, with the same epilogue and the same results:

* ``"mma"``: binary tensor cores (``kernels/boost_mma.cu``): the planes of a block of row SNPs
  times those of a block of column SNPs, per class, as binary Gram tiles of
  ``mma.sync.m16n8k256 .b1 .and.popc``; compute capability 8.0 or newer;
* ``"popc"``: AND + popcount on the CUDA cores (``kernels/boost_screen.cu``), GBOOST's kernel;
  the fallback and the reference.

``GpuEngine(counting="auto")`` (the default; the environment variable ``GBOOST_GPU_COUNTING``
overrides it) takes the tensor cores where the device has them.

Memory. The study's bit planes stay resident on each GPU when they fit in half of its memory
budget (``memory_limit_bytes``, else its free memory); otherwise they stay on the host, page-locked
in pieces by a thread beside the screen (``pinning.py``), and each tile's row block and column block are uploaded as it needs them (an LRU cache of
blocks within the budget), so device memory is bounded by the tile size, not by p. A device
out-of-memory error during a tile halves the tile edge (the tile is screened as sub-tiles and
their results merged, which gives the same result) and the survivor buffer, frees the pool and
goes on. Any other CUDA error in a tile stops the scan with a RuntimeError naming the device and
the tile; the pipeline has checkpointed every finished tile, so the scan can be resumed.

CuPy is imported only when an engine is prepared or described: ``import gboost.engines.gpu``
works on a machine without it.

The package: ``engine.py`` (:class:`GpuEngine`: devices, the shared tile queue, statistics),
``device.py`` (one GPU's runner: buffers, memory policy, back-off; :class:`DeviceStats`),
``upload.py`` (resident planes uploaded beside the first tiles), ``pinning.py`` (streamed planes
page-locked in pieces beside the first tiles), ``counting.py`` (the two counting
strategies: kernels, plane layout, launch), ``config.py`` (the kernels' production knobs),
``compile.py`` (CUDA source and NVRTC modules) and ``cuda.py`` (CuPy, imported lazily).

Tiles run one of two ways:

* :meth:`GpuEngine.run_tile` screens one tile on the first GPU (the :class:`Engine` interface);
* :meth:`GpuEngine.run_tiles` screens many from a shared queue, one host thread per GPU, each
  keeping two tiles in flight (the next tile's kernels run while the last one's results are
  copied back), and yields the results in completion order.
"""
from __future__ import annotations

from gboost.engines.gpu.compile import kernel_source, kernels, mma_kernel_source
from gboost.engines.gpu.config import KernelConfig, MmaConfig
from gboost.engines.gpu.device import DeviceStats, merge_tile_results
from gboost.engines.gpu.engine import COUNTING_ENV, COUNTINGS, DEFAULT_SURVIVOR_CAPACITY, LAUNCH_TARGET_S, GpuEngine

__all__ = ["COUNTINGS", "COUNTING_ENV", "DEFAULT_SURVIVOR_CAPACITY", "DeviceStats", "GpuEngine", "KernelConfig",
           "LAUNCH_TARGET_S", "MmaConfig", "kernel_source", "kernels", "merge_tile_results", "mma_kernel_source"]
