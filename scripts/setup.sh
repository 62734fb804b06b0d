#!/usr/bin/env bash
# fourfold on a fresh Debian 12 machine: dependencies from apt, a Release build, then
#   run   the main job: the smoke suite on the CPU into ./fourfold.db, printing its ledgers
#   test  the test suite (ctest; GPU tests carry the label gpu and are left out without a GPU)
# Idempotent: installed packages are not fetched again and the build is incremental.
set -euo pipefail
mode=${1:-run}
case "$mode" in run | test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."

packages=(build-essential cmake ninja-build git pkg-config
          libtorch-dev nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev
          googletest libgtest-dev
          # the Python package (python/, issue 17): Debian's python3-torch links the system
          # libtorch the build uses; pytest runs its tests, pandas is optional at import
          python3-dev pybind11-dev python3-torch python3-pytest python3-pandas)
# the report's browser test (ctest label `browser`) loads the HTML report in headless Chromium
# the format check (scripts/check_format.sh) runs Debian's clang-format, the lint
# (scripts/check_tidy.sh) Debian's clang-tidy, and the parsers' libFuzzer targets (fuzz/,
# FOURFOLD_FUZZ) build with Debian's clang
if [ "$mode" = test ]; then packages+=(chromium clang clang-format clang-tidy); fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    echo "fourfold: installing ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# formatting first: it takes a second and says at once what a 10-minute build would not
if [ "$mode" = test ]; then bash scripts/check_format.sh; fi

jobs=$(nproc)
fuzz=OFF # the test mode builds the fuzz targets too: ctest runs them briefly (label fuzz)
[ "$mode" = test ] && fuzz=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFOURFOLD_FUZZ=$fuzz \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
cmake --build build --parallel "$jobs"

if [ "$mode" = run ]; then
    exec ./build/fourfold run --suite smoke --device cpu --db ./fourfold.db
fi
# clang-tidy over the build's C++ units (.clang-tidy; ~28 min on 2 idle cores): a finding fails
if [ "$mode" = test ]; then bash scripts/check_tidy.sh build; fi
labels=()
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || labels=(-LE gpu)
exec ctest --test-dir build --output-on-failure --timeout 900 -j "$jobs" "${labels[@]}"
