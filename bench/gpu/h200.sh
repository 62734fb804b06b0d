#!/usr/bin/env bash
# Build, test and measure fourfold on the GPU machine (see README "GPU machine"). Stages, in the
# order given: build, test, softmax, ... Logs and results land in $OUT (at most 8 files).
# Needs .deps/ from bench/gpu/stage_deps.sh carried along, and FOURFOLD_GIT_SHA/DIRTY set by the
# caller (the device's copy of the tree has no .git).
set -uo pipefail
OUT=${OUT:-/tmp/fourfold-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
BUILD=build-gpu
BIN=$BUILD/fourfold
DB=$OUT/h200.db
export PYTHONUNBUFFERED=1

stage_build() {
    local prefix
    if [ ! -f .deps/include/sqlite3.h ]; then
        echo "build: no .deps/include/sqlite3.h: run bash bench/gpu/stage_deps.sh on the CPU machine and carry .deps"
        return 1
    fi
    prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
    cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_CUDA_ARCHITECTURES=90a -DFOURFOLD_FMT_HEADER_ONLY=ON -DSQLite3_INCLUDE_DIR="$PWD/.deps/include" \
        -DSQLite3_LIBRARY=/lib/x86_64-linux-gnu/libsqlite3.so.0 \
        -DFOURFOLD_GIT_SHA="${FOURFOLD_GIT_SHA:-unknown}" -DFOURFOLD_GIT_DIRTY="${FOURFOLD_GIT_DIRTY:--1}" \
        >"$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; return 1; }
    # FOURFOLD_NINJA_ARGS="-k 0": go on past a failing target (the Python module) and say so
    ninja -C $BUILD ${FOURFOLD_NINJA_ARGS:-} >"$OUT/build.log" 2>&1 || {
        grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60
        [ -x "$BIN" ] && [ -x "$BUILD/tests/fourfold_gpu_tests" ] && [ -n "${FOURFOLD_NINJA_ARGS:-}" ] || return 1
        echo "build: some targets failed (above); the CLI and the gpu tests were built"
    }
    echo "build ok"
}

stage_test() {
    ctest --test-dir $BUILD --output-on-failure --timeout 600 -j 8 >"$OUT/ctest.log" 2>&1
    local rc=$?
    grep -E "tests passed|Failed|\*\*\*" "$OUT/ctest.log" | head -30
    return $rc
}

# Each workload area keeps its stages in bench/gpu/stages/<area>.sh, defining stage_<name>.
for f in bench/gpu/stages/*.sh; do source "$f"; done

for stage in "$@"; do
    echo "== $stage"
    "stage_$stage" || echo "!! stage $stage failed"
done
