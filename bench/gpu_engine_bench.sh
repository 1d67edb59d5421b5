#!/usr/bin/env bash
# Issue 6 engine benchmark on a GPU machine (the lent H200: run from the repo root there
# with .devcarry carried, see scripts/device_build.sh). Builds, measures the copy and
# bf16 GEMM limits with torch, makes llama3-8b and qwen3-8b with make-model and runs
# switchyard-engine-bench; results land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; B=build-gpu/bin; M=/tmp/m; mkdir -p $M
t0=$(date +%s)
bash scripts/device_build.sh switchyard-worker switchyard-engine-bench switchyard-attention-bench > $OUT/build.log 2>&1 || { tail -40 $OUT/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"; nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
tar -xJf .devcarry/llama3-tiny.tar.xz -C $M llama3-tiny-bf16.gguf
tar -xJf .devcarry/qwen2-tiny.tar.xz -C $M qwen2-tiny-bf16.gguf
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
for spec in "llama 3-8b llama3 $M/llama3-tiny-bf16.gguf" "qwen3 qwen3-8b qwen3 $M/qwen2-tiny-bf16.gguf"; do
  set -- $spec; arch=$1; preset=$2; [ "$arch" = llama ] && preset=llama3-8b
  t=$(date +%s); $B/switchyard-worker make-model --arch $arch --preset $preset --tokenizer-from $4 --out $M/$preset.gguf > /dev/null || exit 1
  echo "make-model $preset $(( $(date +%s) - t )) s, $(du -h $M/$preset.gguf | cut -f1)"
  timeout 200 $B/switchyard-engine-bench --model $M/$preset.gguf --device cuda --prompt-tokens 1024 --decode-tokens 64 --batch 1,8,32,64 --repeat 2 --json > $OUT/$preset-1k.json 2> $OUT/$preset-1k.log; echo "rc $?"; tail -9 $OUT/$preset-1k.log
  if [ $preset = llama3-8b ]; then
    for p in 8192 32768; do
      timeout 120 $B/switchyard-engine-bench --model $M/$preset.gguf --device cuda --prompt-tokens $p --decode-tokens 32 --batch 1 --repeat 2 --json > $OUT/$preset-$p.json 2> $OUT/$preset-$p.log; echo "rc $?"; tail -2 $OUT/$preset-$p.log
    done
  fi
  rm -f $M/$preset.gguf
  [ $(( $(date +%s) - t0 )) -gt 480 ] && { echo "stopping: time"; break; }
done
echo "total $(( $(date +%s) - t0 )) s"
