#!/usr/bin/env bash
# Configures build-gpu/ on the lent GPU machine and builds the named targets.
#
#   scripts/device_build.sh TARGET...      (from anywhere; builds with every core)
#
# That machine's image (Ubuntu 24.04, CUDA 13) has Boost, nlohmann-json, yaml-cpp,
# OpenBLAS and GoogleTest, but no xxHash or ICU development files. They travel in
# .devcarry/ (git-ignored; send it with the device tool's carry: [".devcarry"]):
#   libxxhash-dev_*.deb            headers (the image has the libxxhash.so.0 runtime)
#   libicu72_*.deb                 ICU 72 runtime (the image's ICU 74 has no headers)
#   libicu-dev-72-headers.tar.xz   usr/include/unicode and the unversioned .so links
#   *-tiny.tar.xz                  the fixture archives (../shared does not travel)
# scripts/devcarry.sh fills it (run it here). They are unpacked under build-gpu/deps,
# never into /. Binaries find the carried ICU through their RPATH (kept transitive with
# --disable-new-dtags); build-gpu/env.sh sets LD_LIBRARY_PATH for anything else.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
carry=${CARRY:-$root/.devcarry}
build=$root/build-gpu
deps=$build/deps
[ $# -gt 0 ] || { echo "usage: $0 TARGET..." >&2; exit 2; }
mkdir -p "$deps"
cmake_args=()

if [ ! -f /usr/include/xxhash.h ] && [ ! -f "$deps/xxhash/include/xxhash.h" ]; then
  ls "$carry"/libxxhash-dev_*.deb > /dev/null || { echo "no xxhash.h and no .devcarry/libxxhash-dev_*.deb" >&2; exit 1; }
  dpkg -x "$carry"/libxxhash-dev_*.deb "$deps/xxhash-deb"
  mkdir -p "$deps/xxhash/include" "$deps/xxhash/lib/pkgconfig"
  cp "$deps"/xxhash-deb/usr/include/*.h "$deps/xxhash/include/"
  ln -sf "$(ls /usr/lib/x86_64-linux-gnu/libxxhash.so.0)" "$deps/xxhash/lib/libxxhash.so"
  cat > "$deps/xxhash/lib/pkgconfig/libxxhash.pc" <<PC
prefix=$deps/xxhash
includedir=\${prefix}/include
libdir=\${prefix}/lib
Name: xxhash
Description: xxHash headers carried for the device build
Version: 0.8.1
Libs: -L\${libdir} -lxxhash
Cflags: -I\${includedir}
PC
fi
[ -d "$deps/xxhash" ] && export PKG_CONFIG_PATH=$deps/xxhash/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}

libdir=
if [ ! -d /usr/include/unicode ]; then
  icu=$deps/icu/usr
  if [ ! -f "$icu/include/unicode/uversion.h" ]; then
    dpkg -x "$carry"/libicu72_*.deb "$deps/icu"
    tar -xJf "$carry/libicu-dev-72-headers.tar.xz" -C "$deps/icu"
  fi
  libdir=$icu/lib/x86_64-linux-gnu
  cmake_args+=(-DICU_ROOT="$icu" -DICU_INCLUDE_DIR="$icu/include" -DICU_UC_LIBRARY_RELEASE="$libdir/libicuuc.so"
               -DICU_I18N_LIBRARY_RELEASE="$libdir/libicui18n.so" -DICU_DATA_LIBRARY_RELEASE="$libdir/libicudata.so"
               -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags)
fi
echo "export LD_LIBRARY_PATH=${libdir}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" > "$build/env.sh"

# The fixtures: ../shared/fixtures where it exists, else the carried archives.
if [ ! -d "$root/../shared/fixtures" ]; then
  mkdir -p "$build/shared/fixtures"
  for f in "$carry"/*-tiny.tar.xz; do ln -sf "$f" "$build/shared/fixtures/"; done
  cmake_args+=(-DSY_SHARED_DIR="$build/shared")
fi

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_CUDA=ON "${cmake_args[@]}" > "$build/configure.log" ||
  { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target "$@"
