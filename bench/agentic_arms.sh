#!/usr/bin/env bash
# Several arms of bench/agentic_bench.sh in one call, one after the other on the same
# machine and seed: each arm a policy with its own settings (agentic_bench.sh's env).
#
#   SEED=1 ARMS="prefix:HOST_GB=16 session_affinity:HOST_GB=16 prefix:HOST_GB=16,MPS=1" \
#     OUT=$OUT bash bench/agentic_arms.sh
#
# Defaults as the headline runs: RATE=0.2 DURATION=150 MAX_RUN_S=150. The arms run in a
# folder of their own (WORK, default /tmp/agentic-arms/run-TIME); everything they wrote
# (reports, per-turn CSVs, gateway logs with the workers' output, configs) is packed into
# $OUT/agentic-arms-seedSEED.tar.gz, and each arm's text report is also copied to $OUT,
# so that a machine that returns few files returns all of it.
# Then it lists, per arm, the new sessions placed on a replica holding more live sessions
# than the least loaded (bench/session_placement.py).
set -u
cd "$(dirname "$0")/.."
[ -n "${ARMS:-}" ] || { echo "ARMS is empty: policy[:VAR=VAL,...] ..." >&2; exit 2; }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
WORK=${WORK:-/tmp/agentic-arms/run-$(date +%s)}; mkdir -p "$WORK"
export RATE=${RATE:-0.2} DURATION=${DURATION:-150} MAX_RUN_S=${MAX_RUN_S:-150} SEED=${SEED:-1}
for arm in $ARMS; do
  policy=${arm%%:*} vars=
  [ "$arm" != "$policy" ] && vars=${arm#*:}
  date -u +"%H:%M:%S arm $arm, seed $SEED"
  (
    for kv in ${vars//,/ }; do export "${kv?}"; done
    OUT=$WORK POLICIES=$policy bash bench/agentic_bench.sh
  ) 2>&1 | grep -v '^plot:'
  cp "$WORK"/agentic-*.txt "$OUT"/ 2> /dev/null
done
# Where new sessions went against the live sessions per replica (bench/session_placement.py).
for csv in "$WORK"/agentic-*.turns.csv; do
  [ -f "$csv" ] && python3 bench/session_placement.py "$csv" | sed "s|$WORK/||"
done
tar -czf "$OUT/agentic-arms-seed$SEED.tar.gz" -C "$WORK" --exclude agentic-build.log . &&
  echo "packed: $OUT/agentic-arms-seed$SEED.tar.gz"
