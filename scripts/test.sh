#!/usr/bin/env bash
# The test command: set up, build, run every test (CTest), then run each libFuzzer target
# for a bounded time with ASan/UBSan. Needs ../shared (the fixtures) beside the project.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
[ -d ../shared/fixtures ] || { echo "test: ../shared/fixtures is missing (the reference models)"; exit 1; }
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900

# Fuzzing: a clang build of the fuzz targets only, each run for FUZZ_SECONDS on a copy
# of its checked-in corpus.
fuzz_seconds=${FUZZ_SECONDS:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSWITCHYARD_FUZZ=ON -DSWITCHYARD_CUDA=OFF -DBUILD_TESTING=ON >/dev/null
targets=(sy_fuzz_gguf sy_fuzz_openai_request)
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
for t in "${targets[@]}"; do
  corpus=$(mktemp -d)
  cp tests/fuzz/corpus/"${t#sy_fuzz_}"/* "$corpus"/
  echo "fuzz: $t for ${fuzz_seconds}s"
  log="build-fuzz/$t.log"
  if ! build-fuzz/bin/"$t" "$corpus" -max_total_time="$fuzz_seconds" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t failed (full log: $log; the crashing input is in the working directory)"
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units)" "$log" || true
  rm -rf "$corpus"
done
echo "test: all passed"
