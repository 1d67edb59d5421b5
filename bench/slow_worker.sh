#!/usr/bin/env bash
# A `worker.binary` stand-in for issue 20's slowed-replica run (agentic_bench.sh SLOW_MS):
# runs the real worker ($SLOW_WORKER_BINARY) with every argument, and for replica
# $SLOW_REPLICA (r0 by default; the supervisor's --boot-id names it) puts a
# switchyard-faultproxy ($SLOW_FAULTPROXY) in front of it whose latency toxic holds back
# everything the worker sends by $SLOW_MS ms, and announces the proxy's address as the
# worker's, so the gateway reaches that replica only through the proxy. The supervisor
# signals the whole process group, which ends all three. Env comes from the gateway's.
set -u
boot= host=127.0.0.1 prev=
for a in "$@"; do
  [ "$prev" = --boot-id ] && boot=$a
  [ "$prev" = --host ] && host=$a
  prev=$a
done
case "$boot" in
  *"-r${SLOW_REPLICA:-0}-"*) ;;
  *) exec "$SLOW_WORKER_BINARY" "$@" ;;
esac
log=$(mktemp /tmp/sy-slow-proxy.XXXXXX)
trap 'rm -f "$log"' EXIT
proxy_pid=
"$SLOW_WORKER_BINARY" "$@" | {
while IFS= read -r line; do
  case "$line" in
    *"listening on http://"*)
      port=${line##*:}
      "$SLOW_FAULTPROXY" --upstream "127.0.0.1:$port" --listen "$host:0" --control 127.0.0.1:0 \
        --toxic "{\"type\":\"latency\",\"latency_ms\":${SLOW_MS:-0},\"direction\":\"down\"}" > "$log" 2>&1 &
      proxy_pid=$!
      for _ in $(seq 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
      pport=$(sed -n 's/.*listening on [^ ]*:\([0-9]*\) control.*/\1/p' "$log")
      [ -n "$pport" ] || { echo "slow_worker: no proxy: $(cat "$log")" >&2; exit 1; }
      echo "slow_worker: $boot through a faultproxy on $pport adding ${SLOW_MS:-0} ms to what worker port $port sends" >&2
      echo "switchyard-worker listening on http://$host:$pport"
      ;;
    *) echo "$line" ;;
  esac
done
[ -n "$proxy_pid" ] && kill "$proxy_pid" 2> /dev/null  # the worker's output ended: so did the worker
}
