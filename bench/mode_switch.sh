#!/usr/bin/env bash
# Issue 4, bench (c): how long a capacity-mode switch takes. Starts the gateway on
# replicas.yaml (or the file given), waits for the fleet, then switches to latency and
# back REPEAT times, each while idle, and prints /admin/status's last_switch.seconds
# (drain + stop + staggered start of the new shape until every replica is ready).
#
#   bash bench/mode_switch.sh [CONFIG] [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-replicas.yaml}
repeat=${2:-2}
admin=http://127.0.0.1:18421
log=$(mktemp /tmp/sy-mode-switch.XXXXXX.log)
build/bin/switchyard-gateway --config "$config" --listen 127.0.0.1:18420 --admin-listen 127.0.0.1:18421 >"$log" 2>&1 &
gw=$!
trap 'kill $gw 2>/dev/null; wait $gw 2>/dev/null || true' EXIT
status() { curl -sf "$admin/admin/status"; }
wait_settled() {  # until no switch is running and every replica is ready
  for _ in $(seq 600); do
    if status | python3 -c 'import json,sys; s=json.load(sys.stdin); ls=s.get("last_switch") or {}
sys.exit(0 if s["replicas"] and all(r["state"]=="ready" for r in s["replicas"]) and (not ls or ls.get("seconds") is not None) else 1)' 2>/dev/null; then return 0; fi
    sleep 0.5
  done
  echo "fleet did not settle; log: $log" >&2; exit 1
}
wait_settled
echo "mode_switch: $config, $(nproc) cores, log $log"
for i in $(seq "$repeat"); do
  for mode in latency throughput; do
    curl -sf -X POST "$admin/admin/mode" -d "{\"mode\":\"$mode\"}" >/dev/null
    sleep 0.5
    wait_settled
    status | python3 -c 'import json,sys; s=json.load(sys.stdin); ls=s["last_switch"]
print("%10s -> %-10s %6.2f s  (%d replicas ready)" % (ls["from"], ls["to"], ls["seconds"], len(s["replicas"])))'
  done
done
