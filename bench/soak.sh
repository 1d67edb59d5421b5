#!/usr/bin/env bash
# Issue 5, soak: DURATION seconds (default 30 minutes) of mixed traffic through the
# gateway while random link faults hit its workers (bench/soak_client.py says what).
# REPLICAS simulated workers, each behind its own fault proxy (sy_proxied_worker, a test
# binary). Prints requests completed and failed by kind, and RSS and open descriptors of
# every process at start and end; the per-minute samples stay in the work directory.
#
#   bash bench/soak.sh          # BUILD=build DURATION=1800 REPLICAS=4 USERS=8
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=${MODEL:-$BUILD/fixtures/qwen3-tiny-bf16.gguf}
DURATION=${DURATION:-1800}
REPLICAS=${REPLICAS:-4}
USERS=${USERS:-8}
PORT=${PORT:-18340}
bin=$(cd "$BUILD/bin" && pwd)
for f in "$bin/sy_proxied_worker" "$bin/switchyard-gateway" "$MODEL"; do
  [ -e "$f" ] || { echo "missing $f (build sy_proxied_worker, switchyard-gateway, sy_fixtures)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/sy-soak.XXXXXX)
source bench/proxied_fleet.sh
trap proxied_fleet_stop EXIT
proxied_fleet_start "$work" "$PORT" "$REPLICAS" "'--ttft-ms', '40', '--itl-ms', '15', '--jitter', '0.3'" \
  "startup: {stagger_s: 0, max_parallel_loads: 1, restart_backoff_initial_s: 0.5}
resilience: {first_token_timeout_s: 10, stall_min_s: 1, stall_max_s: 5}"
echo "soak: $(date -u +%FT%TZ), $(nproc) cores, work directory $work"
python3 bench/soak_client.py --port "$PORT" --gateway-pid "$gw_pid" --control-dir "$work/control" \
  --duration "$DURATION" --users "$USERS" --csv "$work/processes.csv"
curl -sf "http://127.0.0.1:$((PORT + 1))/metrics" | grep -E "^switchyard_gateway_(requests_finished|hedges|retries|stalls|replica_restarts)" || true
