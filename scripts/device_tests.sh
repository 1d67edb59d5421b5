#!/usr/bin/env bash
# On the lent GPU machine (with .devcarry carried): builds the CUDA test binaries and runs
# the kernel, attention and fixture tests (the context-parallel ones apart), each with a
# time limit. Log: $OUT/tests.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; B=build-gpu/bin
mkdir -p "$OUT"
t0=$SECONDS
bash scripts/device_build.sh switchyard-worker sy_cuda_kernel_tests sy_cuda_attention_tests sy_cuda_fixture_tests > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "build $((SECONDS - t0)) s"
source build-gpu/env.sh
rc=0
{ timeout 150 $B/sy_cuda_kernel_tests --gtest_brief=1 || rc=1
  timeout 150 $B/sy_cuda_attention_tests --gtest_brief=1 || rc=1
  timeout 150 $B/sy_cuda_fixture_tests --gtest_brief=1 --gtest_filter=-*ContextParallel* || rc=1
  timeout 300 $B/sy_cuda_fixture_tests --gtest_brief=1 --gtest_filter=*ContextParallel* || rc=1; } > "$OUT/tests.log" 2>&1
grep -E "PASSED|FAILED" "$OUT/tests.log"
exit $rc
