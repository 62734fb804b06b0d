# Stages for fourfold's native kernels (issue 13). Variables from h200.sh: BIN, DB, OUT, BUILD.
#
#   ptxas          registers, shared memory, stack and spills of every kernel (nvcc -Xptxas -v on
#                  the kernels alone, sm_90a), $OUT/ptxas.txt and a one-line-per-kernel summary
#   native_tests   the gpu tests of the native kernels (edge sizes, special values, views, graph
#                  capture, facts, memory, the call's stream) through fourfold's ledgers
#   sanitizer      compute-sanitizer memcheck and racecheck over the same tests at small sizes
#                  (FOURFOLD_NATIVE_TEST_SIZES=small), $OUT/sanitizer.txt
#   native_quick   the issue's five key cases, stock, generic and native in one run each
#   native_article the article suite's softmax, linear_decode and pad jobs with every variant in
#                  one run (label native-article), then compare against stock; NATIVE_MIN_TIME
#                  shortens the stopping rule's minimum so the run fits one device call
NATIVE_MIN_TIME=${NATIVE_MIN_TIME:-0.1}

stage_ptxas() {
    local f
    : >"$OUT/ptxas.txt"
    for f in src/fourfold/kernels/*.cu; do
        nvcc -std=c++17 -O3 --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a -Isrc \
            -Xptxas=-v -c "$f" -o /tmp/ptxas-$$.o >>"$OUT/ptxas.txt" 2>&1 || echo "ptxas: $f failed"
    done
    python3 - "$OUT/ptxas.txt" <<'PY'
import re, subprocess, sys
fn = None; rows = []
for line in open(sys.argv[1]):
    m = re.search(r"Compiling entry function '(\S+)'", line)
    if m:
        fn = m.group(1)
        for tool in ("cu++filt", "c++filt"):
            try:
                fn = subprocess.run([tool, m.group(1)], capture_output=True, text=True).stdout.strip() or fn
                break
            except OSError:
                pass
        fn = re.sub(r"fourfold::kernels::\(anonymous namespace\)::", "", fn).split("(")[0]
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and fn: rows.append([fn, None, None, m.group(1), m.group(2), m.group(3)])
    m = re.search(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?$", line.strip())
    if m and rows and rows[-1][1] is None: rows[-1][1], rows[-1][2] = m.group(1), m.group(2) or "0"
spills = [r for r in rows if r[4] != "0" or r[5] != "0"]
print(f"ptxas: {len(rows)} kernels, {len(spills)} with spills")
for r in spills: print("  spill:", r)
with open(sys.argv[1].replace(".txt", "_table.md"), "w") as out:
    out.write("| kernel | registers | smem B | stack B | spill stores B | spill loads B |\n|---|---:|---:|---:|---:|---:|\n")
    for r in rows: out.write("| " + " | ".join(str(x) for x in r) + " |\n")
PY
}

# Nsight Compute on one call of each native kernel and of stock pad: duration, memory
# throughput, occupancy (the clocks left as they are).
stage_ncu_native() {
    local db=/tmp/ncu-$$.db
    : >"$OUT/ncu.txt"
    for job in "pad --shape 1x96x5x130x130 --dtype bf16 --variants native,stock" \
               "softmax --shape 1x128256 --dtype fp32 --variants native" \
               "linear_decode --shape 1x4096x4096,8x4096x4096 --dtype bf16 --variants native"; do
        timeout 120 ncu --clock-control none --kernel-name regex:"pad|softmax|gemv|elementwise|fill|copy" \
            --launch-count 12 --section SpeedOfLight --section MemoryWorkloadAnalysis \
            --section Occupancy --section LaunchStats \
            $BIN run --workload $job --ledgers correctness --device cuda --db $db --quiet \
            >>"$OUT/ncu.txt" 2>&1
    done
    grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" \
        "$OUT/ncu.txt" | head -90
}

stage_native_tests() {
    $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.*:cuda.operator_workloads*:cuda.stock_passes*' \
        >"$OUT/native_tests.txt" 2>&1
    local rc=$?
    grep -E "^\[  (PASSED|FAILED) |native: |stock softmax|allocated above|Failure|Expected|Which is|verdict" \
        "$OUT/native_tests.txt" | head -60
    return $rc
}

stage_sanitizer() {
    local tool rc=0
    : >"$OUT/sanitizer.txt"
    for tool in ${SANITIZER_TOOLS:-memcheck racecheck}; do
        # fourfold's kernels only (kns: a substring of the mangled name): the stock variants'
        # cuBLAS kernels are not ours to judge, and instrumenting them costs minutes
        FOURFOLD_NATIVE_TEST_SIZES=small timeout "${SANITIZER_LIMIT_S:-150}" compute-sanitizer --tool $tool --error-exitcode 9 \
            --kernel-name kns=fourfold \
            $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='native.*:-native.memory*:native.a_variant_is_handed*' >>"$OUT/sanitizer.txt" 2>&1
        local r=$?
        echo "compute-sanitizer $tool: exit $r"
        [ $r -eq 0 ] || rc=$r
    done
    grep -E "ERROR SUMMARY|Invalid|Race|========= [A-Z]" "$OUT/sanitizer.txt" | sort | uniq -c | head -20
    return $rc
}

stage_native_quick() {
    $BIN run --workload softmax --shape 1x128256,1x262144,64x128256 --dtype fp32 --device cuda \
        --label native-quick --db "$DB" --quiet --ledgers op_time,correctness >"$OUT/native_quick.txt" 2>&1
    $BIN run --workload linear_decode --shape 1x4096x4096,1x768x2048,1x128256x4096,1x14336x4096,8x4096x4096,1x5120x5120,1x6144x4096 \
        --dtype bf16 --device cuda --label native-quick --db "$DB" --quiet --ledgers op_time,correctness \
        >>"$OUT/native_quick.txt" 2>&1
    $BIN run --workload linear_decode --shape 1x4096x4096,1x768x2048 --param bias=true \
        --dtype bf16 --device cuda --label native-quick --db "$DB" --quiet --ledgers op_time \
        >>"$OUT/native_quick.txt" 2>&1
    $BIN run --workload pad --shape 1x96x5x130x130,1x128x3x64x64 --dtype bf16 --device cuda \
        --label native-quick --db "$DB" --quiet --ledgers op_time,correctness,memory >>"$OUT/native_quick.txt" 2>&1
    grep -E "native|stock|generic" "$OUT/native_quick.txt" | grep -E "µs|PASS|FAIL" | head -60
    sed -n '/^speed-up of/,/^$/p' "$OUT/native_quick.txt"
}

stage_native_article() {
    local t0=$SECONDS
    timeout -s INT "${NATIVE_ARTICLE_LIMIT_S:-420}" $BIN run --suite article --workload softmax,linear_decode,pad --device cuda \
        --min-time "$NATIVE_MIN_TIME" --label native-article --db "$DB" --quiet >"$OUT/native_article.txt" 2>&1
    echo "native article run: exit $? after $((SECONDS - t0)) s"
    grep -E "^records:|^device" "$OUT/native_article.txt"
    sed -n '/^speed-up of/,/^$/p' "$OUT/native_article.txt"
    $BIN compare native-article --baseline-variant stock --db "$DB" >"$OUT/native_compare.txt" 2>&1
    echo "compare native-article --baseline-variant stock: exit $?"
    $BIN export --format json --run native-article --db "$DB" >"$OUT/native_article.json"
    python3 bench/gpu/native_table.py "$OUT/native_article.json" | tee "$OUT/native_table.md" | tail -14
}

# T = 2..8 tokens over 16 of the layer shapes spread by size (the GEMV's multi-token target).
# The 16 layer shapes of the 2..8-token GEMV sweeps at 2, 4 and 8 tokens, for --shape (the token
# count is the shape's first dimension: --shape and --param tokens are one or the other).
native_token_shapes() {
    local shapes="" t nk
    for t in 2 4 8; do
        for nk in 768x2048 1024x4096 2048x2048 4096x4096 2560x4096 14336x4096 4096x14336 8192x8192 \
            3072x3072 5120x5120 151936x1024 128256x4096 1024x1024 6144x2048 17408x5120 25600x5120; do
            shapes=$shapes${shapes:+,}${t}x$nk
        done
    done
    echo "$shapes"
}
stage_native_tokens() {
    local shapes
    shapes=$(native_token_shapes)
    timeout -s INT 300 $BIN run --workload linear_decode --shape "$shapes" --dtype bf16 \
        --device cuda --min-time "$NATIVE_MIN_TIME" --ledgers op_time,correctness --label native-tokens \
        --db "$DB" --quiet >"$OUT/native_tokens.txt" 2>&1
    echo "native tokens run: exit $?"
    $BIN export --format json --run native-tokens --db "$DB" >"$OUT/native_tokens.json"
    python3 bench/gpu/native_table.py "$OUT/native_tokens.json" | tail -6
}

# Where racecheck's "Internal Sanitizer Error ... hardware exception" starts: the GEMV edge shapes
# of tests/test_native_cuda.cpp in ONE process (fourfold run, every job a record, no isolation),
# racecheck over fourfold's kernels only; then the gtest alone with device backtraces.
stage_sanitizer_gemv() {
    local shapes=1x1x1,1x1x4096,1x4096x1,3x5x7,1x8x4096,1x768x2048,2x1024x4095,8x1000x1000
    shapes=$shapes,1x4096x4096,4x14336x4096,8x2048x768
    : >"$OUT/sanitizer_gemv.txt"
    for t in bf16 fp16; do
        FOURFOLD_NATIVE_TEST_SIZES=small timeout 100 compute-sanitizer --tool racecheck \
            --kernel-name kns=fourfold --show-backtrace device \
            $BIN run --workload linear_decode --shape "$shapes" --param bias=false,true --dtype $t \
            --variants native --ledgers correctness --device cuda --no-isolate --db /tmp/rc-$$.db \
            >>"$OUT/sanitizer_gemv.txt" 2>&1
        echo "racecheck fourfold run linear_decode $t: exit $?"
    done
    grep -E "Internal|hazard|RACECHECK SUMMARY|failed|FAIL|error" "$OUT/sanitizer_gemv.txt" | sort | uniq -c | head -30
}

# Issue 13's open question from stop 21: the native GEMV 2-5 % behind cuBLAS at 28672x4096 and
# 4096x14336 (bf16, one token). Both variants' kernels under Nsight Compute, one call each (the
# correctness pass), with the sections that say where a streaming kernel loses: DRAM throughput,
# the warps' stall reasons, the L2 and the tail of the grid. About 1.5 minutes.
stage_ncu_gemv_vs_cublas() {
    local db=/tmp/ncu-gemv-$$.db
    : >"$OUT/ncu_gemv.txt"
    local shape
    for shape in 1x28672x4096 1x4096x14336; do
        # the kernels of the two variants only (the correctness pass fills and copies first)
        timeout 60 ncu --clock-control none --launch-count 4 --kernel-name regex:"gemv|nvjet|gemm|cutlass" \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
            --section LaunchStats --section Occupancy \
            $BIN run --workload linear_decode --shape $shape --dtype bf16 --variants stock,native \
            --ledgers correctness --device cuda --no-isolate --db $db --quiet >>"$OUT/ncu_gemv.txt" 2>&1
    done
    grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Grid Size|Waves Per SM|Stall|Warp Cycles Per Issued" \
        "$OUT/ncu_gemv.txt" | head -80
    rm -f "$db"
}
