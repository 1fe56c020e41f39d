#!/usr/bin/env bash
# Eighteenth session: the correction loop with four samples an iteration and the next places loaded ahead;
# the new GPU tests and the upload test again, then the screen's kernel time (corrected, direct, minb3).
. scripts/device/env.sh
timeout 200 python3 -m pytest -q -x tests/test_gpu_missing_lists.py "tests/test_gpu_engine.py::test_tiles_queued_while_the_planes_upload_equal_cpu_engine" 2>&1 | tail -4 | tee $OUT/tests_lists.txt
timeout 240 python3 bench/bench_popc_missing.py --p 200000 --missing 0,0.01 --json $OUT/popc_missing.json 2>&1 | tee $OUT/popc_missing.txt
