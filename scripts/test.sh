#!/usr/bin/env bash
# The test command: set up, build, run every test (CTest), then, in a second build with
# ASan and UBSan, run the unit and gateway process suites again and each libFuzzer
# target for a bounded time. tests/README.md ("CI") says what keeps it inside 30 minutes.
# Needs ../shared (the fixtures) beside the project.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
[ -d ../shared/fixtures ] || { echo "test: ../shared/fixtures is missing (the reference models)"; exit 1; }

# Sanitizers: one clang build (build-asan) with ASan and UBSan in every library, UB
# fatal, with line tables only (enough for symbolized reports), at -O0 but for the code
# that computes (SY_HOT_FLAGS in CMakeLists.txt: kernels, engine, backends, tokenizer,
# template interpreter, model readers) at -O1: -O0 compiles the HTTP, gateway and
# protocol code in about 60 % of the time, and the suites that compute keep their
# speed (the template limits test took 11 s at -O1 and 123 s at -O0). It runs the unit
# suites again, the gateway's process suites (integration, limits, resilience: a real
# gateway over real or simulated workers, all three programs ASan builds too), then the
# libFuzzer targets, FUZZ_JOBS at a time (nproc), each for FUZZ_SECONDS on a copy of its
# checked-in corpus. libFuzzer's coverage instrumentation goes only into the libraries
# the fuzzers link (sy_common, sy_http), not into what the tests alone use.
# Every ASan, LSan and UBSan report, also one from a gateway or worker process that a
# test started (a gateway may retry past a worker that died of one), goes to a file in
# build-asan/sanitizer-logs; any report there (an ERROR or a runtime error, not a mere
# warning) fails the run.
# Left out of the unit run: the worker server suite, the gateway's real-failover suite
# (issue 13's matrix on real CPU workers, 150 s in Release), bench against a worker, the
# dashboard in Chromium and the worker CLI tests, which start the worker binary dozens
# of times (about 5 minutes under ASan); the Release run above covers them. The bench
# tools' own suite is left out too, and so are the engine-level failover, tensor- and
# context-parallel shape checks (CpuFailover.*, CpuTensorParallelShapes.*,
# CpuContextParallelLong.*): they are numerics checks that sample over a 151,936-token
# vocabulary thousands of times or run 3,000-token prompts (344 s and 186 s under ASan)
# on code paths the other ASan suites run with short prompts.
fuzz_seconds=${FUZZ_SECONDS:-45}
fuzz_jobs=${FUZZ_JOBS:-$(nproc)}
launcher=()
if command -v ccache >/dev/null 2>&1; then  # scripts/setup.sh says why these settings
  launcher=("-DCMAKE_C_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=true;CCACHE_DEPEND=true;ccache"
            "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=true;CCACHE_DEPEND=true;ccache")
fi
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_UNITY=ON \
  -DCMAKE_C_FLAGS_RELEASE="-O0 -gline-tables-only" -DCMAKE_CXX_FLAGS_RELEASE="-O0 -gline-tables-only" \
  -DSWITCHYARD_SANITIZE=ON -DSWITCHYARD_FUZZ=ON -DSWITCHYARD_CUDA=OFF -DBUILD_TESTING=ON -DSY_TEST_FLAGS= -DSY_HOT_FLAGS=-O1 \
  "${launcher[@]}" >/dev/null
targets=(sy_fuzz_gguf sy_fuzz_openai_request sy_fuzz_http_request sy_fuzz_sse_relay)
suites=(sy_common_tests sy_sse_parser_test sy_http_server_test sy_protocol_test sy_policy_tests sy_worker_tests
        sy_gateway_integration_test sy_gateway_limits_test sy_gateway_resilience_test)
# The sanitizer build runs at the lowest priority while the Release suites run: many of
# those wait on processes, sockets and timers, and the build takes the idle cores
# (nice 19 yields the CPU to them whenever they want it).
setsid -w nice -n 19 cmake --build build-asan -j"$(nproc)" --target "${targets[@]}" "${suites[@]}" \
  >build-asan/build.log 2>&1 &
asan_build=$!
trap 'kill -- -"$asan_build" 2>/dev/null || true' EXIT
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
echo "test: waiting for build-asan"
if ! wait "$asan_build"; then
  tail -n 100 build-asan/build.log
  echo "test: the build-asan build failed (full log: build-asan/build.log)"
  exit 1
fi
trap - EXIT
san_logs="$PWD/build-asan/sanitizer-logs"
rm -rf "$san_logs" && mkdir -p "$san_logs"
status=0
ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:log_path="$san_logs/asan" \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path="$san_logs/ubsan" \
  ctest --test-dir build-asan -L "^($(IFS='|'; echo "${suites[*]}"))\$" -E '^(WorkerCli|CpuFailover|CpuTensorParallelShapes|CpuContextParallelLong)\.' \
  --output-on-failure -j"$(nproc)" --timeout 900 || status=$?
findings=0
for r in "$san_logs"/*; do
  [ -e "$r" ] || continue
  echo "== sanitizer output $r"; head -n 80 "$r"
  grep -qE "ERROR: |runtime error:" "$r" && findings=$((findings + 1))
done
if [ "$findings" -gt 0 ]; then
  echo "test: $findings sanitizer report(s) from the ASan/UBSan suites (above; files in $san_logs)"
  exit 1
fi
[ "$status" -eq 0 ] || exit "$status"

# One fuzzer a core: run FUZZ_JOBS at once, each for fuzz_seconds of wall time.
run_fuzzer() {
  local t=$1 corpus log="build-asan/$1.log"
  corpus=$(mktemp -d)
  cp tests/fuzz/corpus/"${t#sy_fuzz_}"/* "$corpus"/
  local rc=0
  build-asan/bin/"$t" "$corpus" -max_total_time="$fuzz_seconds" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  rm -rf "$corpus"
  return "$rc"
}
failed=()
for ((i = 0; i < ${#targets[@]}; i += fuzz_jobs)); do
  batch=("${targets[@]:i:fuzz_jobs}")
  pids=()
  echo "fuzz: ${batch[*]} for ${fuzz_seconds}s"
  for t in "${batch[@]}"; do run_fuzzer "$t" & pids+=($!); done
  for j in "${!batch[@]}"; do
    t=${batch[$j]}
    if wait "${pids[$j]}"; then
      echo "fuzz: $t"; grep -E "^(Done|stat::number_of_executed_units)" "build-asan/$t.log" || true
    else
      tail -n 60 "build-asan/$t.log"
      echo "fuzz: $t failed (full log: build-asan/$t.log; the crashing input is in the working directory)"
      failed+=("$t")
    fi
  done
done
[ ${#failed[@]} -eq 0 ] || exit 1
echo "test: all passed"
