#!/usr/bin/env bash
# Eighteenth session: the whole GPU suite on the code of mode 4 with its break-even rule (a block counts by
# correction where its SNPs' missing-call rates average at most 3.5 %), after gboost warm.
. scripts/device/env.sh
( time python3 -m gboost.cli warm ) 2>&1 | tail -4
timeout 500 python3 -m pytest -q -m gpu tests 2>&1 | tail -15 | tee $OUT/gpu_suite.txt
