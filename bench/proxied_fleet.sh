# Sourced by hedging_bench.sh and soak.sh: a gateway over simulated workers that each sit
# behind their own switchyard-faultproxy (sy_proxied_worker, a test binary), so that a
# bench can break one replica's link through the proxy's control API.
#
#   proxied_fleet_start DIR PORT REPLICAS WORKER_ARGS MORE_YAML
#     writes DIR/replicas.yaml (model $MODEL, binaries from $bin), starts the gateway
#     (API on PORT, admin on PORT+1; pid in $gw_pid, log DIR/gateway.log) and waits until
#     every replica is ready and has left its control file (proxy and worker ports and
#     pids, JSON) in DIR/control. WORKER_ARGS: YAML list items, e.g. "'--ttft-ms', '30'".
#   proxied_fleet_stop
proxied_fleet_start() {
  local dir=$1 port=$2 replicas=$3 worker_args=$4 more_yaml=$5
  mkdir -p "$dir/control"
  cat >"$dir/replicas.yaml" <<YAML
model: $(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")
listen: 127.0.0.1:$port
admin_listen: 127.0.0.1:$((port + 1))
devices: [cpu]
modes:
  throughput: {replicas: $replicas}
worker:
  binary: $bin/sy_proxied_worker
  max_num_seqs: 8
  kv_blocks: 2048
  extra_args: [$worker_args, '--control-dir', '$dir/control']
$more_yaml
YAML
  "$bin/switchyard-gateway" --config "$dir/replicas.yaml" >"$dir/gateway.log" 2>&1 &
  gw_pid=$!
  local ready=0
  for _ in $(seq 100); do
    ready=$(curl -sf "http://127.0.0.1:$((port + 1))/admin/status" | python3 -c \
      'import json,sys; print(sum(r["state"]=="ready" for r in json.load(sys.stdin)["replicas"]))' 2>/dev/null || echo 0)
    [ "$ready" = "$replicas" ] && [ "$(ls "$dir/control" | wc -l)" = "$replicas" ] && return 0
    sleep 0.3
  done
  echo "fleet not ready:" >&2
  tail -n 20 "$dir/gateway.log" >&2
  exit 1
}

proxied_fleet_stop() {
  if [ -n "${gw_pid:-}" ]; then
    kill "$gw_pid" 2>/dev/null || true
    wait "$gw_pid" 2>/dev/null || true
  fi
  gw_pid=
}
