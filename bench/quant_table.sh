#!/usr/bin/env bash
# Issue 19's table: Switchyard beside llama.cpp on the same quantized GGUF files, one
# machine, one call. make-model writes the preset in each type (the same file for the
# same arguments; llama.cpp reads them as written), then, per type, switchyard-engine-bench
# and, where LLAMA_CPP names a folder with llama.cpp's llama-bench (and, for cuda,
# llama-batched-bench) and their libraries, llama.cpp. bench/quant_table.py prints the
# table with each ratio. Run from the repo root of a build made by scripts/device_build.sh
# (BIN=build-gpu/bin) or the local build (BIN=build/bin); results and logs land in $OUT.
#
#   DEVICE=cpu  PRESET=qwen3-0.6b ARCH=qwen3 TOK=qwen2-tiny  LLAMA_CPP=/tmp/lcpu bash bench/quant_table.sh
#   DEVICE=cuda PRESET=llama3-8b  ARCH=llama TOK=llama3-tiny LLAMA_CPP=/tmp/lcuda bash bench/quant_table.sh
#
# cpu: prefill of a PROMPT-token prompt and batch-1 decode of 64 tokens after it, THREADS
#      threads both (SWITCHYARD_THREADS, llama-bench -t); Switchyard's arms from ARMS
#      (default det,fast: the batch-invariant default and fast, whose prompts run on AMX
#      int8 tiles where the processor has AMX; fast+noamx keeps dequantized sgemm;
#      det+kv16 adds the half KV cache). cuda: batch 1 and 64 with 1K prompts, as
#      bench/gpu_table.sh, the engine bench's --arms from ARMS (default: default);
#      LLAMA_PREFILL=0 skips llama.cpp's prefill run (decode rows only). Each
#      step has a time limit, and types whose turn comes after BUDGET seconds (default:
#      none) are skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; BIN=${BIN:-build-gpu/bin}; M=${MODEL_DIR:-/tmp/m}
DEVICE=${DEVICE:-cpu}; PRESET=${PRESET:-qwen3-0.6b}; ARCH=${ARCH:-qwen3}; TOK=${TOK:-qwen2-tiny}
TYPES=${TYPES:-bf16 q8_0 q4_k_m}; THREADS=${THREADS:-$(nproc)}; PROMPT=${PROMPT:-512}; REPEAT=${REPEAT:-3}
CARRY=${CARRY:-$PWD/.devcarry}
mkdir -p "$M" "$OUT"
t0=$(date +%s)
since() { echo $(( $(date +%s) - t0 )); }
{ echo "device $DEVICE preset $PRESET threads $THREADS prompt $PROMPT"; lscpu | grep -E "^(Model name|CPU\(s\)|Flags)" |
  sed 's/^Flags:.*/flags: '"$(grep -o -w -E 'avx2|avx512f|avx512_bf16|avx512_vnni|amx_bf16|f16c' /proc/cpuinfo | sort -u | tr '\n' ' ')"'/'
  [ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader; } > "$OUT/machine.txt"
cat "$OUT/machine.txt"

tok=$M/$TOK-bf16.gguf
[ -f "$tok" ] || tar -xJf "$CARRY/$TOK.tar.xz" -C "$M" "$TOK-bf16.gguf" || exit 1
for t in $TYPES; do   # written at once: disk and one core each
  ( $BIN/switchyard-worker make-model --arch "$ARCH" --preset "$PRESET" --type "$t" --tokenizer-from "$tok" \
      --out "$M/$PRESET-$t.gguf" > "$OUT/make-$t.log" 2>&1; echo "make-model $t rc $?" ) &
done
wait; echo "models $(since) s"; ls -l "$M"/"$PRESET"-*.gguf | tee "$OUT/models.txt"

if [ -n "${LLAMA_CPP:-}" ]; then
  export LD_LIBRARY_PATH=$(cd "$LLAMA_CPP" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
for t in $TYPES; do
  f=$M/$PRESET-$t.gguf
  if [ -n "${BUDGET:-}" ] && [ "$(since)" -gt "$BUDGET" ]; then echo "skipped $t: past BUDGET"; continue; fi
  if [ "$DEVICE" = cpu ]; then
    SWITCHYARD_THREADS=$THREADS timeout 300 $BIN/switchyard-engine-bench --model "$f" --device cpu --json \
      --prompt-tokens "$PROMPT" --decode-tokens 64 --batch 1 --repeat "$REPEAT" --arms "${ARMS:-det,fast}" \
      > "$OUT/sy-$t.json" 2> "$OUT/sy-$t.log"
    echo "switchyard $t rc $? at $(since) s"
    if [ -n "${LLAMA_CPP:-}" ]; then
      timeout 300 "$LLAMA_CPP/llama-bench" -m "$f" -t "$THREADS" -r "$REPEAT" -o json -p "$PROMPT" -n 0 \
        > "$OUT/ll-$t-prefill.json" 2> "$OUT/ll-$t.log"
      timeout 300 "$LLAMA_CPP/llama-bench" -m "$f" -t "$THREADS" -r "$REPEAT" -o json -p 0 -n 64 -d "$PROMPT" \
        > "$OUT/ll-$t-decode.json" 2>> "$OUT/ll-$t.log"
      echo "llama.cpp $t rc $? at $(since) s"
    fi
  else
    timeout $((120 * $(echo "${ARMS:-default}" | tr ',' '\n' | wc -l))) $BIN/switchyard-engine-bench --model "$f" --device cuda --json --prompt-tokens 1024 \
      --decode-tokens 64 --batch 1,64 --repeat "$REPEAT" --arms "${ARMS:-default}" > "$OUT/sy-$t.json" 2> "$OUT/sy-$t.log"
    echo "switchyard $t rc $? at $(since) s"
    if [ -n "${LLAMA_CPP:-}" ]; then
      [ "${LLAMA_PREFILL:-1}" = 0 ] ||
        timeout 120 "$LLAMA_CPP/llama-bench" -m "$f" -ngl 99 -fa 1 -r "$REPEAT" -o json -p 1024 -n 0 \
          > "$OUT/ll-$t-prefill.json" 2> "$OUT/ll-$t.log"
      timeout 120 "$LLAMA_CPP/llama-bench" -m "$f" -ngl 99 -fa 1 -r "$REPEAT" -o json -p 0 -n 64 -d 1024 \
        > "$OUT/ll-$t-decode.json" 2>> "$OUT/ll-$t.log"
      timeout 150 "$LLAMA_CPP/llama-batched-bench" -m "$f" -ngl 99 -fa on -c 73728 -npp 1024 -ntg 64 -npl 64 \
        --output-format jsonl > "$OUT/ll-$t-batched.jsonl" 2>> "$OUT/ll-$t.log"
      echo "llama.cpp $t rc $? at $(since) s"
    fi
  fi
done
python3 bench/quant_table.py "$OUT" | tee "$OUT/table.md"
echo "total $(since) s"
