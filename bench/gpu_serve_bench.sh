#!/usr/bin/env bash
# Issue 6: switchyard-bench at c=1, 8, 32 against `serve --device cuda:0` (llama3-8b
# synthetic, bf16) on a GPU machine, run from the repo root with .devcarry carried
# (CARRY: another folder of the same files). MODEL: an existing llama3-8b GGUF (else
# make-model writes /tmp/l8.gguf).
set -uo pipefail
OUT=${OUT:-/tmp/out}; B=build-gpu/bin; CARRY=${CARRY:-.devcarry}; export CARRY
bash scripts/device_build.sh switchyard-worker switchyard-bench > $OUT/serve-build.log 2>&1 ||
  { tail -40 $OUT/serve-build.log; exit 1; }
MODEL=${MODEL:-/tmp/l8.gguf}
if [ ! -f "$MODEL" ]; then
  tar -xJf $CARRY/llama3-tiny.tar.xz -C /tmp llama3-tiny-bf16.gguf
  $B/switchyard-worker make-model --arch llama --preset llama3-8b --tokenizer-from /tmp/llama3-tiny-bf16.gguf \
    --out "$MODEL" > /dev/null || exit 1
fi
$B/switchyard-worker serve --model "$MODEL" --device cuda:0 --port 8000 --max-num-seqs 32 > $OUT/serve.log 2>&1 &
for i in $(seq 120); do curl -sf localhost:8000/ready > /dev/null && break; sleep 1; done
curl -s localhost:8000/ready; echo
for c in 1 8 32; do
  timeout 150 $B/switchyard-bench --url http://127.0.0.1:8000 --concurrency $c --num-requests $((c * 4)) --warmup $c \
    --prompt-tokens 1024 --max-tokens 128 --json > $OUT/c$c.json 2> $OUT/c$c.txt
  echo "c=$c rc=$?"; grep -E "^c=|INVALID|failed" $OUT/c$c.txt
done
tail -3 $OUT/serve.log
kill %1 2> /dev/null; wait
