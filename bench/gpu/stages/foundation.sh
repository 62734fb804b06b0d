# Stages for the foundation (issue 2) and the correctness/memory ledgers (issue 4).
# Variables from h200.sh: BIN, DB, OUT, BUILD.

stage_env() { $BIN env --device cuda --json >"$OUT/env.json"; }

# softmax 1x128256 fp32 in event and graph modes (cold, and graph hot for the like-for-like
# comparison with a replayed torch graph), beside torch.utils.benchmark and
# triton.testing.do_bench measured in the same call.
stage_softmax() {
    for mode in event graph; do
        $BIN run --workload softmax --shape 1x128256 --dtype fp32 --device cuda --timing $mode \
            --label softmax-$mode --db "$DB" --quiet
    done
    $BIN run --workload softmax --shape 1x128256 --dtype fp32 --device cuda --timing graph \
        --cache hot --label softmax-graph-hot --db "$DB" --quiet --ledgers op_time
    python3 bench/softmax_reference.py --rows 1 --vocab 128256 --dtype fp32
}

# Memory levels for the operator workloads (driver >= reserved >= allocated) and the sampler rate.
stage_memory() {
    $BIN run --workload softmax --shape 1x128256,64x128256 --dtype fp32 --device cuda \
        --ledgers memory --label mem-softmax --db "$DB" --quiet
    $BIN run --workload linear_decode --shape 1x4096x4096,1x128256x4096 --dtype bf16 --device cuda \
        --ledgers memory --label mem-linear --db "$DB" --quiet
}

# Diagnostics for a crash seen only on the GPU image: which SQLite the test binary binds, and
# where the store tests stop (cuda-gdb debugs host code; there is no gdb there).
stage_debug_store() {
    local t=$BUILD/tests/fourfold_tests
    LD_DEBUG=bindings LD_DEBUG_OUTPUT=$OUT/ld "$t" --gtest_filter='store.round_trip*' >/dev/null 2>&1
    grep -h "symbol \`sqlite3_open_v2'\|symbol \`sqlite3_prepare_v2'" $OUT/ld.* | head -5
    rm -f $OUT/ld.*
    timeout 120 cuda-gdb -batch -ex run -ex bt --args "$t" --gtest_filter='store.round_trip*' 2>&1 | tail -25
}

# Issue 4's proof, with its figures printed: 1 GiB from cudaMalloc held outside the caching
# allocator must show at the driver level within 5 % and leave the allocator peaks unchanged.
stage_outside() {
    $BUILD/tests/fourfold_gpu_tests --gtest_filter='cuda.memory_outside*:cuda.stock_passes*' 2>&1 |
        grep -E "outside_allocator|driver level|OK|FAILED|Failure"
}

# The memory probe the binary picks (NVML per-process needs a CUDA context first) and the
# baseline it starts from (cuBLAS workspaces cleared before a memory pass): the driver-level
# column must read "NVML per-process ..." and the baseline allocated bytes stay near zero.
stage_probe() {
    $BIN run --workload softmax --shape 1x128256 --dtype fp32 --device cuda --ledgers memory \
        --label probe --db "$DB" 2>&1 | sed -n '/^memory:/,/^$/p'
    $BIN run --workload linear_decode --shape 1x4096x4096 --dtype bf16 --device cuda --ledgers memory \
        --label probe-linear --db "$DB" --quiet >/dev/null 2>&1
    $BIN export --format json --run probe --run probe-linear --db "$DB" | python3 -c '
import json, sys
for r in json.load(sys.stdin)["records"]:
    if r["ledger"] != "memory":
        continue
    f = r["figures"]
    print(r["workload"], r["variant"], "| driver level:", f["driver_level"], "| device-wide:", f["device_wide"],
          "| baseline MiB (driver/reserved/allocated):",
          *(round(f["baseline"][k] / 2**20, 2) for k in ("driver_bytes", "reserved_bytes", "allocated_bytes")),
          "| sampler Hz:", round(f["sampler"]["achieved_hz"]))'
}
