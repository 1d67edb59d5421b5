#!/usr/bin/env bash
# Issue 6's engine table in one command on a GPU machine (the lent H200: run from the repo
# root there, with the carried dependencies of scripts/device_build.sh). Builds, measures
# the copy bandwidth and the bf16 GEMM rate (torch), writes the llama3-8b and qwen3-8b
# synthetic bf16 models with make-model, runs switchyard-engine-bench on each (decode at
# batch 1, 8, 32 and 64 with 1K prompts, batch 1 after a 32K prompt; prefill 1K, 8K and
# 32K) and, where LLAMA_CPP names a folder with llama.cpp's llama-bench and
# llama-batched-bench (and their libraries), the same measurements with llama.cpp on the
# same GGUF files. Then bench/gpu_table.py prints the table, each row beside its limit.
# Results and logs land in $OUT; each step has a time limit.
#
#   bash bench/gpu_table.sh
#   CARRY=$PWD/.devcarry-table LLAMA_CPP=.devcarry-table/llama.cpp MODELS="l8 q8" bash bench/gpu_table.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; B=build-gpu/bin; M=${MODEL_DIR:-/tmp/m}; MODELS=${MODELS:-l8 q8}
CARRY=${CARRY:-$PWD/.devcarry}; export CARRY
mkdir -p "$M" "$OUT"
t0=$(date +%s)
since() { echo $(( $(date +%s) - t0 )); }
bash scripts/device_build.sh switchyard-worker switchyard-engine-bench > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "build $(since) s"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
source build-gpu/env.sh

# The models (make-model is deterministic: the same file for the same arguments), both
# written at once while the limits are measured; llama.cpp below reads the same files.
declare -A ARCH=([l8]="--arch llama --preset llama3-8b" [q8]="--arch qwen3 --preset qwen3-8b")
declare -A TOK=([l8]=llama3-tiny [q8]=qwen2-tiny)
for m in $MODELS; do
  ( tar -xJf "$CARRY/${TOK[$m]}.tar.xz" -C "$M" "${TOK[$m]}-bf16.gguf" &&
    $B/switchyard-worker make-model ${ARCH[$m]} --tokenizer-from "$M/${TOK[$m]}-bf16.gguf" \
      --out "$M/$m.gguf" > "$OUT/make-$m.log" 2>&1; echo "make-model $m rc $?" ) &
done
python3 bench/gpu_limits.py > "$OUT/limits.txt" 2>&1
cat "$OUT/limits.txt"; wait; echo "models and limits $(since) s"
ls -l $(for m in $MODELS; do echo "$M/$m.gguf"; done) | tee "$OUT/models.txt"

for m in $MODELS; do
  EB="$B/switchyard-engine-bench --model $M/$m.gguf --device cuda --json"
  timeout 90 $EB --prompt-tokens 1024 --decode-tokens 64 --batch 1,8,32,64 --repeat 3 > "$OUT/$m-1k.json" 2> "$OUT/$m-1k.log"
  echo "$m 1k rc $? at $(since) s"
  for p in 8192 32768; do
    # --profile: where a decode step's time goes at this context (batch 1)
    timeout 60 $EB --prompt-tokens $p --decode-tokens 32 --batch 1 --repeat 3 --profile > "$OUT/$m-$p.json" 2> "$OUT/$m-$p.log"
    echo "$m $p rc $? at $(since) s"
  done
done

if [ -n "${LLAMA_CPP:-}" ]; then
  export LD_LIBRARY_PATH=$(cd "$LLAMA_CPP" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  for m in $MODELS; do
    LB="$LLAMA_CPP/llama-bench -m $M/$m.gguf -ngl 99 -fa 1 -r 2 -o json"
    timeout 90 $LB -p 1024,8192,32768 -n 0 > "$OUT/$m-llama-prefill.json" 2> "$OUT/$m-llama.log"
    echo "$m llama.cpp prefill rc $? at $(since) s"
    timeout 90 $LB -p 0 -n 64 -d 1024,32768 > "$OUT/$m-llama-decode.json" 2>> "$OUT/$m-llama.log"
    echo "$m llama.cpp decode rc $? at $(since) s"
    timeout 120 "$LLAMA_CPP/llama-batched-bench" -m "$M/$m.gguf" -ngl 99 -fa on -c 73728 -npp 1024 -ntg 64 \
      -npl 1,8,32,64 --output-format jsonl > "$OUT/$m-llama-batched.jsonl" 2>> "$OUT/$m-llama.log"
    echo "$m llama.cpp batched rc $? at $(since) s"
  done
fi
python3 bench/gpu_table.py "$OUT" | tee "$OUT/table.md"
echo "total $(since) s"
