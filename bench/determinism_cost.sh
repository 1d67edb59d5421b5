#!/usr/bin/env bash
# What batch-invariant numerics cost (issue 13; BackendOptions::deterministic, on by
# default), on the lent GPU machine (run from the repo root there with .devcarry carried,
# see scripts/device_build.sh). One call:
#   1. bench/gpu_engine_bench.sh with the arms fast and det in one process: the CUDA
#      tests (the determinism ones among them), then llama3-8b bf16 8K prefill and 1K
#      decode at batch 1 and 64 (DET_ARMS overrides the arms, e.g. fast,det,det+detrows4096);
#   2. on the same machine's CPUs, once the GPU work is over: switchyard-engine-bench on
#      the synthetic qwen3-0.6b (the README's demo model) with --device cpu, arms fast and
#      det, and switchyard-kernels-bench's GEMM shapes through OpenBLAS and the
#      batch-invariant kernel.
# Results land in $OUT. PART=gpu or PART=cpu runs one half (each fits one device call).
set -uo pipefail
OUT=${OUT:-/tmp/out}; B=build-gpu/bin; M=/tmp/m; mkdir -p $M $OUT
arms=${DET_ARMS:-fast,det}
if [ "${PART:-all}" != cpu ]; then
  ARMS_8K=$arms ARMS_1K=$arms ARMS_32K=${ARMS_32K:-none} BUDGET=${BUDGET:-420} T8K=${T8K:-120} T1K=${T1K:-120} \
    bash bench/gpu_engine_bench.sh
fi
[ "${PART:-all}" != gpu ] || exit 0
bash scripts/device_build.sh switchyard-kernels-bench > $OUT/build-cpu.log 2>&1 || { tail -20 $OUT/build-cpu.log; exit 1; }
source build-gpu/env.sh
tar -xJf .devcarry/qwen3-tiny.tar.xz -C $M qwen3-tiny-bf16.gguf
$B/switchyard-worker make-model --arch qwen3 --preset qwen3-0.6b --tokenizer-from $M/qwen3-tiny-bf16.gguf \
  --out $M/q06.gguf > /dev/null 2>&1 || { echo "make-model qwen3-0.6b failed"; exit 1; }
echo "cpu: $(nproc) threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
timeout ${TCPU:-200} $B/switchyard-engine-bench --model $M/q06.gguf --device cpu --prompt-tokens 256 --decode-tokens 32 \
  --batch 1,16 --repeat 3 --arms fast,det > $OUT/cpu-q06.txt 2> $OUT/cpu-q06.log
echo "cpu engine bench rc $?"; cat $OUT/cpu-q06.txt
timeout ${TKB:-120} $B/switchyard-kernels-bench --benchmark_filter=Matmul --benchmark_min_time=0.3s > $OUT/cpu-gemm.txt 2>&1
echo "cpu kernels bench rc $?"; grep -E "Matmul" $OUT/cpu-gemm.txt
