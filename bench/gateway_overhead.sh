#!/usr/bin/env bash
# Gateway overhead (issue 4, bench a): what switchyard-gateway adds to each request's
# latency. Arm "direct": switchyard-bench against one switchyard-simworker. Arm
# "gateway": the same load through a gateway whose fleet is REPLICAS simulated workers
# with the same timing. Both open loop at RATE requests/s, short prompts, MAX_TOKENS
# tokens; each arm runs RUNS times, alternating. Prints one row per run, then the
# difference of the medians of each arm's runs (gateway − direct).
#
#   bench/gateway_overhead.sh            # BUILD=build RATE=1000 REPLICAS=64 DURATION=10
#   RATE=500 REPLICAS=16 bench/gateway_overhead.sh
set -euo pipefail

BUILD=${BUILD:-build}
MODEL=${MODEL:-$BUILD/fixtures/qwen3-tiny-bf16.gguf}
RATE=${RATE:-1000}
REPLICAS=${REPLICAS:-64}
DURATION=${DURATION:-10}
RUNS=${RUNS:-2}
MAX_TOKENS=${MAX_TOKENS:-16}
PROMPT_TOKENS=${PROMPT_TOKENS:-32}
PORT_BASE=${PORT_BASE:-21100}  # direct worker, gateway, gateway admin: PORT_BASE .. +2
SIM_TIMING=${SIM_TIMING:---ttft-ms 5 --itl-ms 2 --prefill-us-per-token 0}
OUT=${OUT:-$(mktemp -d /tmp/gateway_overhead.XXXXXX)}

for f in "$BUILD/bin/switchyard-simworker" "$BUILD/bin/switchyard-gateway" "$BUILD/bin/switchyard-bench" "$MODEL"; do
  [[ -e $f ]] || { echo "missing $f (build it; the model is unpacked by the sy_fixtures target)" >&2; exit 1; }
done
BIN=$(cd "$BUILD/bin" && pwd)
MODEL=$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")
DIRECT_PORT=$PORT_BASE GW_PORT=$((PORT_BASE + 1)) ADMIN_PORT=$((PORT_BASE + 2))
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

wait_http() {  # URL PYTHON_CONDITION_ON_j SECONDS
  local deadline=$((SECONDS + $3))
  until curl -fsS "$1" 2>/dev/null | python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(0 if ($2) else 1)" 2>/dev/null; do
    ((SECONDS < deadline)) || { echo "timed out waiting for $1" >&2; exit 1; }
    sleep 0.2
  done
}

# One simulated worker, with seats for every request in flight: its own latency only.
# shellcheck disable=SC2086
"$BIN/switchyard-simworker" serve --model "$MODEL" --port "$DIRECT_PORT" --max-num-seqs 4096 \
  --kv-blocks 65536 $SIM_TIMING >"$OUT/direct.out" 2>"$OUT/direct.log" &
PIDS+=($!)
wait_http "http://127.0.0.1:$DIRECT_PORT/ready" 'j["ready"]' 30

# The gateway and its simulated fleet.
sim_args=$(printf "'%s', " $SIM_TIMING)
cat >"$OUT/replicas.yaml" <<YAML
model: $MODEL
listen: 127.0.0.1:$GW_PORT
admin_listen: 127.0.0.1:$ADMIN_PORT
devices: [cpu]
modes:
  throughput: {replicas: $REPLICAS}
worker:
  binary: $BIN/switchyard-simworker
  max_num_seqs: 8
  kv_blocks: 4096
  extra_args: [${sim_args%, }]
startup: {stagger_s: 0, max_parallel_loads: 8, ready_timeout_s: 60}
queues: {interactive: 100000, standard: 100000, batch: 100000}
limits: {max_connections: 100000}
YAML
"$BIN/switchyard-gateway" --config "$OUT/replicas.yaml" >"$OUT/gateway.out" 2>"$OUT/gateway.log" &
PIDS+=($!)
started=$SECONDS
wait_http "http://127.0.0.1:$ADMIN_PORT/admin/status" \
  "sum(r['state'] == 'ready' and bool(r.get('kv_events_connected')) for r in j['replicas']) == $REPLICAS" 120
echo "gateway and $REPLICAS simulated workers ready in $((SECONDS - started)) s" >&2

run_arm() {  # NAME PORT RUN
  "$BIN/switchyard-bench" --url "http://127.0.0.1:$2" --rate "$RATE" --duration "$DURATION" \
    --num-requests $((RATE * DURATION)) --warmup 100 --prompt-tokens "$PROMPT_TOKENS" \
    --max-tokens "$MAX_TOKENS" --timeout 30 --json >"$OUT/$1-$3.json" 2>"$OUT/$1-$3.txt" || true
}
for run in $(seq 1 "$RUNS"); do
  run_arm direct "$DIRECT_PORT" "$run"
  run_arm gateway "$GW_PORT" "$run"
done

echo "# rate $RATE req/s offered, $DURATION s per run, prompt ~$PROMPT_TOKENS tokens, max_tokens $MAX_TOKENS,"
echo "# simulated workers: $SIM_TIMING; gateway fleet: $REPLICAS workers; raw results in $OUT"
python3 - "$OUT" <<'PY' | if command -v column >/dev/null; then column -t -s $'\t'; else cat; fi
import glob, json, os, statistics, sys
out = sys.argv[1]
runs = []
for arm in ("direct", "gateway"):
    for f in sorted(glob.glob(f"{out}/{arm}-*.json")):
        lv = json.load(open(f))["levels"][0]
        runs.append((arm, os.path.basename(f)[len(arm) + 1:-5], lv))
keys = [("ttft_ms", "p50"), ("ttft_ms", "p99"), ("e2e_ms", "p50"), ("e2e_ms", "p99")]
print("\t".join(["arm", "run", "ok", "err", "achieved req/s", "TTFT p50 ms", "TTFT p99 ms", "e2e p50 ms", "e2e p99 ms"]))
for arm, run, lv in runs:
    print("\t".join(map(str, [arm, run, lv["ok"], lv["errors"], round(lv["ok_requests_per_s"], 1)] +
                     [round(lv[a][b], 1) for a, b in keys])))
med = lambda arm, a, b: statistics.median(lv[a][b] for x, _, lv in runs if x == arm)
print("\t".join(["added", "gw-direct", "-", "-", "-"] + [str(round(med("gateway", a, b) - med("direct", a, b), 1)) for a, b in keys]))
PY
