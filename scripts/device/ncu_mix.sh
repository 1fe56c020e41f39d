#!/usr/bin/env bash
# Device run (lead): instruction mix by pipe of one gm_screen_33 launch (20k x 5k, 1 % missing) for
# the default build, the float64 build, the count-only build and the float32-only probe.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD:$PWD/tests:/tmp/site || exit
mkdir -p $OUT
M=smsp__inst_executed.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_fmaheavy.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_fp64.sum,smsp__inst_executed_pipe_tensor.sum,smsp__inst_executed_pipe_uniform.sum,smsp__inst_executed_pipe_cbu.sum,smsp__inst_executed_pipe_adu.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,smsp__sass_inst_executed_op_global_ld.sum,gpu__time_duration.sum,smsp__thread_inst_executed_per_inst_executed.ratio
for v in "" "--f64" "--count-only" "--define GM_PROBE=1"; do
  python3 bench/ncu_target.py $v >/dev/null 2>&1
  echo "== build: ${v:-default}"
  ncu --clock-control none -k regex:gm_screen_33 -c 1 --metrics $M python3 bench/ncu_target.py $v 2>&1 | grep -E "^\s+(smsp|gpu)__" | awk '{print $1, $(NF)}'
done
