#!/usr/bin/env bash
# The test command: set up, build, run every test (CTest), then, in a second build with
# ASan and UBSan, run the unit suites again and each libFuzzer target for a bounded time.
# Needs ../shared (the fixtures) beside the project.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
[ -d ../shared/fixtures ] || { echo "test: ../shared/fixtures is missing (the reference models)"; exit 1; }
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900

# Sanitizers: one clang build (build-asan) with ASan and UBSan in every library, UB
# fatal, at -O1. It runs the unit suites again, then each libFuzzer target for
# FUZZ_SECONDS on a copy of its checked-in corpus. Left out of the unit run: the suites
# that drive whole processes over HTTP (worker server, gateway integration, limits and
# resilience, bench against a worker, the dashboard in Chromium) and the worker CLI
# tests, which start the worker binary dozens of times (about 5 minutes under ASan); the
# Release run above covers them. The bench tools' own suite is left out too, and so are
# the engine-level failover and tensor-parallel shape checks (CpuFailover.*,
# CpuTensorParallelShapes.*): they are numerics checks that sample over a 151,936-token
# vocabulary thousands of times (344 s for one of them under ASan) on code paths the
# other ASan suites run too.
fuzz_seconds=${FUZZ_SECONDS:-45}
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" \
  -DSWITCHYARD_SANITIZE=ON -DSWITCHYARD_FUZZ=ON -DSWITCHYARD_CUDA=OFF -DBUILD_TESTING=ON >/dev/null
targets=(sy_fuzz_gguf sy_fuzz_openai_request sy_fuzz_http_request sy_fuzz_sse_relay)
suites=(sy_common_tests sy_sse_parser_test sy_http_server_test sy_protocol_test sy_policy_tests sy_worker_tests)
cmake --build build-asan -j"$(nproc)" --target "${targets[@]}" "${suites[@]}"
ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L "^($(IFS='|'; echo "${suites[*]}"))\$" -E '^(WorkerCli|CpuFailover|CpuTensorParallelShapes)\.' \
  --output-on-failure -j"$(nproc)" --timeout 900
for t in "${targets[@]}"; do
  corpus=$(mktemp -d)
  cp tests/fuzz/corpus/"${t#sy_fuzz_}"/* "$corpus"/
  echo "fuzz: $t for ${fuzz_seconds}s"
  log="build-asan/$t.log"
  if ! build-asan/bin/"$t" "$corpus" -max_total_time="$fuzz_seconds" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t failed (full log: $log; the crashing input is in the working directory)"
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units)" "$log" || true
  rm -rf "$corpus"
done
echo "test: all passed"
