#!/usr/bin/env bash
# Issue 17: GPU power while a fleet starts, with and without the stagger. REPLICAS
# llama3-8b workers share one GPU (DEVICE); per arm the gateway starts the fleet from
# nothing while nvidia-smi samples the GPU's power every 50 ms, from 3 s before the
# gateway until 5 s after every replica is ready. Arms (ARMS): a number is
# startup.stagger_s (0: all load at once; max_parallel_loads is the replica count),
# "power" the power-aware stagger (startup.max_power_w=MAX_POWER_W, stagger 0). Prints
# per arm the idle draw, the peak and when it came, and the time to all-ready; the
# samples land in $OUT/power-ARM.csv.
#
#   (on the lent GPU machine, .devcarry carried) bash bench/startup_power.sh
#   ARMS="0 power" MAX_POWER_W=450 bash bench/startup_power.sh
#
# Env: ARMS ("0 3 power"), REPLICAS (4), DEVICE (0), KV_GB (14), MAX_POWER_W (500),
# MODEL (a llama3-8b GGUF; made at /tmp/l8.gguf if missing), BUILD (build-gpu), OUT
# (/tmp/out), CARRY (.devcarry).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}; REPLICAS=${REPLICAS:-4}; DEVICE=${DEVICE:-0}; KV_GB=${KV_GB:-14}
ARMS=${ARMS:-0 3 power}; MAX_POWER_W=${MAX_POWER_W:-500}
CARRY=${CARRY:-$PWD/.devcarry}; export CARRY
bash scripts/device_build.sh switchyard-worker switchyard-gateway > "$OUT/power-build.log" 2>&1 ||
  { tail -30 "$OUT/power-build.log"; exit 1; }
MODEL=${MODEL:-/tmp/l8.gguf}
if [ ! -f "$MODEL" ]; then
  tar -xJf "$CARRY/llama3-tiny.tar.xz" -C /tmp llama3-tiny-bf16.gguf || exit 1
  "$BUILD"/bin/switchyard-worker make-model --arch llama --preset llama3-8b --tokenizer-from /tmp/llama3-tiny-bf16.gguf \
    --out "$MODEL" > /dev/null || exit 1
fi
devices="[$(for _ in $(seq "$REPLICAS"); do printf '"%s", ' "$DEVICE"; done | sed 's/, $//')]"
gw=; smi=
cleanup() { for p in $gw $smi; do kill "$p" 2> /dev/null && wait "$p" 2> /dev/null; done; true; }
trap cleanup EXIT

for arm in $ARMS; do
  if [ "$arm" = power ]; then startup="stagger_s: 0, max_parallel_loads: 1, max_power_w: $MAX_POWER_W"
  elif [ "$arm" = 0 ]; then startup="stagger_s: 0, max_parallel_loads: $REPLICAS"
  else startup="stagger_s: $arm, max_parallel_loads: 1"; fi
  cfg=$OUT/power-$arm.yaml csv=$OUT/power-$arm.csv log=$OUT/power-$arm.gateway.log
  cat > "$cfg" <<YAML
model: $MODEL
served_model_name: power
listen: 127.0.0.1:18430
admin_listen: 127.0.0.1:18431
devices: $devices
modes:
  throughput: {replicas: $REPLICAS}
default_mode: throughput
worker: {binary: $PWD/$BUILD/bin/switchyard-worker, kv_memory_gb: $KV_GB, numerics: fast}
startup: {$startup, ready_timeout_s: 300}
YAML
  nvidia-smi -i "$DEVICE" --query-gpu=timestamp,power.draw,memory.used --format=csv,noheader,nounits -lms 50 > "$csv" &
  smi=$!
  sleep 3
  start=$(date +%s.%N)
  "$BUILD"/bin/switchyard-gateway --config "$cfg" > "$log" 2>&1 &
  gw=$!
  ready=0
  for _ in $(seq 1200); do
    ready=$(curl -sf http://127.0.0.1:18431/admin/status | python3 -c \
      'import json,sys; print(sum(r["state"]=="ready" for r in json.load(sys.stdin)["replicas"]))' 2> /dev/null || echo 0)
    [ "$ready" = "$REPLICAS" ] && break
    sleep 0.25
  done
  end=$(date +%s.%N)
  sleep 5
  kill "$gw"; wait "$gw" 2> /dev/null; gw=
  kill "$smi"; wait "$smi" 2> /dev/null; smi=
  [ "$ready" = "$REPLICAS" ] || { echo "$arm: $ready of $REPLICAS ready; log $log" >&2; tail -n 20 "$log" >&2; }
  python3 - "$csv" "$arm" "$start" "$end" <<'PY'
import csv, datetime, sys
path, arm, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
ready_s = float(sys.argv[4]) - start
rows = []
for r in csv.reader(open(path)):
    try:
        t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
        rows.append((t - start, float(r[1]), float(r[2])))
    except (ValueError, IndexError):
        pass
idle = [w for t, w, _ in rows if t < 0]
peak_t, peak_w, _ = max(rows, key=lambda x: x[1]) if rows else (0, float("nan"), 0)
print(f"{arm}: {len(rows)} samples; idle {sum(idle) / max(len(idle), 1):.0f} W; peak {peak_w:.0f} W at {peak_t:.1f} s; "
      f"all ready at {ready_s:.1f} s")
PY
  sleep 10  # the workers' memory is freed and the GPU settles before the next arm
done
