#!/usr/bin/env bash
# Issue 20: the agentic workload (switchyard-agentic) through the gateway, once per
# routing policy, same seed and same load; reports and the TTFT-by-turn SVG under $OUT.
#
#   GPU (run from the repo root on the lent machine, .devcarry carried; each call < 600 s):
#     POLICIES= bash bench/agentic_bench.sh                  # build + make the model only
#     POLICIES="prefix round_robin" bash bench/agentic_bench.sh
#   CPU smoke (tiny fixture model, 2 CPU replicas, a few seconds of load):
#     MODE=cpu BUILD=build-h20 bash bench/agentic_bench.sh
#   Simulated replicas (switchyard-simworker with serial prefill, the GPU run's workload
#   and timing scale; for the router's placement rules over many seeds, not for speed):
#     MODE=sim BUILD=build SEED=4 POLICIES=prefix bash bench/agentic_bench.sh
#
# Env: POLICIES (prefix approximate least_loaded round_robin session_affinity), REPLICAS
# (4), DEVICE (GPU id the replicas share, 0), DEVICES (unset; GPU ids, one per replica, e.g.
# "0 1 2 3": each replica on its own GPU, reports named POLICY-gpusN), KV_GB (KV cache per replica, 14),
# MAX_SEQS (16), SEED (1), RATE (new sessions/s, 0.2), DURATION (s of arrivals, 60),
# MAX_RUN_S (no turn starts later, 120; the run is killed 60 s after), AGENT_TYPES (4), SYSTEM_TOKENS (3000),
# TASK_TOKENS (200), TOOL_TOKENS (500,4000), REPLY_TOKENS (32,128), TURNS (5,30),
# THINK_S (0.5,2), MAX_CONTEXT (65536), MODEL (a llama3-8b GGUF; made at /tmp/l8.gguf
# if missing), SLOW_MS (unset; set: replica SLOW_REPLICA (0) runs behind a faultproxy
# adding SLOW_MS ms to all it sends, bench/slow_worker.sh; reports named POLICY-slowMS),
# REBALANCE (unset; 1: routing.session_rebalance on, reports named POLICY-rebalance),
# COST_TOL (unset; routing.session_cost_tolerance, reports named POLICY-tolCOST_TOL),
# RECOMPUTE (unset; routing.recompute_weight, reports named POLICY-rwRECOMPUTE),
# SESSION_LOAD (unset; routing.session_load, count or activity, reports named POLICY-SESSION_LOAD),
# LOST_CONTEXT (unset; routing.lost_context, sessions or kv, reports named POLICY-lostLOST_CONTEXT),
# NEW_SESSION (unset; routing.new_session, sessions or kv, reports named POLICY-newNEW_SESSION),
# HEDGE (unset; 0: resilience.hedge false, reports named POLICY-nohedge),
# MPS (unset; gpu, 1: the replicas' processes share the GPU through NVIDIA MPS, a daemon
# started for the run with its own pipe and log folders and stopped after, so that their
# kernels run side by side instead of time-sliced; reports named POLICY-mps; not yet run),
# HOST_GB (unset; worker.kv_host_gb, the KV host tier per replica, reports named POLICY-hostHOST_GB;
# sim: the simworker's --kv-host-gb),
# PREFILL_CHUNK (1024; cpu 256), OUT (/tmp/out), BUILD (build-gpu; cpu and sim:
# build), SIM_ARGS (sim: the simworker's timing flags), PREFILL_US (sim: µs per uncached
# prompt token, 60), TTFT_MS (sim: fixed ms of every first token, 60), SHARED (sim: 1 =
# one prefill queue for all replicas, a simulated GPU they report sharing, reports named
# POLICY-shared; sliced = that GPU time-sliced, each replica's prefills in turn at an
# equal share of its speed, reports named POLICY-sliced; sliced-decode = decode
# time-sliced too, reports named POLICY-sliced-decode), ITL_MS (sim: ms between tokens,
# 25; with SHARED=sliced-decode 10, per replica decoding), PORT (18410; the admin port is PORT + 1), KEEP (/tmp/agentic-reports:
# every report of earlier calls on this machine is kept there too, and the SVG is drawn
# over all of them, newest per policy; cpu: OUT).
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-gpu}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
POLICIES=${POLICIES-prefix approximate least_loaded round_robin session_affinity}
SEED=${SEED:-1}
[ "$MODE" != gpu ] && KEEP=${KEEP:-$OUT}
KEEP=${KEEP:-/tmp/agentic-reports}; mkdir -p "$KEEP"
if [ "$MODE" = cpu ]; then
  BUILD=${BUILD:-build}; REPLICAS=${REPLICAS:-2}
  MODEL=${MODEL:-$BUILD/fixtures/qwen3-tiny-bf16.gguf}
  if [ ! -f "$MODEL" ]; then  # not built yet: straight from the shared archive
    tar -xJf ../shared/fixtures/qwen3-tiny.tar.xz -C /tmp qwen3-tiny-bf16.gguf || exit 1
    MODEL=/tmp/qwen3-tiny-bf16.gguf
  fi
  RATE=${RATE:-2}; DURATION=${DURATION:-4}; MAX_RUN_S=${MAX_RUN_S:-20}; AGENT_TYPES=${AGENT_TYPES:-2}
  SYSTEM_TOKENS=${SYSTEM_TOKENS:-300}; TASK_TOKENS=${TASK_TOKENS:-30}; TOOL_TOKENS=${TOOL_TOKENS:-30,120}
  REPLY_TOKENS=${REPLY_TOKENS:-4,8}; TURNS=${TURNS:-3,5}; THINK_S=${THINK_S:-0.1,0.3}; MAX_CONTEXT=${MAX_CONTEXT:-1500}
  MAX_SEQS=${MAX_SEQS:-4}; PREFILL_CHUNK=${PREFILL_CHUNK:-256}
  devices="[cpu]"; kv="kv_blocks: 512"; extra="cpu_threads: 1"
else
  BUILD=${BUILD:-build-gpu}; [ "$MODE" = sim ] && BUILD=${BUILD/#build-gpu/build}
  REPLICAS=${REPLICAS:-4}; DEVICE=${DEVICE:-0}; KV_GB=${KV_GB:-14}
  RATE=${RATE:-0.2}; DURATION=${DURATION:-60}; MAX_RUN_S=${MAX_RUN_S:-120}; AGENT_TYPES=${AGENT_TYPES:-4}
  SYSTEM_TOKENS=${SYSTEM_TOKENS:-3000}; TASK_TOKENS=${TASK_TOKENS:-200}; TOOL_TOKENS=${TOOL_TOKENS:-500,4000}
  REPLY_TOKENS=${REPLY_TOKENS:-32,128}; TURNS=${TURNS:-5,30}; THINK_S=${THINK_S:-0.5,2}; MAX_CONTEXT=${MAX_CONTEXT:-65536}
  MAX_SEQS=${MAX_SEQS:-16}; PREFILL_CHUNK=${PREFILL_CHUNK:-1024}
  CARRY=${CARRY:-.devcarry}; export CARRY
fi
if [ "$MODE" = sim ]; then
  # One H200 shared by four llama3-8b replicas, roughly: ~16K prompt tokens/s each,
  # one prefill at a time, 25 ms between tokens; the cache of 14 GiB of llama3-8b KV.
  # SHARED=1: the four share one prefill queue (~16K tokens/s in all, as measured on the
  # H200 where each replica computed 2.6-5.5K prompt tokens/s beside the others).
  # SHARED=sliced: the same GPU time-sliced between the replicas' processes, as CUDA
  # shares one between contexts: each replica's prefills in turn, every replica with
  # prefill pending at an equal share of the ~16K tokens/s. SHARED=sliced-decode: decode
  # time-sliced too, each token 10 ms (ITL_MS) times the replicas decoding at once (on
  # the H200: 7.7-10.4 ms alone, 41.8-52.6 ms with four, docs/PERFORMANCE.md).
  # The model: llama3-tiny's tokenizer and template with Llama 3.1's 128K context (its
  # llama.context_length rewritten in place), since only those are read.
  MODEL=${MODEL:-/tmp/llama3-tiny-128k.gguf}
  if [ ! -f "$MODEL" ]; then  # made in a folder of this run's own, then renamed: parallel runs
    tmp=$(mktemp -d) && tar -xJf ../shared/fixtures/llama3-tiny.tar.xz -C "$tmp" llama3-tiny-bf16.gguf || exit 1
    python3 - "$tmp/llama3-tiny-bf16.gguf" "$tmp/model.gguf" <<'PY' && mv "$tmp/model.gguf" "$MODEL" && rm -rf "$tmp" || exit 1
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
key = b"llama.context_length"
at = b.index(struct.pack("<Q", len(key)) + key + struct.pack("<I", 4)) + 8 + len(key) + 4  # u32 value
b[at:at + 4] = struct.pack("<I", 131072)
open(sys.argv[2], "wb").write(b)
PY
  fi
  devices="[cpu]"
  kv="kv_blocks: 7168"
  queue=--serial-prefill
  [ "${SHARED:-}" = 1 ] && queue="--shared-prefill /tmp/sy-sim-prefill-${PORT:-18410}" simtag=-shared
  [ "${SHARED:-}" = sliced ] && queue="--sliced-prefill /tmp/sy-sim-sliced-${PORT:-18410}" simtag=-sliced
  [ "${SHARED:-}" = sliced-decode ] && queue="--sliced-prefill /tmp/sy-sim-sliced-${PORT:-18410} --sliced-decode" simtag=-sliced-decode ITL_MS=${ITL_MS:-10}
  extra="extra_args: [$(echo "${SIM_ARGS:-$queue --ttft-ms ${TTFT_MS:-60} --prefill-us-per-token ${PREFILL_US:-60} --itl-ms ${ITL_MS:-25} --jitter 0.1}" | sed 's/ /, /g')]"
elif [ "$MODE" != cpu ]; then
  bash scripts/device_build.sh switchyard-worker switchyard-gateway switchyard-agentic switchyard-faultproxy > "$OUT/agentic-build.log" 2>&1 ||
    { tail -40 "$OUT/agentic-build.log"; exit 1; }
  MODEL=${MODEL:-/tmp/l8.gguf}
  if [ ! -f "$MODEL" ]; then
    tar -xJf "$CARRY/llama3-tiny.tar.xz" -C /tmp llama3-tiny-bf16.gguf
    "$BUILD"/bin/switchyard-worker make-model --arch llama --preset llama3-8b --tokenizer-from /tmp/llama3-tiny-bf16.gguf \
      --out "$MODEL" > /dev/null || exit 1
  fi
  if [ -n "${DEVICES:-}" ]; then  # a GPU per replica
    set -- $DEVICES
    [ $# = "$REPLICAS" ] || { echo "DEVICES names $# GPUs for $REPLICAS replicas" >&2; exit 2; }
    devices="[$(printf '"%s", ' "$@" | sed 's/, $//')]" gputag=-gpus$#
  else
    devices="[$(for _ in $(seq "$REPLICAS"); do printf '"%s", ' "$DEVICE"; done | sed 's/, $//')]"
  fi
  kv="kv_memory_gb: $KV_GB"; extra="numerics: fast"
fi
bin=$(cd "$BUILD" && pwd)/bin
worker=$bin/switchyard-worker
[ "$MODE" = sim ] && worker=$bin/switchyard-simworker
PORT=${PORT:-18410}
tag=${simtag:-}${gputag:-}
rebalance=
[ "${REBALANCE:-}" = 1 ] && rebalance=", session_rebalance: true" tag=-rebalance
[ -n "${COST_TOL:-}" ] && rebalance="$rebalance, session_cost_tolerance: $COST_TOL" tag=$tag-tol$COST_TOL
[ -n "${RECOMPUTE:-}" ] && rebalance="$rebalance, recompute_weight: $RECOMPUTE" tag=$tag-rw$RECOMPUTE
[ -n "${SESSION_LOAD:-}" ] && rebalance="$rebalance, session_load: $SESSION_LOAD" tag=$tag-$SESSION_LOAD
[ -n "${LOST_CONTEXT:-}" ] && rebalance="$rebalance, lost_context: $LOST_CONTEXT" tag=$tag-lost$LOST_CONTEXT
[ -n "${NEW_SESSION:-}" ] && rebalance="$rebalance, new_session: $NEW_SESSION" tag=$tag-new$NEW_SESSION
if [ -n "${HOST_GB:-}" ]; then  # sim: the simworker's own flag, since its tier allocates nothing
  tag=$tag-host$HOST_GB      # (the gateway checks worker.kv_host_gb against this machine's memory)
  if [ "$MODE" = sim ]; then extra="${extra%]}, --kv-host-gb, $HOST_GB]"; else kv="$kv, kv_host_gb: $HOST_GB"; fi
fi
resilience=
[ "${HEDGE:-}" = 0 ] && resilience="resilience: {hedge: false}" tag=$tag-nohedge
if [ -n "${SLOW_MS:-}" ]; then  # one replica (SLOW_REPLICA, 0) behind a faultproxy adding SLOW_MS ms
  export SLOW_MS SLOW_REPLICA=${SLOW_REPLICA:-0} SLOW_WORKER_BINARY=$worker SLOW_FAULTPROXY=$bin/switchyard-faultproxy
  worker=$PWD/bench/slow_worker.sh tag=$tag-slow$SLOW_MS
fi
MODEL=$(cd "$(dirname "$MODEL")" && pwd)/$(basename "$MODEL")
gw_pid=
mps=
if [ "${MPS:-}" = 1 ]; then  # inherited by the gateway and its workers
  [ "$MODE" = gpu ] || { echo "MPS=1 is for the GPU mode" >&2; exit 2; }
  command -v nvidia-cuda-mps-control > /dev/null || { echo "MPS=1: no nvidia-cuda-mps-control here" >&2; exit 1; }
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/sy-mps-$PORT CUDA_MPS_LOG_DIRECTORY=/tmp/sy-mps-log-$PORT
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "MPS=1: the MPS daemon did not start" >&2; exit 1; }
  mps=1 tag=$tag-mps
fi
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2> /dev/null && wait "$gw_pid" 2> /dev/null
  [ -n "$mps" ] && echo quit | nvidia-cuda-mps-control
  true
}
trap cleanup EXIT

run_policy() {
  local policy=$1 name=$1$tag
  local cfg=$OUT/agentic-$name.yaml log=$OUT/agentic-$name.gateway.log
  cat > "$cfg" <<YAML
model: $MODEL
served_model_name: agentic
listen: 127.0.0.1:$PORT
admin_listen: 127.0.0.1:$((PORT + 1))
devices: $devices
modes:
  throughput: {replicas: $REPLICAS}
default_mode: throughput
worker: {binary: $worker, max_num_seqs: $MAX_SEQS, $kv, prefill_chunk: $PREFILL_CHUNK, $extra}
startup: {stagger_s: 0, ready_timeout_s: 300}
routing: {policy: $policy$rebalance}
$resilience
YAML
  local t0=$SECONDS
  "$bin"/switchyard-gateway --config "$cfg" > "$log" 2>&1 &
  gw_pid=$!
  local ready=0
  for _ in $(seq 300); do
    ready=$(curl -sf http://127.0.0.1:$((PORT + 1))/admin/status | python3 -c \
      'import json,sys; print(sum(r["state"]=="ready" and r["kv_events_connected"] for r in json.load(sys.stdin)["replicas"]))' 2> /dev/null || echo 0)
    [ "$ready" = "$REPLICAS" ] && break
    kill -0 "$gw_pid" 2> /dev/null || break  # the gateway refused its config or died
    sleep 1
  done
  [ "$ready" = "$REPLICAS" ] || { echo "$policy: fleet not ready" >&2; tail -n 30 "$log" >&2; kill "$gw_pid" 2> /dev/null; wait "$gw_pid"; gw_pid=; return 1; }
  echo "$policy: $REPLICAS replicas ready in $((SECONDS - t0)) s"
  timeout $((${MAX_RUN_S%.*} + 60)) "$bin"/switchyard-agentic --url http://127.0.0.1:$PORT --admin-url http://127.0.0.1:$((PORT + 1)) --label "$name" \
    --seed "$SEED" --agent-types "$AGENT_TYPES" --system-tokens "$SYSTEM_TOKENS" --task-tokens "$TASK_TOKENS" \
    --tool-tokens "$TOOL_TOKENS" --reply-tokens "$REPLY_TOKENS" --turns "$TURNS" --think-s "$THINK_S" \
    --max-context "$MAX_CONTEXT" --session-rate "$RATE" --duration "$DURATION" --max-run-s "$MAX_RUN_S" \
    --json-out "$OUT/agentic-$name.json" --turns-out "$OUT/agentic-$name.turns.csv" | tee "$OUT/agentic-$name.txt"
  echo "$name: rc ${PIPESTATUS[0]}, $((SECONDS - t0)) s with startup"
  grep -h "KV host tier" "$log"  # each worker's tier: pinned in how long, or served without
  [ -f "$OUT/agentic-$name.json" ] && [ "$KEEP" != "$OUT" ] && cp "$OUT/agentic-$name.json" "$KEEP/"
  kill "$gw_pid"; wait "$gw_pid" 2> /dev/null; gw_pid=
}

for policy in $POLICIES; do run_policy "$policy"; done
ls "$KEEP"/agentic-*.json > /dev/null 2>&1 && python3 bench/agentic_plot.py "$KEEP"/agentic-*.json > "$OUT/agentic-ttft-by-turn.svg" &&
  echo "plot: $OUT/agentic-ttft-by-turn.svg"
true
