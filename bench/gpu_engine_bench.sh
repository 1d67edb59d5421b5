#!/usr/bin/env bash
# Issue 6 engine benchmark on a GPU machine (the lent H200: run from the repo root there
# with .devcarry carried, see scripts/device_build.sh). One call: builds, runs the CUDA
# kernel, attention and fixture tests (make-model runs beside them), then
# switchyard-engine-bench on llama3-8b with variants compared in one process (--arms)
# and the per-op profile of the prefill and decode steps; results land in $OUT (at most
# 8 files come back from the device tool). Each step has a time limit and the later
# ones are skipped when the call has run BUDGET seconds.
#
#   bash bench/gpu_engine_bench.sh             # 8K prefill, 1K decode at batch 1 and 64, 32K decode
#   LIMITS=1 bash bench/gpu_engine_bench.sh    # also the copy and bf16 GEMM limits (torch)
#   ARMS_8K=none ARMS_1K=default,nopdl ARMS_32K=default,nopdl bash bench/gpu_engine_bench.sh
#   T8K=90 T1K=60 T32K=60 ...               # longer limits for the steps (more arms)
#   R8K=3 B1K=1 ...                         # 8K repeats (2); 1K batch sizes (1,64)
#   ARMS_1K=none ...                        # skip a step (ARMS_8K, ARMS_1K, ARMS_32K)
set -uo pipefail
OUT=${OUT:-/tmp/out}; B=build-gpu/bin; M=/tmp/m; mkdir -p $M $OUT
BUDGET=${BUDGET:-210}
t0=$(date +%s)
since() { echo $(( $(date +%s) - t0 )); }
bash scripts/device_build.sh switchyard-worker switchyard-engine-bench sy_cuda_kernel_tests sy_cuda_attention_tests \
  sy_cuda_fixture_tests > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(since) s"; nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader
source build-gpu/env.sh
tar -xJf .devcarry/llama3-tiny.tar.xz -C $M llama3-tiny-bf16.gguf
# The model is written while the tests run (CPU and disk against GPU and CPU).
( t=$(date +%s); $B/switchyard-worker make-model --arch llama --preset llama3-8b --tokenizer-from $M/llama3-tiny-bf16.gguf \
    --out $M/l8.gguf > /dev/null 2>&1; echo "make-model rc $? in $(( $(date +%s) - t )) s" ) > $M/make-model.txt &
mm=$!
# The wgmma prefill tests run last, on their own: a hang there costs only their step.
{ timeout 60 $B/sy_cuda_kernel_tests --gtest_brief=1; echo "kernel tests rc $?"
  timeout 60 $B/sy_cuda_attention_tests --gtest_brief=1 --gtest_filter=-*Wgmma*; echo "attention tests rc $?"
  timeout 150 $B/sy_cuda_fixture_tests --gtest_brief=1; echo "fixture tests rc $?"
  timeout 60 $B/sy_cuda_attention_tests --gtest_brief=1 --gtest_filter=*Wgmma*; echo "wgmma tests rc $?"; } > $OUT/tests.log 2>&1
grep -E "PASSED|FAILED|rc |max \||greedy tokens" $OUT/tests.log; echo "tests $(since) s"
wait $mm; cat $M/make-model.txt; echo "model $(since) s"
if [ "${LIMITS:-0}" = 1 ]; then
  python3 bench/gpu_limits.py 2>&1
fi
EB="$B/switchyard-engine-bench --model $M/l8.gguf --device cuda --json"
# 8K prefill: default (cuBLASLt's heuristic, 4-warp attention CTAs), 8-warp attention
# CTAs (pw8); the prefill step's per-op profile.
if [ "${ARMS_8K:=default,pw8}" != none ]; then
  timeout ${T8K:-60} $EB --prompt-tokens 8192 --decode-tokens 2 --batch 1 --repeat ${R8K:-2} --arms $ARMS_8K \
    --profile-prefill > $OUT/l8-8k.json 2> $OUT/l8-8k.log
  echo "8k rc $? at $(since) s"; grep -E "repeat|^profile" $OUT/l8-8k.log
fi
# Decode at 1K: default against programmatic launch off; per-op profile.
if [ "${ARMS_1K:=default,nopdl}" != none ] && [ $(since) -lt $(( BUDGET - 20 )) ]; then
  timeout ${T1K:-40} $EB --prompt-tokens 1024 --decode-tokens 64 --batch ${B1K:-1,64} --repeat 3 --arms $ARMS_1K --profile \
    > $OUT/l8-1k.json 2> $OUT/l8-1k.log
  echo "1k rc $? at $(since) s"; grep -E "repeat|^profile" $OUT/l8-1k.log
fi
if [ "${ARMS_32K:=default,nopdl}" != none ] && [ $(since) -lt $(( BUDGET - 40 )) ]; then
  timeout ${T32K:-40} $EB --prompt-tokens 32768 --decode-tokens 32 --batch 1 --repeat 2 --arms $ARMS_32K \
    > $OUT/l8-32k.json 2> $OUT/l8-32k.log
  echo "32k rc $? at $(since) s"; grep -E "repeat" $OUT/l8-32k.log
fi
echo "total $(since) s"
