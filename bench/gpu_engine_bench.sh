#!/usr/bin/env bash
# Issue 6 engine benchmark on a GPU machine (the lent H200: run from the repo root there
# with .devcarry carried, see scripts/device_build.sh). One call: builds, runs the CUDA
# kernel and fixture tests, measures the copy and bf16 GEMM limits with torch, makes
# llama3-8b with make-model and runs switchyard-engine-bench with its arms compared in
# one process (see ARMS below) and the per-op profile of a decode step; results land in
# $OUT (at most 8 files come back from the device tool).
#
#   bash bench/gpu_engine_bench.sh                 # 1K context at batch 1, 8, 64, then 32K at batch 1
#   QWEN=1 bash bench/gpu_engine_bench.sh          # also qwen3-8b at 1K (default arms only)
set -uo pipefail
OUT=${OUT:-/tmp/out}; B=build-gpu/bin; M=/tmp/m; mkdir -p $M $OUT
t0=$(date +%s)
since() { echo $(( $(date +%s) - t0 )); }
bash scripts/device_build.sh switchyard-worker switchyard-engine-bench sy_cuda_kernel_tests sy_cuda_fixture_tests \
  > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(since) s"; nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader
source build-gpu/env.sh
{ timeout 150 $B/sy_cuda_kernel_tests --gtest_brief=1; echo "kernel tests rc $?"
  timeout 150 $B/sy_cuda_fixture_tests --gtest_brief=1; echo "fixture tests rc $?"; } > $OUT/tests.log 2>&1
grep -E "PASSED|FAILED|rc |max \||greedy tokens" $OUT/tests.log; echo "tests $(since) s"
tar -xJf .devcarry/llama3-tiny.tar.xz -C $M llama3-tiny-bf16.gguf
python3 - <<'PY' 2>&1 | tee $OUT/limits.txt
import torch, time
x = torch.empty(2**30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize(); t = time.perf_counter(); n = 20
for _ in range(n): y.copy_(x)
torch.cuda.synchronize(); dt = (time.perf_counter() - t) / n
print(f"copy bandwidth (read+write) {2 * x.numel() / dt / 1e9:.0f} GB/s")
a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda"); b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
for _ in range(3): a @ b
torch.cuda.synchronize(); t = time.perf_counter(); n = 20
for _ in range(n): a @ b
torch.cuda.synchronize(); dt = (time.perf_counter() - t) / n
print(f"bf16 GEMM 8192^3 (cuBLAS via torch {torch.__version__}) {2 * 8192**3 / dt / 1e12:.0f} TFLOP/s")
PY
t=$(date +%s); $B/switchyard-worker make-model --arch llama --preset llama3-8b --tokenizer-from $M/llama3-tiny-bf16.gguf \
  --out $M/l8.gguf > /dev/null || exit 1
echo "make-model llama3-8b $(( $(date +%s) - t )) s, $(du -h $M/l8.gguf | cut -f1)"
# Arms, repeats interleaved in one process: the code before the decode work of
# 2026-11-30 (cuBLASLt at every batch, the loop RMSNorm/RoPE kernels, argmax on the host
# from fp32 logits), the same with the argmax on the device, and the default now (also
# the register RMSNorm, per-pair RoPE and the bf16 GEMV at batch 1); then the per-op
# profile of each backend. Each arm's backend holds the whole model (15 GiB) and its
# buffers; add gemv0 to split the kernels from the GEMV.
ARMS=gemv0+oldkernels+host,gemv0+oldkernels,gemv1
timeout 240 $B/switchyard-engine-bench --model $M/l8.gguf --device cuda --prompt-tokens 1024 --decode-tokens 64 \
  --batch 1,8,64 --repeat 3 --arms $ARMS --profile --json > $OUT/l8-1k.json 2> $OUT/l8-1k.log
echo "1k rc $? at $(since) s"; grep -E "^profile|^  (op|attention norm|RoPE|QKV|output|gate|down|decode att|LM|argmax)" $OUT/l8-1k.log
if [ $(since) -lt 400 ]; then
  timeout 100 $B/switchyard-engine-bench --model $M/l8.gguf --device cuda --prompt-tokens 32768 --decode-tokens 64 \
    --batch 1 --repeat 2 --arms gemv0+oldkernels,gemv1 --profile --json > $OUT/l8-32k.json 2> $OUT/l8-32k.log
  echo "32k rc $? at $(since) s"; grep -E "repeat|^profile" $OUT/l8-32k.log
fi
if [ "${QWEN:-0}" = 1 ] && [ $(since) -lt 420 ]; then
  tar -xJf .devcarry/qwen2-tiny.tar.xz -C $M qwen2-tiny-bf16.gguf
  $B/switchyard-worker make-model --arch qwen3 --preset qwen3-8b --tokenizer-from $M/qwen2-tiny-bf16.gguf --out $M/q8.gguf > /dev/null &&
    timeout 120 $B/switchyard-engine-bench --model $M/q8.gguf --device cuda --prompt-tokens 1024 --decode-tokens 64 \
      --batch 1,8,32,64 --repeat 2 --json > $OUT/q8-1k.json 2> $OUT/q8-1k.log
  echo "qwen3 rc $? at $(since) s"
fi
python3 - $OUT/l8-1k.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    print(f'batch {r["batch"]:3d} {r["arm"]:22s}: decode {" / ".join(f"{x:.1f}" for x in r["decode_tok_s"])} tok/s (median {r["decode_tok_s_median"]:.1f})')
PY
echo "total $(since) s"
