#!/usr/bin/env bash
# Fills .devcarry/ (git-ignored) with what scripts/device_build.sh needs on the lent GPU
# machine, whose image has no xxHash or ICU headers and no ../shared: Debian 12's
# libxxhash-dev and libicu72 packages, ICU 72's headers and unversioned .so links (from
# libicu-dev) as a tarball, and the fixture archives of ../shared/fixtures (the build's
# fixture stamps want each). Run here, on Debian 12, from anywhere; safe to run again.
# Then carry it: the device tool's run with carry [".devcarry"] (about 62 MB of the 64 MiB
# a call may send, so keep the tree small).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.devcarry
mkdir -p "$out"
grep -qx '/.devcarry/' "$root/.git/info/exclude" 2> /dev/null || echo /.devcarry/ >> "$root/.git/info/exclude"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download libxxhash-dev libicu72 libicu-dev > /dev/null)
cp "$work"/libxxhash-dev_*.deb "$work"/libicu72_*.deb "$out/"
dpkg -x "$work"/libicu-dev_*.deb "$work/icu"
(cd "$work/icu" && tar -cJf "$out/libicu-dev-72-headers.tar.xz" usr/include/unicode usr/lib/x86_64-linux-gnu/libicu*.so)
cp -f "$root"/../shared/fixtures/*-tiny.tar.xz "$out/"
du -sh "$out"
