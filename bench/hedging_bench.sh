#!/usr/bin/env bash
# Issue 5, hedging bench: REPLICAS simulated workers behind the gateway, each behind its
# own switchyard-faultproxy (sy_proxied_worker); one replica's proxy delays everything it
# sends back by SLOW_MS. Closed-loop load (USERS users, REQUESTS per run), one arm per
# hedging setting, REPEAT runs of each arm in rotation, each on a fresh gateway and fleet:
#   off      resilience.hedge false
#   p90x2    hedge after 2 × p90 of recent send-to-first-token times (the first design)
#   p50x3    hedge after 3 × the median (the default)
# Prints per run: TTFT p50/p90/p99 and the extra upstream attempts (hedges + retries, from
# the gateway's /metrics) per client request.
#
#   bash bench/hedging_bench.sh    # BUILD=build REPLICAS=4 SLOW_MS=300 USERS=8 REQUESTS=400
#                                  # REPEAT=2 ARMS="off p90x2 p50x3" ROUTING=prefix
#   SLOW_MS=1000 USERS=16 bash bench/hedging_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=${MODEL:-$BUILD/fixtures/qwen3-tiny-bf16.gguf}
REPLICAS=${REPLICAS:-4}
SLOW_MS=${SLOW_MS:-300}
USERS=${USERS:-8}
REQUESTS=${REQUESTS:-400}
REPEAT=${REPEAT:-2}
ARMS=${ARMS:-off p90x2 p50x3}
MAX_TOKENS=${MAX_TOKENS:-16}
SIM_ARGS=${SIM_ARGS:-"'--ttft-ms', '30', '--itl-ms', '10'"}
PORT=${PORT:-18330}
ROUTING=${ROUTING:-prefix}
bin=$(cd "$BUILD/bin" && pwd)
for f in "$bin/sy_proxied_worker" "$bin/switchyard-gateway" "$bin/switchyard-bench" "$MODEL"; do
  [ -e "$f" ] || { echo "missing $f (build sy_proxied_worker, switchyard-gateway, switchyard-bench, sy_fixtures)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/sy-hedging.XXXXXX)
source bench/proxied_fleet.sh
trap proxied_fleet_stop EXIT

metric() {  # NAME: the gateway counter's value (0 when absent)
  curl -sf "http://127.0.0.1:$((PORT + 1))/metrics" | awk -v n="$1" '$1 == n {print $2; f=1} END {if (!f) print 0}'
}

run_arm() {  # arm run
  local arm=$1 run=$2 dir=$work/$1-$2 resilience
  case $arm in
    off) resilience="{hedge: false}" ;;
    p90x2) resilience="{hedge: true, hedge_delay_quantile: 0.9, hedge_delay_factor: 2}" ;;
    p50x3) resilience="{hedge: true, hedge_delay_quantile: 0.5, hedge_delay_factor: 3}" ;;
    *) echo "unknown arm $arm" >&2; exit 2 ;;
  esac
  proxied_fleet_start "$dir" "$PORT" "$REPLICAS" "$SIM_ARGS" "startup: {stagger_s: 0, max_parallel_loads: 4}
routing: {policy: $ROUTING}
resilience: $resilience"
  # Slow the first replica's link: every chunk from that worker waits SLOW_MS.
  local control
  control=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control_port"])' "$(ls "$dir"/control/*.json | head -1)")
  curl -sf -X POST "http://127.0.0.1:$control/toxics" -H 'content-type: application/json' \
    -d "{\"type\": \"latency\", \"direction\": \"down\", \"latency_ms\": $SLOW_MS}" >/dev/null
  local h0 r0 q0
  h0=$(metric switchyard_gateway_hedges_total) r0=$(metric switchyard_gateway_retries_total)
  q0=$(metric switchyard_gateway_requests_total)
  "$bin/switchyard-bench" --url "http://127.0.0.1:$PORT" --concurrency "$USERS" --num-requests "$REQUESTS" \
    --warmup 0 --prompt-tokens 64 --max-tokens "$MAX_TOKENS" --timeout 60 --json >"$dir/bench.json" 2>"$dir/bench.txt"
  local h1 r1 q1 won denied
  h1=$(metric switchyard_gateway_hedges_total) r1=$(metric switchyard_gateway_retries_total)
  q1=$(metric switchyard_gateway_requests_total) won=$(metric switchyard_gateway_hedges_won_total)
  denied=$(metric switchyard_gateway_hedges_denied_total)
  python3 - "$arm" "$run" "$dir/bench.json" "$h0" "$h1" "$r0" "$r1" "$q0" "$q1" "$won" "$denied" <<'PY'
import json, sys
arm, run, path = sys.argv[1:4]
h0, h1, r0, r1, q0, q1, won, denied = map(float, sys.argv[4:])
lv = json.load(open(path))["levels"][0]
t = lv["ttft_ms"]
requests = q1 - q0
extra = (h1 - h0) + (r1 - r0)
print(f"{arm:6s} run {run}: {lv['ok']:4d} ok {lv['errors']:2d} err | TTFT p50 {t['p50']:6.1f} p90 {t['p90']:6.1f} "
      f"p99 {t['p99']:6.1f} ms | {requests:.0f} requests, {h1 - h0:.0f} hedges ({won:.0f} won, {denied:.0f} denied), {r1 - r0:.0f} retries: "
      f"{100 * extra / max(requests, 1):.1f} % extra upstream attempts")
PY
  proxied_fleet_stop
}

echo "hedging_bench: $REPLICAS simulated replicas ($SIM_ARGS), one delayed by $SLOW_MS ms; $ROUTING routing; $USERS users," \
  "$REQUESTS requests of $MAX_TOKENS tokens per run; $(nproc) cores; logs in $work"
for run in $(seq "$REPEAT"); do
  for arm in $ARMS; do run_arm "$arm" "$run"; done
done
