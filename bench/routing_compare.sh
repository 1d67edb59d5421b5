#!/usr/bin/env bash
# Issue 4, bench (b): a multi-turn chat workload (conversations growing turn by turn,
# shared system prompts) through the gateway over 4 CPU workers, once per routing policy
# (prefix, round_robin, least_loaded), each arm run REPEAT times in rotation. Prints each
# run's prefix hit rate (cached / prompt tokens, from the workers' usage) and TTFT.
#
#   bash bench/routing_compare.sh [USERS] [TURNS] [REPEAT]
#
# Model: the `small` synthetic preset (8 layers, hidden 512) with the real Qwen3
# tokenizer, made here on first use. Needs $BUILD/bin (BUILD defaults to build) and
# models/qwen3-tokenizer (made by scripts/demo_model.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
users=${1:-8}
turns=${2:-4}
repeat=${3:-2}
bin=${BUILD:-build}/bin
model=models/qwen3-small-synthetic.gguf
if [ ! -s "$model" ]; then
  "$bin"/switchyard-worker make-model --arch qwen3 --preset small \
    --tokenizer-from models/qwen3-tokenizer/tokenizer.json --out "$model.tmp" >/dev/null
  mv "$model.tmp" "$model"
fi
work=$(mktemp -d /tmp/sy-routing.XXXXXX)
gw_pid=
cleanup() { [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null; true; }
trap cleanup EXIT

run_arm() {  # policy run
  local policy=$1 run=$2 cfg=$work/$1.yaml
  cat >"$cfg" <<YAML
model: $PWD/$model  # the file is written elsewhere: its relative paths would be taken from there
served_model_name: small
listen: 127.0.0.1:18310
admin_listen: 127.0.0.1:18311
devices: [cpu]
modes:
  throughput: {replicas: 4, devices_per_replica: 1}
default_mode: throughput
worker: {max_num_seqs: 8, kv_memory_gb: 0.25, prefill_chunk: 256, cpu_threads: 1}
startup: {stagger_s: 0, max_parallel_loads: 1}
routing: {policy: $policy}
YAML
  "$bin"/switchyard-gateway --config "$cfg" >"$work/$policy-$run.gateway.log" 2>&1 &
  gw_pid=$!
  for _ in $(seq 180); do
    ready=$(curl -sf http://127.0.0.1:18311/admin/status | python3 -c \
      'import json,sys; print(sum(r["state"]=="ready" for r in json.load(sys.stdin)["replicas"]))' 2>/dev/null || echo 0)
    [ "$ready" = 4 ] && break
    sleep 1
  done
  [ "$ready" = 4 ] || { echo "fleet not ready for $policy:" >&2; tail -n 30 "$work/$policy-$run.gateway.log" >&2; exit 1; }
  "$bin"/switchyard-bench --url http://127.0.0.1:18310 --concurrency "$users" \
    --num-requests $((users * turns * 2)) --multi-turn "$turns" --system-prompts 2 \
    --system-tokens 384 --prompt-tokens 48 --max-tokens 16 --json \
    >"$work/$policy-$run.json" 2>"$work/$policy-$run.txt"
  python3 - "$policy" "$run" "$work/$policy-$run.json" <<'PY'
import json, sys
policy, run, path = sys.argv[1:]
lv = json.load(open(path))["levels"][0]
print(f"{policy:13s} run {run}: {lv['ok']:3d} ok {lv['errors']:2d} err | prefix hit rate "
      f"{100 * (lv['prefix_hit_rate'] or 0):5.1f} % | TTFT mean {lv['ttft_ms']['mean']:7.1f} ms "
      f"p50 {lv['ttft_ms']['p50']:7.1f} p90 {lv['ttft_ms']['p90']:7.1f} ms | agg {lv['aggregate_output_tok_s']:.1f} tok/s")
PY
  kill "$gw_pid"; wait "$gw_pid" 2>/dev/null || true; gw_pid=
}

echo "routing_compare: $users users, $turns turns each, $repeat runs per policy; $(nproc) cores; logs in $work"
for run in $(seq "$repeat"); do
  for policy in prefix round_robin least_loaded; do run_arm "$policy" "$run"; done
done
