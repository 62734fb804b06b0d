# Stages that group the others into the few device calls one session can afford (30 minutes of
# device time): a build with the GPU tests, the A vs A article runs, then the comparisons.
# Everything lands in one store, $AA_DB (build-gpu/aa.db: it survives between calls while the
# machine stays warm); each call copies it to $OUT.

# GPU tests (label gpu), the store tests that once crashed on this image, and the CPU binary's
# memory-pass test, which takes the CUDA device too where one is visible (a graph kept between
# memory_call and its first call: nothing may be freed under it).
stage_gpu_quick() {
    ctest --test-dir $BUILD -L gpu --output-on-failure -j 4 >"$OUT/ctest-gpu.log" 2>&1
    grep -E "tests passed|Failed|\*\*\*" "$OUT/ctest-gpu.log" | head -20
    $BUILD/tests/fourfold_tests --gtest_filter='store.*:memory.the_pass_frees_nothing*' 2>&1 | tail -2
}

stage_session_decode() {
    DB=$AA_DB
    timeout 480 bash -c 'source bench/gpu/stages/decode.sh; BIN='"$BIN"' DB='"$DB"' OUT='"$OUT"' stage_decode'
    echo "decode: exit $?"
    cp "$AA_DB" "$OUT/aa.db"
}

stage_session_aa() {
    stage_aa_1
    cp "$AA_DB" "$OUT/aa.db"
    stage_aa_2
    cp "$AA_DB" "$OUT/aa.db"
}

stage_session_compare() {
    stage_compare
    stage_report
    DB=$AA_DB
    stage_compare_refuse
    stage_operator_modes
    $BIN export --format json --db "$AA_DB" | ARTICLE_LABEL=aa-1 python3 bench/gpu/performance_table.py >"$OUT/performance_table.md"
    sed -n '/^speed-up of/,/^$/p' "$OUT/run-aa-1.txt" >>"$OUT/performance_table.md"
    cp "$AA_DB" "$OUT/aa.db"
}

# The comparisons alone, for a session whose device time is short: compare, report, refusals.
# The store of an article pair is larger than one file may be on the way back (16 MiB): it comes
# back xz-compressed in 15 MiB parts (cat aa.db.xz.part-* | xz -d > aa.db), raw samples and all,
# so the pair can be compared again here with a later build. Python's lzma: the image may lack xz.
stage_session_compare_only() {
    stage_compare
    stage_report
    DB=$AA_DB
    stage_compare_refuse
    python3 - "$AA_DB" "$OUT/aa.db.xz.part-" <<'PY'
import lzma, sqlite3, sys
sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")
packed = lzma.compress(open(sys.argv[1], "rb").read(), preset=6)
part = 15 << 20
for i in range(0, len(packed), part):
    open(f"{sys.argv[2]}{chr(97 + i // part // 26)}{chr(97 + i // part % 26)}", "wb").write(packed[i:i + part])
print(f"store {sys.argv[1]}: {len(packed) >> 20} MiB compressed, {(len(packed) + part - 1) // part} part(s)")
PY
}

# Session 21 (2026-12-01), second call: the fused-norm GEMV and the native decode's kernels (gpu
# tests), the fused norm at the op level, llama3-8b's native decode beside stock at ctx 512 and
# 2048, and the VAE decode's first-call memory with cudnn.benchmark off and on. Every step has
# its own limit (about 7.5 minutes with a cold build).
stage_s21_b() {
    local t0=$SECONDS
    timeout 200 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='native.gemv*:decode_native_cuda.*:decode_attention_cuda.*:rmsnorm_cuda.*:rope_kv_cuda.*:swiglu_cuda.*:argmax_cuda.*' \
        >"$OUT/s21_tests.txt" 2>&1
    echo "gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure$|rel L2|fused norms" "$OUT/s21_tests.txt" | head -30
    : >"$OUT/s21.txt"
    timeout 45 $BIN run --workload linear_decode --shape 1x6144x4096,1x28672x4096,1x128256x4096 \
        --param prologue=none,rms_norm,swiglu --dtype bf16 --variants stock,native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s21-norm --quiet >>"$OUT/s21.txt" 2>&1
    echo "linear_decode prologues: exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*(graph|PASS|FAIL|skipped)" "$OUT/s21.txt" | head -24
    timeout 150 $BIN decode --model llama3-8b --variants stock,native --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s21-llama --quiet >>"$OUT/s21.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s"
    $BIN compare s21-llama --baseline-variant stock --db "$DB" >>"$OUT/s21.txt" 2>&1
    grep -E "^decode|tokens/s|FASTER|SLOWER|SAME" "$OUT/s21.txt" | head -24
    timeout 100 $BIN run --workload vae_decode --dtype fp32 --param cudnn_benchmark=0,1 \
        --variants stock --device cuda --ledgers memory --db "$DB" --label s21-vae-mem \
        --quiet >>"$OUT/s21.txt" 2>&1
    echo "vae_decode first-call memory: exit $? after $((SECONDS - t0)) s"
    $BIN export --format json --run s21-vae-mem --db "$DB" >/tmp/s21-vae-mem.json 2>/dev/null &&
        python3 - /tmp/s21-vae-mem.json <<'PY'
import json, sys
G = 2**30
for r in json.load(open(sys.argv[1]))["records"]:
    if r["ledger"] != "memory":
        continue
    f = r.get("figures", {})
    def lv(d):
        return " ".join(f"{k} {d.get(k + '_peak_bytes') / G:.3f}" if d.get(k + "_peak_bytes") is not None
                        else f"{k} -" for k in ("driver", "reserved", "allocated"))
    fc = f.get("first_call", {})
    print(f"vae_decode {r['params']} {r['variant']} {r.get('status')}: steady {lv(f)} GiB; "
          f"first call {lv(fc)} GiB (calls before {fc.get('calls_before_in_process')}, "
          f"driver peak at {fc.get('driver_peak_t_ms')} ms)")
PY
}

# Session 21, third call: the fused prologues (gpu tests, op figures, llama3-8b native decode),
# then the VAE's gpu tests (the wrong-pad variant must FAIL on the GPU) and E6's round trip with
# TF32 on and in bf16 (TF32 off was measured at f236362). About 8 minutes with a cold build.
stage_s21_c() {
    local t0=$SECONDS
    stage_s21_b_ops_and_decode
    timeout 130 $BUILD/tests/fourfold_gpu_tests --gtest_filter='vae_cuda.*' >"$OUT/s21_vae_tests.txt" 2>&1
    echo "vae gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]|vae_roundtrip|PSNR|Failure" "$OUT/s21_vae_tests.txt" | head -20
    timeout -s INT 75 $BIN run --workload vae_roundtrip --dtype fp32 --param tf32=1 --device cuda \
        --min-time 0.1 --label s21-vae-rt --db "$DB" --quiet >>"$OUT/s21.txt" 2>&1
    echo "vae_roundtrip fp32 tf32=1: exit $? after $((SECONDS - t0)) s"
    timeout -s INT 60 $BIN run --workload vae_roundtrip --dtype bf16 --device cuda \
        --min-time 0.1 --label s21-vae-rt-bf16 --db "$DB" --quiet >>"$OUT/s21.txt" 2>&1
    echo "vae_roundtrip bf16: exit $? after $((SECONDS - t0)) s"
    grep -E "^vae_roundtrip" "$OUT/s21.txt" | head -40
}

# The op figures of the fused prologues and llama3-8b's native decode beside stock (ctx 512 and
# 2048), with the gpu tests of the GEMV and the native decode first.
stage_s21_b_ops_and_decode() {
    local t0=$SECONDS
    timeout 120 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='native.gemv*:decode_native_cuda.*:rmsnorm_cuda.*:swiglu_cuda.*' \
        >"$OUT/s21_tests.txt" 2>&1
    echo "gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure$|rel L2|fused" "$OUT/s21_tests.txt" | head -30
    : >"$OUT/s21.txt"
    timeout 55 $BIN run --workload linear_decode --shape 1x6144x4096,1x28672x4096,1x128256x4096 \
        --param prologue=none,rms_norm --dtype bf16 --variants stock,native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s21-norm --quiet >>"$OUT/s21.txt" 2>&1
    echo "linear_decode rms_norm: exit $? after $((SECONDS - t0)) s"
    timeout 30 $BIN run --workload linear_decode --shape 1x4096x14336 --param prologue=none,swiglu \
        --param bias=1 --dtype bf16 --variants stock,native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s21-swiglu --quiet >>"$OUT/s21.txt" 2>&1
    echo "linear_decode swiglu: exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*(graph|FAIL|skipped)" "$OUT/s21.txt" | head -30
    timeout 100 $BIN decode --model llama3-8b --variants stock,native --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput --db "$DB" \
        --label s21-llama --quiet >>"$OUT/s21.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode .*graph" "$OUT/s21.txt" | head -8
}

# Session 21, last call: the fused attention combine and the dependent launches of the small
# kernels (gpu tests), the prologue GEMV's occupancy under ncu and its op figures with the
# shared-memory carveout, then llama3-8b (stock, native, native_fused) at ctx 512 and 2048 and
# qwen3-30b-a3b at 512. About 6 minutes with a cold build.
stage_s21_d() {
    local t0=$SECONDS
    timeout 80 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='decode_attention_cuda.*:argmax_cuda.*:rmsnorm_cuda.*:rope_kv_cuda.*:swiglu_cuda.*:decode_native_cuda.*:native.gemv_with*' \
        >"$OUT/s21_tests.txt" 2>&1
    echo "gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure$|rel L2" "$OUT/s21_tests.txt" | head -24
    timeout 45 ncu --clock-control none --section LaunchStats --section Occupancy \
        --kernel-name regex:gemv_balanced --launch-count 1 \
        $BIN run --workload linear_decode --shape 1x28672x4096 --param prologue=rms_norm --dtype bf16 \
        --variants native --device cuda --ledgers correctness --no-isolate --db /tmp/s21-ncu.db --quiet \
        >"$OUT/s21_ncu.txt" 2>&1
    echo "ncu prologue kernel: exit $? after $((SECONDS - t0)) s"
    grep -E "gemv_balanced|Registers Per|Shared Memory Config|Dynamic Shared|Block Limit|Theoretical Occ|Achieved Occ|Waves Per" "$OUT/s21_ncu.txt" | head -20
    : >"$OUT/s21.txt"
    timeout 40 $BIN run --workload linear_decode --shape 1x28672x4096,1x6144x4096 --param prologue=none,rms_norm \
        --dtype bf16 --variants native --device cuda --ledgers op_time --min-time 0.1 --db "$DB" \
        --label s21-pro-carveout --quiet >>"$OUT/s21.txt" 2>&1
    timeout 25 $BIN run --workload linear_decode --shape 1x4096x14336 --param prologue=none,swiglu --param bias=1 \
        --dtype bf16 --variants native --device cuda --ledgers op_time --min-time 0.1 --db "$DB" \
        --label s21-swiglu-carveout --quiet >>"$OUT/s21.txt" 2>&1
    echo "linear_decode prologues: exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*graph" "$OUT/s21.txt" | head -8
    timeout 125 $BIN decode --model llama3-8b --variants stock,native,native_fused --mode graph \
        --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
        --db "$DB" --label s21-llama-d --quiet >>"$OUT/s21.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s"
    $BIN compare s21-llama-d --baseline-variant stock --db "$DB" >>"$OUT/s21.txt" 2>&1
    grep -E "^decode .*(graph|PASS|FAIL)|tokens/s per ctx|stock -> native.*(FASTER|SLOWER|SAME)" "$OUT/s21.txt" | head -20
    timeout 60 $BIN decode --model qwen3-30b-a3b --variants stock,native --mode graph --ctx 512 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput --db "$DB" --label s21-qwen \
        --quiet >>"$OUT/s21.txt" 2>&1
    echo "decode qwen3-30b-a3b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode .*graph" "$OUT/s21.txt" | tail -2
}

# The next session's first call (planned 2026-12-01, stop 21): the prologue fix measured
# (native_fused against native) and the sanitizer over the decode kernels, about 6 minutes with
# a cold build; s22_vae (the three VAE gpu tests, the bf16 round trip: about 3.5 minutes) fits
# beside faults_in_suite (reliability.sh, about 4) in another; python_decode wants one alone.
stage_s22_a() {
    local t0=$SECONDS
    : >"$OUT/s22.txt"
    timeout 30 $BIN run --workload linear_decode --shape 1x28672x4096,1x6144x4096 --param prologue=none,rms_norm \
        --dtype bf16 --variants native --device cuda --ledgers op_time --min-time 0.1 --db "$DB" \
        --label s22-norm --quiet >>"$OUT/s22.txt" 2>&1
    timeout 20 $BIN run --workload linear_decode --shape 1x4096x14336 --param prologue=none,swiglu --param bias=1 \
        --dtype bf16 --variants native --device cuda --ledgers op_time --min-time 0.1 --db "$DB" \
        --label s22-swiglu --quiet >>"$OUT/s22.txt" 2>&1
    echo "prologues: exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*graph" "$OUT/s22.txt" | head -6
    timeout 100 $BIN decode --model llama3-8b --variants native,native_fused --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s22-llama --quiet >>"$OUT/s22.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s"
    $BIN compare s22-llama --baseline-variant native --db "$DB" >>"$OUT/s22.txt" 2>&1
    grep -E "^decode .*(graph|PASS|FAIL)|native -> native_fused" "$OUT/s22.txt" | head -10
    SANITIZER_LIMIT_S=45 stage_decode_sanitizer
}

stage_s22_vae() {
    local t0=$SECONDS
    timeout 120 $BUILD/tests/fourfold_gpu_tests --gtest_filter='vae_cuda.*' >"$OUT/s22_vae_tests.txt" 2>&1
    echo "vae gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]|vae_.* s$|Failure" "$OUT/s22_vae_tests.txt" | head -12
    timeout -s INT 70 $BIN run --workload vae_roundtrip --dtype bf16 --device cuda --ledgers correctness,op_time \
        --min-time 0.1 --label s22-vae-rt-bf16 --db "$DB" --quiet >"$OUT/s22_vae.txt" 2>&1
    echo "vae_roundtrip bf16: exit $? after $((SECONDS - t0)) s"
    grep -E "^vae_roundtrip" "$OUT/s22_vae.txt" | head -8
}

# Isolation's cost per job group: softmax stock correctness over 1 and 6 tiny groups, in one
# process and isolated, twice each; the wall time of each command appended to $1.
isolation_per_group() {
    local iso shapes n
    for iso in --no-isolate --isolate --no-isolate --isolate; do
        for shapes in 1x1000 1x1000,1x2000,1x3000,1x4000,1x5000,1x6000; do
            local t1=$(date +%s.%N)
            timeout 40 $BIN run --workload softmax --shape $shapes --dtype fp32 --variants stock \
                --ledgers correctness --device cuda $iso --db /tmp/iso-$$.db --quiet >/dev/null 2>&1
            local rc=$?
            n=$(echo $shapes | tr ',' '\n' | wc -l)
            echo "isolation $iso, $n groups: exit $rc, $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s" | tee -a "$1"
        done
    done
    rm -f /tmp/iso-$$.db*
}

# Session 22's second call: what the first left (2026-12-01). The isolation cost per job group
# on the H200 (softmax: 1 and 6 tiny groups, isolated and in-process, twice each: the slope is
# the cost of a job process); the VAE gpu tests that the round-trip test's time had kept from
# running (the wrong pad on the GPU, the native pad inside the decoder); the torch.compile peer
# beside fourfold's decoder in one run (python_decode, graph mode only); then where the tiny
# round trip's time goes (each ledger alone, timed). About 9.5 minutes with the build.
stage_s22_b() {
    local t0=$SECONDS
    : >"$OUT/s22_b.txt"
    isolation_per_group "$OUT/s22_b.txt"
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='vae_cuda.a_wrong_pad*:vae_cuda.the_native_pad*' >>"$OUT/s22_b.txt" 2>&1
    echo "vae wrong-pad and native-pad gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]|PSNR|Failure" "$OUT/s22_b.txt" | head -12
    PYTHON_DECODE_LIMIT_S=290 PYTHON_DECODE_ARGS="--variants stock,native,native_fused,torch_compile --param mode=graph" \
        stage_python_decode
    echo "python_decode: after $((SECONDS - t0)) s"
    local l
    for l in correctness memory throughput op_time; do
        local t2=$(date +%s.%N)
        timeout 30 $BIN run --workload vae_roundtrip --param model=tiny --param height=64 \
            --param width=64 --param tf32=1 --dtype fp32 --variants stock --device cuda \
            --ledgers $l --min-time 0.02 --no-isolate --db /tmp/vae-$$.db --quiet >>"$OUT/s22_vae_probe.txt" 2>&1
        echo "vae_roundtrip tiny 64x64 fp32 tf32 stock, $l alone: exit $?, $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t2}") s" | tee -a "$OUT/s22_b.txt"
    done
    rm -f /tmp/vae-$$.db*
}

# Session 22's last call. The VAE gpu tests whole (the cold-cache rotation now held to ~10 ms a
# sample: the tiny round trip's op_time had rotated 2,000 round trips a sample), the rotation's
# own test; isolation with the next job process started while a group runs (the 6-group softmax
# again, and the article suite's softmax jobs isolated and in-process); the torch.compile peer
# with its weights and KV cache as static addresses (CUDA graphs had been skipped: "mutated
# inputs"); the decoder with fp8 weights; the sanitizer over the decode kernels.
stage_s22_c() {
    local t0=$SECONDS
    : >"$OUT/s22_c.txt"
    timeout 120 $BUILD/tests/fourfold_gpu_tests --gtest_filter='vae_cuda.*:cuda.a_long_call*' \
        >"$OUT/s22_c_tests.txt" 2>&1
    echo "vae gpu tests and the rotation test: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s22_c.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]|: [0-9.]* s$|PSNR|Failure" "$OUT/s22_c_tests.txt" | head -16
    isolation_per_group "$OUT/s22_c.txt"
    for iso in --isolate --no-isolate; do
        local t1=$(date +%s.%N)
        timeout 100 $BIN run --suite article --workload softmax --device cuda $iso \
            --db "$DB" --label s16-softmax$iso --quiet >/dev/null 2>&1
        echo "article softmax $iso: exit $?, $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t1}") s" | tee -a "$OUT/s22_c.txt"
    done
    echo "article softmax groups: $($BIN export --format json --run s16-softmax--isolate --db "$DB" 2>/dev/null | python3 -c \
        'import json,sys; r=json.load(sys.stdin)["records"]; print(len({(x["workload"], x["case_key"], x["dtype"]) for x in r}))')" | tee -a "$OUT/s22_c.txt"
    PYTHON_DECODE_LIMIT_S=200 PYTHON_DECODE_ARGS="--variants stock,native,torch_compile --param mode=graph" \
        stage_python_decode
    echo "python_decode: after $((SECONDS - t0)) s" | tee -a "$OUT/s22_c.txt"
    s22_fp8_decode
    echo "fp8 decode: after $((SECONDS - t0)) s" | tee -a "$OUT/s22_c.txt"
    SANITIZER_TOOLS=memcheck SANITIZER_LIMIT_S=45 stage_decode_sanitizer
    echo "sanitizer: after $((SECONDS - t0)) s" | tee -a "$OUT/s22_c.txt"
}

# The decoder with fp8 weights (weights=fp8_row): its gpu tests, then llama3-8b at ctx 512 in
# graph mode, stock (dequantised per call) and native (the FP8 GEMV), every decode ledger.
s22_fp8_decode() {
    timeout 60 $BUILD/tests/fourfold_gpu_tests --gtest_filter='decoder_fp8_cuda.*' \
        >"$OUT/s22_fp8.txt" 2>&1
    echo "decoder_fp8_cuda tests: exit $?" | tee -a "$OUT/s22_c.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[       OK|^\[  FAILED  \]|Failure" "$OUT/s22_fp8.txt" | head -8
    timeout 100 $BIN run --workload decode --param model=llama3-8b --param weights=fp8_row \
        --param ctx=512 --param tokens=32 --param mode=graph --variants stock,native --dtype bf16 \
        --device cuda --ledgers throughput,correctness,memory --db "$DB" --label s22-fp8 \
        --quiet >>"$OUT/s22_fp8.txt" 2>&1
    echo "decode llama3-8b weights=fp8_row: exit $?" | tee -a "$OUT/s22_c.txt"
    grep -E "^decode " "$OUT/s22_fp8.txt" | head -12
}

# Session 23's first call (2026-12-02): what stop 22 left unmeasured at build 40e3b7c. The
# native GEMV against cuBLAS under Nsight Compute at the two shapes where it is 2-5 % behind
# (issue 13); the sanitizer, memcheck then racecheck, over the GEMV (with its prologues), the
# FP8 GEMV and the MoE step's gpu tests (never run on the prologue fix or on gemv_fp8); the
# fixed prologues' op figures. About 5 minutes after the build.
stage_s23_a() {
    local t0=$SECONDS tool
    : >"$OUT/s23_a.txt"
    stage_ncu_gemv_vs_cublas
    echo "ncu gemv: after $((SECONDS - t0)) s" | tee -a "$OUT/s23_a.txt"
    for tool in memcheck racecheck; do
        FOURFOLD_NATIVE_TEST_SIZES=small timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 \
            --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='native.gemv*:gemv_fp8*:moe_cuda.*' >"$OUT/s23_sanitizer_$tool.txt" 2>&1
        echo "compute-sanitizer $tool (gemv, gemv_fp8, moe): exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_a.txt"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Internal|^\[  (PASSED|FAILED) |^\[  FAILED  \]" \
            "$OUT/s23_sanitizer_$tool.txt" | sort | uniq -c | head -12
    done
    timeout 30 $BIN run --workload linear_decode --shape 1x28672x4096,1x6144x4096 --param prologue=none,rms_norm \
        --dtype bf16 --variants stock,native --device cuda --ledgers op_time --min-time 0.1 --db "$DB" \
        --label s23-prologue --quiet >>"$OUT/s23_a.txt" 2>&1
    timeout 20 $BIN run --workload linear_decode --shape 1x4096x14336 --param prologue=none,swiglu --param bias=1 \
        --dtype bf16 --variants stock,native --device cuda --ledgers op_time --min-time 0.1 --db "$DB" \
        --label s23-prologue --quiet >>"$OUT/s23_a.txt" 2>&1
    echo "prologues: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_a.txt"
    grep -E "^linear_decode .*graph" "$OUT/s23_a.txt" | head -12
}

# Session 23's second call: the softmax's cooperative grid path (a few long rows over the whole
# device) under its gpu tests, its op figures beside stock in one run and one call under Nsight
# Compute; the GEMV against cuBLAS under ncu (the stage now names their kernels); the
# torch.compile peer in gpt-fast's form (F.linear on [out, in] weights, fused qkv,
# coordinate-descent tuning) beside fourfold's decoder, graph mode. About 7.5 minutes with the build.
stage_s23_b() {
    local t0=$SECONDS
    : >"$OUT/s23_b.txt"
    timeout 90 $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.softmax*:native.kernels_are*:native.memory*' \
        >"$OUT/s23_softmax_tests.txt" 2>&1
    echo "softmax gpu tests: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_b.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|native: median|allocated above" "$OUT/s23_softmax_tests.txt" | head -16
    timeout 60 $BIN run --workload softmax --shape 1x128256,1x262144,1x1048576,2x262144,6x128256,8x128256,64x128256 \
        --dtype fp32 --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --label s23-softmax --db "$DB" --quiet >>"$OUT/s23_b.txt" 2>&1
    timeout 30 $BIN run --workload softmax --shape 1x128256,1x32000 --dtype bf16,fp16 --variants stock,native \
        --device cuda --ledgers op_time,correctness --min-time 0.1 --label s23-softmax --db "$DB" --quiet >>"$OUT/s23_b.txt" 2>&1
    echo "softmax figures: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_b.txt"
    grep -E "^softmax .*(graph|PASS|FAIL)" "$OUT/s23_b.txt" | head -40
    timeout 60 ncu --clock-control none --kernel-name regex:"softmax" --launch-count 3 \
        --section SpeedOfLight --section LaunchStats --section Occupancy \
        $BIN run --workload softmax --shape 1x128256 --dtype fp32 --variants native --ledgers correctness \
        --device cuda --no-isolate --db /tmp/ncu-sm-$$.db --quiet >"$OUT/s23_ncu_softmax.txt" 2>&1
    grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Grid Size|Block Size|Registers" "$OUT/s23_ncu_softmax.txt" | head -12
    stage_ncu_gemv_vs_cublas
    echo "ncu: after $((SECONDS - t0)) s" | tee -a "$OUT/s23_b.txt"
    PYTHON_DECODE_LIMIT_S=230 PYTHON_DECODE_ARGS="--variants stock,native,torch_compile --param mode=graph" \
        stage_python_decode
    echo "python_decode: after $((SECONDS - t0)) s" | tee -a "$OUT/s23_b.txt"
}

# Session 23's third call: the softmax's warp and cluster paths as dependent launches; the FP8
# GEMV as a dependent launch with the balanced split for one token (helper, branch s23-fp8): its
# gpu tests (the chain of dependent launches), op figures beside the bf16 GEMV, racecheck one
# gtest process a test (the sanitizer's internal error kills a process's context at the first
# cuBLAS call: s23_a), and the decoder with fp8 weights at ctx 512 and 2048. About 7.5 minutes.
stage_s23_c() {
    local t0=$SECONDS t
    : >"$OUT/s23_c.txt"
    timeout 120 $BUILD/tests/fourfold_gpu_tests --gtest_filter='gemv_fp8*:decoder_fp8_cuda.*:native.softmax*' \
        >"$OUT/s23_c_tests.txt" 2>&1
    echo "gpu tests (gemv_fp8, decoder_fp8_cuda, native.softmax): exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_c.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" "$OUT/s23_c_tests.txt" | head -16
    timeout 60 $BIN run --workload softmax --shape 1x128256,1x262144,1x1048576,2x262144,6x128256,8x128256,64x128256 \
        --dtype fp32 --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --label s23-softmax-pdl --db "$DB" --quiet >>"$OUT/s23_c.txt" 2>&1
    timeout 30 $BIN run --workload softmax --shape 1x128256,1x32000 --dtype bf16 --variants stock,native \
        --device cuda --ledgers op_time --min-time 0.1 --label s23-softmax-pdl --db "$DB" --quiet >>"$OUT/s23_c.txt" 2>&1
    echo "softmax: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_c.txt"
    grep -E "^softmax .*graph" "$OUT/s23_c.txt" | head -12
    timeout 60 $BIN run --workload fp8_linear --shape 1x4096x4096,1x14336x4096,1x4096x14336,1x128256x4096,8x4096x4096 \
        --dtype bf16 --variants bf16,native_bf16,native_fp8_tensor,native_fp8_row --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --label s23-fp8 --db "$DB" --quiet >>"$OUT/s23_c.txt" 2>&1
    echo "fp8_linear: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_c.txt"
    grep -E "^fp8_linear .*graph" "$OUT/s23_c.txt" | head -20
    timeout 110 $BIN run --workload decode --param model=llama3-8b --param weights=fp8_row \
        --param ctx=512,2048 --param tokens=32 --param mode=graph --variants native --dtype bf16 \
        --device cuda --ledgers throughput,correctness --db "$DB" --label s23-fp8-decode \
        --quiet >>"$OUT/s23_c.txt" 2>&1
    echo "decode llama3-8b weights=fp8_row: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_c.txt"
    grep -E "^decode " "$OUT/s23_c.txt" | head -8
    : >"$OUT/s23_c_racecheck.txt"
    for t in $($BUILD/tests/fourfold_gpu_tests --gtest_list_tests --gtest_filter='gemv_fp8*:native.gemv*:native.softmax*' \
               | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
        FOURFOLD_NATIVE_TEST_SIZES=small timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 \
            --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests --gtest_filter="$t" >>"$OUT/s23_c_racecheck.txt" 2>&1
        echo "racecheck $t: exit $?" | tee -a "$OUT/s23_c.txt"
        [ $((SECONDS - t0)) -gt 400 ] && { echo "racecheck: stopped for time"; break; }
    done
    grep -E "RACECHECK SUMMARY|Internal" "$OUT/s23_c_racecheck.txt" | sort | uniq -c
}

# Session 23's last call: the constant pad staged through shared memory (helper, branch s23-pad):
# its gpu tests, the article suite's pad jobs, memcheck over the pad tests; then the article
# suite's softmax, linear_decode and pad jobs with every variant (native_article, cut at
# NATIVE_ARTICLE_LIMIT_S) for issue 13's whole table. About 5 minutes after the build.
stage_s23_d() {
    local t0=$SECONDS
    : >"$OUT/s23_d.txt"
    timeout 60 $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.pad*:native.kernels_are*:native.memory*' \
        >"$OUT/s23_d_tests.txt" 2>&1
    echo "pad gpu tests: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_d.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|native: median|allocated above" "$OUT/s23_d_tests.txt" | head -14
    timeout 40 $BIN run --suite article --workload pad --device cuda --min-time 0.1 --label s23-pad \
        --db "$DB" --quiet >>"$OUT/s23_d.txt" 2>&1
    echo "article pad: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_d.txt"
    grep -E "^pad .*(graph|PASS|FAIL)" "$OUT/s23_d.txt" | head -30
    FOURFOLD_NATIVE_TEST_SIZES=small timeout 35 compute-sanitizer --tool memcheck --error-exitcode 9 \
        --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.pad*' \
        >"$OUT/s23_d_memcheck.txt" 2>&1
    echo "memcheck pad: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s23_d.txt"
    grep -E "ERROR SUMMARY" "$OUT/s23_d_memcheck.txt"
    NATIVE_ARTICLE_LIMIT_S=${NATIVE_ARTICLE_LIMIT_S:-185} stage_native_article
    echo "native article: after $((SECONDS - t0)) s" | tee -a "$OUT/s23_d.txt"
}

# Session 24's first call (2026-12-02): the last session's refactor (softmax block merge, pad
# plane lookup, bf16 pad back on the register path) under the softmax, pad and kernel gpu tests;
# the article suite's softmax and pad jobs with every variant (the last run was cut before them);
# the GEMV's time against its weight bytes (N and K swept, stock and native in one run: the
# intercept is the per-call fixed cost, the slope the marginal rate); llama3-8b native and
# native_fused at ctx 512 (the prologue fix at the decode level). About 6 minutes after the build.
stage_s24_a() {
    local t0=$SECONDS
    : >"$OUT/s24_a.txt"
    timeout 100 $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.softmax*:native.pad*:native.kernels*:native.memory*' \
        >"$OUT/s24_a_tests.txt" 2>&1
    echo "gpu tests (softmax, pad, kernels, memory): exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_a.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" "$OUT/s24_a_tests.txt" | head -16
    timeout -s INT 110 $BIN run --suite article --workload softmax,pad --device cuda --min-time 0.1 \
        --label s24-article --db "$DB" --quiet >"$OUT/s24_article.txt" 2>&1
    echo "article softmax, pad: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_a.txt"
    sed -n '/^speed-up of/,/^$/p' "$OUT/s24_article.txt"
    $BIN export --format json --run s24-article --db "$DB" >"$OUT/s24_article.json"
    python3 bench/gpu/native_table.py "$OUT/s24_article.json" >"$OUT/s24_article_table.md" 2>&1
    tail -8 "$OUT/s24_article_table.md"
    local sweep=1x2048x4096,1x4096x4096,1x8192x4096,1x16384x4096,1x28672x4096,1x57344x4096,1x128256x4096
    sweep=$sweep,1x4096x2048,1x4096x8192,1x4096x14336,1x4096x28672,1x8192x2048,1x8192x8192,1x8192x28672
    timeout -s INT 80 $BIN run --workload linear_decode --shape "$sweep" --dtype bf16 --variants stock,native \
        --device cuda --ledgers op_time --min-time 0.1 --label s24-sweep --db "$DB" --quiet >"$OUT/s24_sweep.txt" 2>&1
    echo "gemv sweep: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_a.txt"
    grep -E "^linear_decode .*graph" "$OUT/s24_sweep.txt" | head -40
    timeout 100 $BIN decode --model llama3-8b --variants stock,native,native_fused --mode graph --ctx 512 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s24-llama --quiet >"$OUT/s24_decode.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_a.txt"
    grep -E "^decode " "$OUT/s24_decode.txt" | head -8
}

# Session 24's second call: the one-token GEMV through the copy engine (gemv_bulk): its gpu
# tests (edge sizes, views, graph capture, the decode's kernels), the sweep of s24_a again (its
# intercept against the balanced kernel's 5.5 us), ncu on two shapes of equal steps a warp, and
# llama3-8b native and native_fused at ctx 512 and 2048. About 7.5 minutes with the build.
stage_s24_b() {
    local t0=$SECONDS
    : >"$OUT/s24_b.txt"
    timeout 150 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='native.gemv*:native.kernels*:native.memory*:decode_native_cuda.*' >"$OUT/s24_b_tests.txt" 2>&1
    echo "gpu tests (gemv, kernels, memory, decode_native): exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_b.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" "$OUT/s24_b_tests.txt" | head -16
    local sweep=1x2048x4096,1x4096x4096,1x8192x4096,1x16384x4096,1x28672x4096,1x57344x4096,1x128256x4096
    sweep=$sweep,1x4096x2048,1x4096x8192,1x4096x14336,1x4096x28672,1x8192x2048,1x8192x8192,1x8192x28672,1x6144x4096
    timeout -s INT 85 $BIN run --workload linear_decode --shape "$sweep" --dtype bf16 --variants stock,native \
        --device cuda --ledgers op_time,correctness --min-time 0.1 --label s24-bulk --db "$DB" --quiet >"$OUT/s24_bulk.txt" 2>&1
    echo "gemv sweep: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_b.txt"
    grep -E "^linear_decode .*(graph|FAIL|skipped|error)" "$OUT/s24_bulk.txt" | head -40
    local shape
    for shape in 1x28672x4096 1x4096x28672; do
        timeout 40 ncu --clock-control none --launch-count 1 --kernel-name regex:"gemv_bulk" \
            --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
            $BIN run --workload linear_decode --shape $shape --dtype bf16 --variants native \
            --ledgers correctness --device cuda --no-isolate --db /tmp/ncu-bulk-$$.db --quiet >>"$OUT/s24_ncu.txt" 2>&1
    done
    grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|L2 Hit|L1/TEX Hit|Grid Size|Dynamic Shared" "$OUT/s24_ncu.txt" | head -30
    timeout 150 $BIN decode --model llama3-8b --variants stock,native,native_fused --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s24-llama-bulk --quiet >"$OUT/s24_b_decode.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_b.txt"
    grep -E "^decode " "$OUT/s24_b_decode.txt" | head -12
}

# Session 24's last call (after the bulk-copy GEMV was measured slower and reverted): the GEMV
# tests with the new edge shape on the balanced kernel; memcheck over the FP8 GEMV (its
# dependent launch and balanced kernel) and the softmax (grid path, dependent launches);
# racecheck over the pad tests one gtest process each (the staged path); qwen3-30b-a3b native
# decode at ctx 512 and 2048. About 6 minutes with the build.
stage_s24_c() {
    local t0=$SECONDS t
    : >"$OUT/s24_c.txt"
    timeout 60 $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.gemv*' >"$OUT/s24_c_tests.txt" 2>&1
    echo "gpu tests (gemv): exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_c.txt"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" "$OUT/s24_c_tests.txt" | head -8
    FOURFOLD_NATIVE_TEST_SIZES=small timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
        --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests --gtest_filter='gemv_fp8*:native.softmax*' \
        >"$OUT/s24_c_memcheck.txt" 2>&1
    echo "memcheck (gemv_fp8, softmax): exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_c.txt"
    grep -E "ERROR SUMMARY|Internal|^\[  (PASSED|FAILED) " "$OUT/s24_c_memcheck.txt" | sort | uniq -c | head
    : >"$OUT/s24_c_racecheck.txt"
    for t in $($BUILD/tests/fourfold_gpu_tests --gtest_list_tests --gtest_filter='native.pad*' \
               | awk '/^[^ ]/{s=$1} /^  /{print s $1}'); do
        FOURFOLD_NATIVE_TEST_SIZES=small timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 \
            --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests --gtest_filter="$t" >>"$OUT/s24_c_racecheck.txt" 2>&1
        echo "racecheck $t: exit $?" | tee -a "$OUT/s24_c.txt"
    done
    grep -E "RACECHECK SUMMARY|Internal" "$OUT/s24_c_racecheck.txt" | sort | uniq -c
    timeout 120 $BIN decode --model qwen3-30b-a3b --variants stock,native --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s24-qwen --quiet >"$OUT/s24_c_decode.txt" 2>&1
    echo "decode qwen3-30b-a3b: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s24_c.txt"
    grep -E "^decode " "$OUT/s24_c_decode.txt" | head -8
}

# The gpu tests FILTER under a TIMEOUT (s), logged to LOG; prints the exit code and the summary.
s25_gtests() {
    local filter=$1 limit=$2 log=$3 t0=$SECONDS
    timeout "$limit" $BUILD/tests/fourfold_gpu_tests --gtest_filter="$filter" >"$log" 2>&1
    echo "gpu tests ($filter): exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" "$log" | head -16
}

# Session 25's first call (2026-12-02): the balanced GEMV on a grid of equal rows a block where a
# divisor of N lies just below the wave (bench/gpu/gemv_probe.cu found the wave's 15-or-16-row
# blocks cost N = 8192 12 %): the GEMV, kernel and native decode gpu tests (a new edge shape and a
# prologue case on the smaller grid), memcheck over the GEMV tests, the s24 sweep with the shapes
# the rule moves, and llama3-8b stock, native and native_fused at ctx 512. About 8 minutes with the
# build.
stage_s25_a() {
    local t0=$SECONDS
    : >"$OUT/s25_a.txt"
    s25_gtests 'native.gemv*:native.kernels*:decode_native_cuda.*' 150 "$OUT/s25_a_tests.txt" | tee -a "$OUT/s25_a.txt"
    FOURFOLD_NATIVE_TEST_SIZES=small timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 \
        --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.gemv*' \
        >"$OUT/s25_a_memcheck.txt" 2>&1
    echo "memcheck (gemv): exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s25_a.txt"
    grep -E "ERROR SUMMARY|Internal|^\[  (PASSED|FAILED) " "$OUT/s25_a_memcheck.txt" | sort | uniq -c | head
    local sweep=1x2048x4096,1x4096x4096,1x6144x4096,1x8192x4096,1x14336x4096,1x16384x4096,1x28672x4096
    sweep=$sweep,1x128256x4096,1x4096x14336,1x4096x28672,1x8192x8192,1x6144x5120,1x3072x8192,1x8192x28672
    timeout -s INT 100 $BIN run --workload linear_decode --shape "$sweep" --dtype bf16 --variants stock,native \
        --device cuda --ledgers op_time,correctness --min-time 0.1 --label s25-sweep --db "$DB" --quiet >"$OUT/s25_sweep.txt" 2>&1
    echo "gemv sweep: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s25_a.txt"
    grep -E "^linear_decode .*(graph|FAIL|skipped|error)" "$OUT/s25_sweep.txt" | head -40
    timeout 100 $BIN decode --model llama3-8b --variants stock,native,native_fused --mode graph --ctx 512 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s25-llama --quiet >"$OUT/s25_decode.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s25_a.txt"
    grep -E "^decode " "$OUT/s25_decode.txt" | head -8
}

# Session 25's last call: the grid rule of e5d6998 reverted (in fourfold's own runs it lost 8-9 %
# on 16384 x 4096, 4096 x 14336 and 4096 x 28672 and won nothing at N = 8192, where the probe had
# it 11-15 % ahead): the GEMV gpu tests with the new edge shapes on the wave's grid, the s25_a sweep
# and llama3-8b again on this build (the same machine-day A/B), then the article suite's 96
# one-token GEMV shapes, stock and native in one run. About 9.5 minutes with the build.
stage_s25_c() {
    local t0=$SECONDS
    : >"$OUT/s25_c.txt"
    s25_gtests 'native.gemv*' 60 "$OUT/s25_c_tests.txt" | tee -a "$OUT/s25_c.txt"
    local sweep=1x6144x4096,1x8192x4096,1x14336x4096,1x16384x4096,1x4096x14336,1x4096x28672,1x8192x8192
    sweep=$sweep,1x6144x5120,1x3072x8192,1x8192x28672
    timeout -s INT 80 $BIN run --workload linear_decode --shape "$sweep" --dtype bf16 --variants stock,native \
        --device cuda --ledgers op_time --min-time 0.1 --label s25-sweep-wave --db "$DB" --quiet >"$OUT/s25_c_sweep.txt" 2>&1
    echo "gemv sweep: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s25_c.txt"
    grep -E "^linear_decode .*graph" "$OUT/s25_c_sweep.txt" | head -24
    timeout 80 $BIN decode --model llama3-8b --variants native,native_fused --mode graph --ctx 512 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput --db "$DB" \
        --label s25-llama-wave --quiet >"$OUT/s25_c_decode.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s25_c.txt"
    grep -E "^decode " "$OUT/s25_c_decode.txt" | head -4
    timeout -s INT 200 $BIN run --suite article --workload linear_decode --device cuda \
        --min-time 0.05 --label s25-article --db "$DB" --quiet >"$OUT/s25_article.txt" 2>&1
    echo "article linear_decode: exit $? after $((SECONDS - t0)) s" | tee -a "$OUT/s25_c.txt"
    sed -n '/^speed-up of/,/^$/p' "$OUT/s25_article.txt"
    $BIN export --format json --run s25-article --db "$DB" >"$OUT/s25_article.json"
    python3 bench/gpu/native_table.py "$OUT/s25_article.json" >"$OUT/s25_article_table.md" 2>&1
    tail -8 "$OUT/s25_article_table.md"
}

# Session 25's spare minutes: the GEMV at T = 2, 4 and 8 tokens over stage_native_tokens's 16 layer
# shapes (issue 13's multi-token target, last measured before the balanced kernel), cut at 200 s.
stage_s25_d() {
    local shapes=1x768x2048,1x1024x4096,1x2048x2048,1x4096x4096,1x2560x4096,1x14336x4096,1x4096x14336,1x8192x8192
    shapes=$shapes,1x3072x3072,1x5120x5120,1x151936x1024,1x128256x4096,1x1024x1024,1x6144x2048,1x17408x5120,1x25600x5120
    local t all=
    for t in 2 4 8; do all=$all${all:+,}$(echo "$shapes" | sed "s/\(^\|,\)1x/\1${t}x/g"); done
    timeout -s INT 200 $BIN run --workload linear_decode --shape "$all" --dtype bf16 \
        --variants stock,native --device cuda --min-time 0.05 --ledgers op_time,correctness \
        --label s25-tokens --db "$DB" --quiet >"$OUT/s25_tokens.txt" 2>&1
    echo "tokens run: exit $?"
    sed -n '/^speed-up of native/,/^$/p' "$OUT/s25_tokens.txt"
    grep -cE "^linear_decode .*PASS" "$OUT/s25_tokens.txt"
    grep -E "^linear_decode .*(FAIL|skipped)" "$OUT/s25_tokens.txt" | head -5
}

# Session 25's last minutes: 2 to 4 bf16 tokens over weights of 64 MiB or more on the balanced
# FMA kernel instead of the tensor cores: the GEMV gpu tests (4 x 14336 x 4096 takes it), then
# the large shapes of s25_d at 2 and 4 tokens, stock and native.
stage_s25_e() {
    local t0=$SECONDS
    s25_gtests 'native.gemv*' 40 "$OUT/s25_e_tests.txt"
    local s=${S25_E_SHAPES:-4096x14336,14336x4096,8192x8192,5120x17408,25600x5120,17408x5120,151936x1024,128256x4096}
    local t all=
    for t in ${S25_E_TOKENS:-2 4}; do all=$all${all:+,}$(echo ",$s" | sed "s/,/,${t}x/g; s/^,//"); done
    timeout -s INT 70 $BIN run --workload linear_decode --shape "$all" \
        --dtype bf16 --variants stock,native --device cuda --min-time 0.05 --ledgers op_time,correctness \
        --label s25-few --db "$DB" --quiet >"$OUT/s25_e.txt" 2>&1
    echo "few tokens: exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*(graph|FAIL|skipped)" "$OUT/s25_e.txt" | head -40
}

# Session 26 (2026-12-02): the MoE step in one launch (kernels/moe.cu's moe_one_launch). Its gpu
# tests and the decoder's native tests (the three ways of the step timed on the Qwen3-30B-A3B
# shape inside moe_cuda), moe_decode stock and native at 1 and 8 tokens, qwen3-30b-a3b's decode
# at ctx 512 and 2048, then compute-sanitizer over the MoE tests of small shapes in what time is
# left of the call's 9 minutes.
stage_s26_a() {
    local t0=$SECONDS
    # a grid barrier that never opens hangs: the timed test first, on its own short limit
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.one_launch_and_two_kernels_agree*' >"$OUT/s26_first.txt" 2>&1
    local rc=$?
    echo "the timed MoE test: exit $rc after $((SECONDS - t0)) s"
    grep -E "moe native T=|Failure|FAILED|PASSED" "$OUT/s26_first.txt" | head -40
    [ $rc -eq 124 ] && return 1
    s25_gtests 'moe_cuda.*:decode_native_cuda.*:native.softmax*:-moe_cuda.one_launch_and_two_kernels_agree*' \
        150 "$OUT/s26_tests.txt"
    grep -E "max error" "$OUT/s26_tests.txt" | head -12
    : >"$OUT/s26.txt"
    timeout 45 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn,gate_up --dtype bf16 \
        --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s26-moe --quiet >>"$OUT/s26.txt" 2>&1
    echo "moe_decode: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode .*(graph|event|PASS|FAIL)" "$OUT/s26.txt" | head -20
    timeout 150 $BIN decode --model qwen3-30b-a3b --variants stock,native --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s26-qwen --quiet >>"$OUT/s26.txt" 2>&1
    echo "decode qwen3-30b-a3b: exit $? after $((SECONDS - t0)) s"
    $BIN compare s26-qwen --baseline-variant stock --db "$DB" >>"$OUT/s26.txt" 2>&1
    grep -E "^decode|tokens/s|FASTER|SLOWER|SAME" "$OUT/s26.txt" | head -20
    local left=$((540 - SECONDS)) # SECONDS: since h200.sh began (the build included)
    local tool
    for tool in ${S26_TOOLS:-memcheck racecheck}; do
        [ $left -gt 30 ] || { echo "compute-sanitizer $tool: not run (no time left)"; continue; }
        timeout $((left / 2)) compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=moe \
            $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='moe_cuda.native_step_matches_float64_on_small_shapes*:moe_cuda.ties*' \
            >"$OUT/s26_sanitizer_$tool.txt" 2>&1
        echo "compute-sanitizer $tool: exit $? after $((SECONDS - t0)) s"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Invalid|hazard" "$OUT/s26_sanitizer_$tool.txt" | sort | uniq -c | head -8
        left=$((540 - SECONDS))
    done
}

# Session 26, last call (300 s of device time left): the timed MoE test alone, its probe now
# stopping after the routing too.
stage_s26_b() {
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.one_launch_and_two_kernels_agree*' >"$OUT/s26_b.txt" 2>&1
    echo "the timed MoE test: exit $?"
    grep -E "moe native T=|Failure|FAILED|PASSED" "$OUT/s26_b.txt" | head -40
}

# The median µs of each kernel (name and grid) in an ncu --csv --page raw file ($1), each line
# prefixed with $2.
s27_medians() {
    python3 - "$1" "$2" <<'PY'
import csv, re, sys, statistics
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
head = next(r for r in rows if r[0] == "ID")
ki, ti, gi = head.index("Kernel Name"), head.index("gpu__time_duration.sum"), head.index("Grid Size")
by = {}
for r in rows:
    if r[0] in ("ID", ""):
        continue
    k = re.sub(r"\(.*", "", r[ki]).replace("void unnamed>::", "") + " " + r[gi]
    by.setdefault(k, []).append(float(r[ti].replace(",", "")) / 1e3)
for k, v in by.items():
    print(f"{sys.argv[2]}{k:60s} x{len(v):3d} median {statistics.median(v):6.2f} us min {min(v):6.2f} max {max(v):6.2f}")
PY
}

# Session 27: one native decode step kernel by kernel. ncu times each launch alone
# (serialised, caches as the launch before left them: --cache-control none), so the sum of a
# step's kernels against the graph's step time is what the gaps between kernels cost.
# $1 model, $2 variant, $3 output name ($OUT/$3.csv, ncu's per-launch CSV); prints each kernel's
# median µs (the prefill runs libtorch's ops; the MoE's 8-token instances are filtered out).
s27_step_profile() {
    local model=$1 variant=$2 name=$3 db=/tmp/s27-profile-$$.db
    timeout ${S27_PROFILE_LIMIT:-150} ncu --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --kernel-name-base demangled \
        --kernel-name "regex:${S27_KERNELS:-rmsnorm_kernel|rope_kv_kernel|attention|argmax_kernel|gemv|swiglu_kernel|moe_one_launch<[^>]*1>|moe_route|moe_down}" \
        --launch-count ${S27_LAUNCHES:-420} --csv --page raw \
        $BIN decode --model $model --variants $variant --mode graph --ctx ${S27_CTX:-512} --tokens 2 \
        --ledgers throughput --timeout 0.5 --device cuda --dtype bf16 --db "$db" --quiet \
        >"$OUT/$name.csv" 2>"$OUT/$name.err"
    echo "ncu $model $variant ctx ${S27_CTX:-512}: exit $?"
    s27_medians "$OUT/$name.csv" ""
    rm -f "$db"
}

# Session 27, first call: the timed MoE test at HEAD, one native step of qwen3-30b-a3b and of
# llama3-8b kernel by kernel, and the two models' graph figures at HEAD.
stage_s27_a() {
    local t0=$SECONDS
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.one_launch_and_two_kernels_agree*' >"$OUT/s27_first.txt" 2>&1
    local rc=$?
    echo "the timed MoE test: exit $rc after $((SECONDS - t0)) s"
    grep -E "moe native T=|Failure|FAILED|PASSED" "$OUT/s27_first.txt" | head -40
    [ $rc -eq 124 ] && return 1
    s27_step_profile qwen3-30b-a3b native s27_qwen_profile
    echo "after $((SECONDS - t0)) s"
    S27_LAUNCHES=300 s27_step_profile llama3-8b native s27_llama_profile
    echo "after $((SECONDS - t0)) s"
    : >"$OUT/s27.txt"
    local m
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 90 $BIN decode --model $m --variants native --mode graph --ctx 512 --tokens 32 \
            --device cuda --dtype bf16 --ledgers throughput --db "$DB" --label s27-a --quiet \
            >>"$OUT/s27.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode|tokens/s" "$OUT/s27.txt" | head -20
}

# Session 27, second call: one qwen3-30b-a3b layer's native kernels under Nsight Compute's full
# set (stall reasons, source counters, memory), 8 consecutive launches in the step's steady state.
stage_s27_b() {
    local db=/tmp/s27-full-$$.db
    timeout 200 ncu --clock-control none --cache-control none --set full --import-source no \
        --kernel-name "regex:rmsnorm_kernel|rope_kv_kernel|attention_kernel|gemv" \
        --launch-skip ${S27_SKIP:-64} --launch-count ${S27_COUNT:-8} --print-details all \
        $BIN decode --model ${S27_MODEL:-qwen3-30b-a3b} --variants native --mode graph --ctx 512 \
        --tokens 2 --ledgers throughput --timeout 0.5 --device cuda --dtype bf16 --db "$db" --quiet \
        >"$OUT/s27_full.txt" 2>&1
    echo "ncu: exit $?"
    grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|L2 Cache Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall|Grid Size" \
        "$OUT/s27_full.txt" | head -150
    rm -f "$db"
}


# Session 27, third call: decode attention's cluster path (a kv head's splits one cluster,
# merged in distributed shared memory): its gpu tests, its time per launch under ncu at ctx 512
# and 2048 (qwen3-30b-a3b), and both models' native decode at ctx 512 and 2048.
stage_s27_c() {
    local t0=$SECONDS
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*' 150 "$OUT/s27_c_tests.txt"
    echo "gpu tests after $((SECONDS - t0)) s"
    grep -E "cluster|FAILED|Failure" "$OUT/s27_c_tests.txt" | head -20
    local ctx
    for ctx in 512 2048; do
        S27_CTX=$ctx S27_KERNELS="rope_kv_kernel|attention" S27_LAUNCHES=100 S27_PROFILE_LIMIT=90 \
            s27_step_profile qwen3-30b-a3b native s27_c_attention_$ctx
    done
    echo "ncu after $((SECONDS - t0)) s"
    : >"$OUT/s27_c.txt"
    local m
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 110 $BIN decode --model $m --variants native --mode graph --ctx 512,2048 --tokens 32 \
            --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" --label s27-c-$m \
            --quiet >>"$OUT/s27_c.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode|PASS|FAIL" "$OUT/s27_c.txt" | head -20
}

# Session 27, fourth call: decode attention's phases on both paths (the timed gpu test, warm and
# cold), its other gpu tests, and the native decode of both models with the grid path back as
# the default.
stage_s27_d() {
    local t0=$SECONDS
    timeout 150 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='decode_attention_cuda.*:rmsnorm_cuda.*:rope_kv_cuda.*:decode_native_cuda.*' \
        >"$OUT/s27_d_tests.txt" 2>&1
    echo "gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^attention|^\[  (PASSED|FAILED)|Failure" "$OUT/s27_d_tests.txt" | head -60
    S27_KERNELS="rmsnorm_kernel|rope_kv_kernel" S27_LAUNCHES=60 S27_PROFILE_LIMIT=90 \
        s27_step_profile qwen3-30b-a3b native s27_d_small
    echo "ncu after $((SECONDS - t0)) s"
    : >"$OUT/s27_d.txt"
    local m
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 100 $BIN decode --model $m --variants native --mode graph --ctx 512,2048 --tokens 32 \
            --device cuda --dtype bf16 --ledgers throughput --db "$DB" --label s27-d-$m \
            --quiet >>"$OUT/s27_d.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode" "$OUT/s27_d.txt" | head -20
}

# Session 27, last call (branch s27-moe-fused; about 150 s of device time left after the build,
# so in order of what matters): the fused MoE block (RMSNorm and the router's GEMV inside the one
# launch) on a short limit (a grid barrier that never opens hangs); qwen3-30b-a3b's native decode
# at ctx 512 through it, with the correctness ledger; decode attention's phases (the timed test);
# the changed small kernels' gpu tests; llama3-8b's native decode at ctx 512.
stage_s27_e() {
    local t0=$SECONDS
    timeout 40 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused*' \
        >"$OUT/s27_e_fused.txt" 2>&1
    local rc=$?
    echo "the fused MoE test: exit $rc after $((SECONDS - t0)) s"
    grep -E "Failure|FAILED|PASSED|Expected|Which is|error" "$OUT/s27_e_fused.txt" | head -20
    : >"$OUT/s27_e.txt"
    if [ $rc -ne 124 ]; then
        timeout 50 $BIN decode --model qwen3-30b-a3b --variants native --mode graph --ctx 512 \
            --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
            --label s27-e-qwen --quiet >>"$OUT/s27_e.txt" 2>&1
        echo "decode qwen3-30b-a3b: exit $? after $((SECONDS - t0)) s"
        grep -E "^decode" "$OUT/s27_e.txt" | head -6
    fi
    timeout 30 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='decode_attention_cuda.the_paths_and_their_phases*' \
        >"$OUT/s27_e_attention.txt" 2>&1
    echo "attention phases: exit $? after $((SECONDS - t0)) s"
    grep -E "^attention|^\[  (PASSED|FAILED)|Failure" "$OUT/s27_e_attention.txt" | head -40
    timeout 30 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='rmsnorm_cuda.*:rope_kv_cuda.*:decode_native_cuda.*' \
        >"$OUT/s27_e_tests.txt" 2>&1
    echo "gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED)|Failure" "$OUT/s27_e_tests.txt" | head -12
    timeout 25 $BIN decode --model llama3-8b --variants native --mode graph --ctx 512 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput --db "$DB" \
        --label s27-e-llama --quiet >>"$OUT/s27_e.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode" "$OUT/s27_e.txt" | head -8
}

# Session 27, if about 75 s are left after the build: the fused MoE test, then qwen3-30b-a3b's
# native decode at ctx 512 through it (throughput and correctness).
stage_s27_f() {
    local t0=$SECONDS
    timeout 30 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused*' \
        >"$OUT/s27_f_fused.txt" 2>&1
    local rc=$?
    echo "the fused MoE test: exit $rc after $((SECONDS - t0)) s"
    grep -E "Failure|FAILED|PASSED|Expected|Which is|error" "$OUT/s27_f_fused.txt" | head -20
    [ $rc -eq 124 ] && return 1
    timeout 45 $BIN decode --model qwen3-30b-a3b --variants native --mode graph --ctx 512 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s27-f-qwen --quiet >"$OUT/s27_f.txt" 2>&1
    echo "decode qwen3-30b-a3b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode" "$OUT/s27_f.txt" | head -6
}

# Session 28, first call (merge of main into s27-moe-fused): the fused MoE block's gpu test on a
# short limit (a grid barrier that never opens hangs), both models' native decode at ctx 512 and
# 2048 with the correctness ledger, decode attention's phases (the timed test), then the decode
# kernels' gpu tests (the changed rmsnorm and rope_kv among them) and the MoE's.
stage_s28_a() {
    local t0=$SECONDS
    timeout 40 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused*' \
        >"$OUT/s28_a_fused.txt" 2>&1
    local rc=$?
    echo "the fused MoE test: exit $rc after $((SECONDS - t0)) s"
    grep -E "Failure|FAILED|PASSED|Expected|Which is|error" "$OUT/s28_a_fused.txt" | head -20
    : >"$OUT/s28_a.txt"
    local m
    for m in qwen3-30b-a3b llama3-8b; do
        if [ $rc -eq 124 ] && [ $m = qwen3-30b-a3b ]; then continue; fi
        timeout 110 $BIN decode --model $m --variants native --mode graph --ctx 512,2048 --tokens 32 \
            --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" --label s28-a-$m \
            --quiet >>"$OUT/s28_a.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode|PASS|FAIL" "$OUT/s28_a.txt" | head -20
    timeout 40 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='decode_attention_cuda.the_paths_and_their_phases*' \
        >"$OUT/s28_a_attention.txt" 2>&1
    echo "attention phases: exit $? after $((SECONDS - t0)) s"
    grep -E "^attention|^\[  (PASSED|FAILED)|Failure" "$OUT/s28_a_attention.txt" | head -40
    s25_gtests 'rmsnorm_cuda.*:rope_kv_cuda.*:decode_attention_cuda.*:decode_native_cuda.*:moe_cuda.*-decode_attention_cuda.the_paths*:moe_cuda.the_fused*' \
        170 "$OUT/s28_a_tests.txt"
    grep -E "moe native T=" "$OUT/s28_a_tests.txt" | head -24
}

# Session 28, second call: the fused MoE prologue with its weights prefetched before the
# dependency wait and a block an expert for the router (one DRAM round trip, not eight): the
# fused block against the three launches it replaces (timed test, with the prologue's phases),
# its correctness test, qwen3-30b-a3b's native decode at ctx 512 and 2048, then memcheck and
# racecheck over the fused MoE test and the changed decode kernels' tests.
stage_s28_b() {
    local t0=$SECONDS
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.the_fused*' >"$OUT/s28_b_fused.txt" 2>&1
    local rc=$?
    echo "the fused MoE tests: exit $rc after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED|PASSED|Expected|Which is" "$OUT/s28_b_fused.txt" | head -24
    [ $rc -eq 124 ] && return 1
    timeout 60 $BIN decode --model qwen3-30b-a3b --variants native --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s28-b-qwen --quiet >"$OUT/s28_b.txt" 2>&1
    echo "decode qwen3-30b-a3b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode" "$OUT/s28_b.txt" | head -6
    local tool
    for tool in memcheck racecheck; do
        timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=fourfold \
            $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='moe_cuda.the_fused_norm*:rmsnorm_cuda.*:rope_kv_cuda.*:decode_attention_cuda.*-decode_attention_cuda.the_paths*' \
            >"$OUT/s28_b_$tool.txt" 2>&1
        echo "compute-sanitizer $tool: exit $? after $((SECONDS - t0)) s"
        grep -E "ERROR SUMMARY|Invalid|Race|^\[  (PASSED|FAILED) " "$OUT/s28_b_$tool.txt" | sort | uniq -c | head
    done
}

# Session 28, third call: the fused MoE block with h read from each block's shared memory (not
# through L2 per unit) and the residual add in the launch (qwen3's next qkv GEMV then takes the
# norm): the fused tests (timed and float64), qwen3-30b-a3b's native decode at ctx 512 and 2048
# with correctness, memcheck and racecheck over the fused MoE tests (h shares the stage area).
stage_s28_c() {
    local t0=$SECONDS
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.the_fused*' >"$OUT/s28_c_fused.txt" 2>&1
    local rc=$?
    echo "the fused MoE tests: exit $rc after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED|PASSED|Expected|Which is" "$OUT/s28_c_fused.txt" | head -24
    [ $rc -eq 124 ] && return 1
    timeout 60 $BIN decode --model qwen3-30b-a3b --variants native --mode graph --ctx 512,2048 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" \
        --label s28-c-qwen --quiet >"$OUT/s28_c.txt" 2>&1
    echo "decode qwen3-30b-a3b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode" "$OUT/s28_c.txt" | head -6
    local tool
    for tool in memcheck racecheck; do
        timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=fourfold \
            $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_norm*' \
            >"$OUT/s28_c_$tool.txt" 2>&1
        echo "compute-sanitizer $tool: exit $? after $((SECONDS - t0)) s"
        grep -E "ERROR SUMMARY|Invalid|Race|^\[  (PASSED|FAILED) " "$OUT/s28_c_$tool.txt" | sort | uniq -c | head
    done
}

# Session 28, third call (s28_c's MoE work, with decode attention at 8 warps a block): the plan
# tests, the fused MoE tests (timed and float64), decode attention's gpu tests and its phases,
# both models' native decode at ctx 512 and 2048 with correctness, then memcheck and racecheck
# over the fused MoE test and decode attention's tests.
stage_s28_d() {
    local t0=$SECONDS
    $BUILD/tests/fourfold_tests --gtest_filter='decoder_kernel_plans.*:kernel_moe_plans.*' 2>&1 | tail -2
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.the_fused*' >"$OUT/s28_d_fused.txt" 2>&1
    local rc=$?
    echo "the fused MoE tests: exit $rc after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED|PASSED|Expected|Which is" "$OUT/s28_d_fused.txt" | head -24
    [ $rc -eq 124 ] && return 1
    timeout 60 $BUILD/tests/fourfold_gpu_tests --gtest_filter='decode_attention_cuda.*' \
        >"$OUT/s28_d_attention.txt" 2>&1
    echo "attention tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^attention.*grid path|^\[  (PASSED|FAILED)|Failure" "$OUT/s28_d_attention.txt" | head -24
    : >"$OUT/s28_d.txt"
    local m
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 75 $BIN decode --model $m --variants native,native_fused --mode graph \
            --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
            --db "$DB" --label s28-d-$m --quiet >>"$OUT/s28_d.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode" "$OUT/s28_d.txt" | head -24
    local tool
    for tool in memcheck racecheck; do
        timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 --kernel-name kns=fourfold \
            $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='moe_cuda.the_fused_norm*:decode_attention_cuda.*-decode_attention_cuda.the_paths*' \
            >"$OUT/s28_d_$tool.txt" 2>&1
        echo "compute-sanitizer $tool: exit $? after $((SECONDS - t0)) s"
        grep -E "ERROR SUMMARY|Invalid|Race|^\[  (PASSED|FAILED) " "$OUT/s28_d_$tool.txt" | sort | uniq -c | head
    done
    # qwen3's native step kernel by kernel, if the call has the time left
    if [ $((SECONDS - t0)) -lt ${S28_PROFILE_BEFORE:-250} ]; then
        S27_KERNELS="rmsnorm_kernel|rope_kv_kernel|attention|gemv|moe_one_launch" S27_LAUNCHES=240 \
            S27_PROFILE_LIMIT=80 s27_step_profile qwen3-30b-a3b native s28_d_qwen_profile
    fi
    echo "done after $((SECONDS - t0)) s"
}

# For the next session's first call (written at the end of session 28, not yet run): what
# s28_d left unchecked at `d14571f`: racecheck over decode attention (8 warps) and the fused MoE
# block (h in the stage area) with room to finish, then the decode kernels' and the MoE's whole
# gpu tests (the decoder's native MoE layers through the fused block, eager and captured).
stage_s28_e() {
    local t0=$SECONDS
    timeout ${S28_RACECHECK_LIMIT:-200} compute-sanitizer --tool racecheck --error-exitcode 9 \
        --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.the_fused_norm*:decode_attention_cuda.*-decode_attention_cuda.the_paths*' \
        >"$OUT/s28_e_racecheck.txt" 2>&1
    echo "compute-sanitizer racecheck: exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|Race|^\[  (PASSED|FAILED) " "$OUT/s28_e_racecheck.txt" | sort | uniq -c | head
    s25_gtests 'rmsnorm_cuda.*:rope_kv_cuda.*:decode_native_cuda.*:moe_cuda.*-moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' \
        200 "$OUT/s28_e_tests.txt"
}

# Session 29's first call (2026-12-03): the o projection's weights prefetched into L2 while
# rope_kv or decode attention run (their memory otherwise idle), against no prefetch, both
# models' native_fused at ctx 512 in one run each; then the decode kernels' and the MoE's gpu
# tests at head (the new prefetch test among them), then racecheck over decode attention and the
# fused MoE block with the time left (s28_e's check, never finished). Ran at `3430d4c`; the
# prefetch (and the --prefetch option) lost on both models and is reverted, so this stage no
# longer runs as written (docs/performance.md, session 29).
stage_s29_a() {
    local t0=$SECONDS m
    : >"$OUT/s29_a.txt"
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 100 $BIN decode --model $m --variants native_fused --prefetch attention,rope_kv,off \
            --mode graph --ctx 512 --tokens 32 --device cuda --dtype bf16 \
            --ledgers throughput,correctness --db "$DB" --label s29-a-$m --quiet >>"$OUT/s29_a.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode" "$OUT/s29_a.txt" | head -24
    # the routing's redux top-k: the fused block's timed test (its phases at T = 1 and 8)
    timeout 60 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_block*' \
        >"$OUT/s29_a_fused.txt" 2>&1
    echo "the fused MoE block's timed test: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED|PASSED" "$OUT/s29_a_fused.txt" | head -16
    s25_gtests 'decode_attention_cuda.*:rmsnorm_cuda.*:rope_kv_cuda.*:decode_native_cuda.*:moe_cuda.*-moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*:decode_attention_cuda.the_paths*' \
        170 "$OUT/s29_a_tests.txt"
    local left=$((${S29_BUDGET:-540} - (SECONDS - t0)))
    if [ $left -gt 40 ]; then
        timeout $left compute-sanitizer --tool racecheck --error-exitcode 9 \
            --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='moe_cuda.the_fused_norm*:decode_attention_cuda.*-decode_attention_cuda.the_paths*' \
            >"$OUT/s29_a_racecheck.txt" 2>&1
        echo "compute-sanitizer racecheck: exit $? after $((SECONDS - t0)) s (limit $left s)"
        grep -E "ERROR SUMMARY|Race|^\[  (PASSED|FAILED|RUN) " "$OUT/s29_a_racecheck.txt" | sort | uniq -c | head -20
    fi
    echo "done after $((SECONDS - t0)) s"
}

# Session 29's second call: the balanced GEMV loads its run's first step into registers right
# after the dependency wait, before its prologue (the RMSNorm or SwiGLU of x into shared
# memory), so that round trip overlaps the prologue. The GEMV and native decode gpu tests, the
# prologue's cost over none at the op level (none is unchanged: the same-call baseline), both
# models' native and native_fused at ctx 512 and 2048, then memcheck over the GEMV tests.
stage_s29_b() {
    local t0=$SECONDS
    s25_gtests 'native.gemv*:decode_native_cuda.*' 130 "$OUT/s29_b_tests.txt"
    : >"$OUT/s29_b.txt"
    timeout 60 $BIN run --workload linear_decode --shape 1x6144x4096,1x28672x4096,1x5120x2048 \
        --param prologue=none,rms_norm --dtype bf16 --variants native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s29-b-norm --quiet >>"$OUT/s29_b.txt" 2>&1
    timeout 30 $BIN run --workload linear_decode --shape 1x4096x14336 --param prologue=none,swiglu \
        --param bias=1 --dtype bf16 --variants native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s29-b-swiglu --quiet >>"$OUT/s29_b.txt" 2>&1
    echo "linear_decode prologues: exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*(graph|FAIL|skipped)" "$OUT/s29_b.txt" | head -16
    local m
    for m in llama3-8b qwen3-30b-a3b; do
        timeout 80 $BIN decode --model $m --variants native,native_fused --mode graph \
            --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
            --db "$DB" --label s29-b-$m --quiet >>"$OUT/s29_b.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode" "$OUT/s29_b.txt" | head -24
    local left=$((${S29_BUDGET:-400} - (SECONDS - t0)))
    if [ $left -gt 40 ]; then
        FOURFOLD_NATIVE_TEST_SIZES=small timeout $left compute-sanitizer --tool memcheck --error-exitcode 9 \
            --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.gemv*' \
            >"$OUT/s29_b_memcheck.txt" 2>&1
        echo "memcheck (gemv): exit $? after $((SECONDS - t0)) s (limit $left s)"
        grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s29_b_memcheck.txt" | sort | uniq -c | head
    fi
    echo "done after $((SECONDS - t0)) s"
}

# Session 29's third call: the SwiGLU prologue's x read in batches of 3 vectors a thread (one L2
# round trip a batch, where s29_b measured it at +4.4 µs over no prologue for llama3-8b's down
# projection): the GEMV and native decode gpu tests, the down projection with and without its
# prologue, llama3-8b native and native_fused at ctx 512 and 2048, memcheck over the GEMV tests.
stage_s29_c() {
    local t0=$SECONDS
    s25_gtests 'native.gemv*:decode_native_cuda.*' 130 "$OUT/s29_c_tests.txt"
    : >"$OUT/s29_c.txt"
    timeout 30 $BIN run --workload linear_decode --shape 1x4096x14336 --param prologue=none,swiglu \
        --param bias=1 --dtype bf16 --variants native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s29-c-swiglu --quiet >>"$OUT/s29_c.txt" 2>&1
    echo "linear_decode swiglu: exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*(graph|FAIL|skipped)" "$OUT/s29_c.txt" | head -8
    timeout 80 $BIN decode --model llama3-8b --variants native,native_fused --mode graph \
        --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
        --db "$DB" --label s29-c-llama3-8b --quiet >>"$OUT/s29_c.txt" 2>&1
    echo "decode llama3-8b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode" "$OUT/s29_c.txt" | head -12
    FOURFOLD_NATIVE_TEST_SIZES=small timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 \
        --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.gemv*' \
        >"$OUT/s29_c_memcheck.txt" 2>&1
    echo "memcheck (gemv): exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s29_c_memcheck.txt" | sort | uniq -c | head
    echo "done after $((SECONDS - t0)) s"
}

# For the next session (written at the end of session 29, not run): moe_decode part=block, the
# decoder's MoE block from the residual stream, stock against native (the one launch with its
# fused prologue) at Qwen3-30B-A3B's shape, 1 and 8 tokens, every ledger. Predicted: native about
# 33 µs at 1 token and 160 at 8 (cold; the timed gpu test's 31.7 and 154.5 are warm), stock about
# 115 and 270.
stage_s30_block() {
    local t0=$SECONDS
    timeout 120 $BIN run --workload moe_decode --param part=block \
        --shape 1x128x8x2048x768,8x128x8x2048x768 --dtype bf16 --variants stock,native \
        --device cuda --min-time 0.1 --db "$DB" --label s30-block >"$OUT/s30_block.txt" 2>&1
    echo "moe_decode part=block: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode|speed-up|FAIL|skipped" "$OUT/s30_block.txt" | head -24
}

# Session 30: one call, two builds, for a same-machine A/B. .s30alt/<snap>/ holds other versions
# of some files (untracked, not committed: written by the session before its device call);
# s30_swap_<snap> saves the tree's own versions to .s30alt/head/ once, then copies the snapshot
# over the tree (the next `build` stage recompiles what changed).
s30_swap() {
    local snap=$1 f
    [ -d .s30alt/$snap ] || { echo "no snapshot .s30alt/$snap"; return 1; }
    if [ ! -d .s30alt/head ]; then
        for f in $(cd .s30alt/$snap && find . -type f); do
            mkdir -p ".s30alt/head/$(dirname "$f")"
            cp "$f" ".s30alt/head/$f"
        done
    fi
    for f in $(cd .s30alt/$snap && find . -type f); do cp ".s30alt/$snap/$f" "$f"; done
    echo "tree now at snapshot $snap"
}
stage_s30_swap_base() { s30_swap base; }
stage_s30_swap_head() { s30_swap head; }

# What the A/B measures at each build: the down projection with and without its SwiGLU prologue
# (silu's cost at the op level), the fused MoE block's timed test (silu inside the experts' gate),
# both models' native (no RoPE in attention either way: a same-build control) and native_fused at
# ctx 512.
s30_measure() {
    local tag=$1 t0=$SECONDS m
    : >"$OUT/s30_$tag.txt"
    timeout 30 $BIN run --workload linear_decode --shape 1x4096x14336 --param prologue=none,swiglu \
        --param bias=1 --dtype bf16 --variants native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s30-$tag-swiglu --quiet >>"$OUT/s30_$tag.txt" 2>&1
    echo "linear_decode swiglu ($tag): exit $? after $((SECONDS - t0)) s"
    timeout 40 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_block*' \
        >"$OUT/s30_${tag}_fused.txt" 2>&1
    echo "fused MoE timed test ($tag): exit $? after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED" "$OUT/s30_${tag}_fused.txt" | head -8
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 70 $BIN decode --model $m --variants native,native_fused --mode graph \
            --ctx 512 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
            --db "$DB" --label s30-$tag-$m --quiet >>"$OUT/s30_$tag.txt" 2>&1
        echo "decode $m ($tag): exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^(linear_decode .*graph|decode)|FAIL" "$OUT/s30_$tag.txt" | head -12
}
stage_s30_base() { s30_measure base; }
# the head build: its measures, then the new and touched gpu tests (the bitwise RoPE-in-attention
# test, the silu users against float64)
stage_s30_head() {
    s30_measure head
    s25_gtests 'decode_attention_cuda.rope_fused*:decode_attention_cuda.waits*:rope_kv_cuda.*:decode_native_cuda.*:swiglu_cuda.*:native.gemv_with*:moe_cuda.the_fused_norm*' \
        150 "$OUT/s30_head_tests.txt"
}

# Session 30's GEMV prefetch experiment (branch s30-gemv-prefetch): each warp prefetches its share
# of a 24 MB budget of the launch's weights into L2 before its dependency wait (it had two 2 KB
# steps on the balanced path, one step on the streamed one and none on the split-K one, which
# qwen3's o projection takes), switched by FOURFOLD_GEMV_PREFETCH_MB in one build: "first" (as
# before), 8, 24, 40. The op level (each call after the same GEMV: the prefetch competes with a
# streaming kernel) at the decoders' shapes, then both models native_fused at ctx 512.
# Predicted: qwen3 native_fused +5-8 % (its o projection from L2 after attention), llama3-8b
# +2-4 %; the op level unchanged to -3 %.
stage_s30_prefetch() {
    local t0=$SECONDS mb m
    : >"$OUT/s30_prefetch.txt"
    for mb in first 24; do
        FOURFOLD_GEMV_PREFETCH_MB=$mb timeout 60 $BIN run --workload linear_decode \
            --shape 1x2048x4096,1x5120x2048,1x4096x4096,1x6144x4096,1x28672x4096,1x4096x14336 \
            --dtype bf16 --variants native --device cuda --ledgers op_time,correctness --min-time 0.1 \
            --db "$DB" --label s30-prefetch-op-$mb --quiet >>"$OUT/s30_prefetch.txt" 2>&1
        echo "linear_decode (prefetch $mb): exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^linear_decode .*graph|FAIL" "$OUT/s30_prefetch.txt" | head -14
    for mb in first 24 8 40; do
        for m in qwen3-30b-a3b llama3-8b; do
            FOURFOLD_GEMV_PREFETCH_MB=$mb timeout 50 $BIN decode --model $m --variants native_fused \
                --mode graph --ctx 512 --tokens 32 --device cuda --dtype bf16 \
                --ledgers throughput,correctness --db "$DB" --label s30-prefetch-$mb-$m --quiet \
                >>"$OUT/s30_prefetch.txt" 2>&1
            echo "decode $m (prefetch $mb): exit $? after $((SECONDS - t0)) s"
        done
    done
    grep -E "^decode|FAIL" "$OUT/s30_prefetch.txt" | head -12
}

# Session 30's second call: the prefetch A/B above, the routing's two new probe stops (the timed
# fused-block test), moe_decode part=block (s30_block), the gpu tests of the kernels this session
# touched, then memcheck over the fused MoE tests (the redux routing has not had one), within
# S30_BUDGET seconds after the build.
stage_s30_b() {
    local t0=$SECONDS
    stage_s30_prefetch
    timeout 40 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_block*' \
        >"$OUT/s30_b_fused.txt" 2>&1
    echo "fused MoE timed test: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED" "$OUT/s30_b_fused.txt" | head -16
    stage_s30_block
    s25_gtests 'moe_cuda.*:native.gemv*:decode_native_cuda.*:decode_attention_cuda.*:rope_kv_cuda.*:rmsnorm_cuda.*-moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*:decode_attention_cuda.the_paths*' \
        150 "$OUT/s30_b_tests.txt"
    local left=$((${S30_BUDGET:-440} - (SECONDS - t0)))
    if [ $left -gt 30 ]; then
        timeout $left compute-sanitizer --tool memcheck --error-exitcode 9 --kernel-name kns=fourfold \
            $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_norm*:moe_cuda.native_step_is*' \
            >"$OUT/s30_b_memcheck.txt" 2>&1
        echo "memcheck (fused MoE): exit $? after $((SECONDS - t0)) s (limit $left s)"
        grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s30_b_memcheck.txt" | sort | uniq -c | head
    fi
    echo "done after $((SECONDS - t0)) s"
}

# Session 30's third call: the routing's top-k by rank (up to 128 experts; the rounds beyond) and
# the grid barrier with two alternating counts (its generation released before the count's reset:
# predicted stop 5 -> 6 1.85 -> about 1.2 us at T = 1; the softmax grid path's tests take it too):
# the timed fused-block test with its probe stops (predicted at T = 1: the top-k stop 7.64 -> about
# 6.1 us, the block 31.5 -> about 30.0; T = 8: 15.67 -> about 12.5, 153.4 -> about 150), the MoE and
# native decode gpu tests (the ties and the small shapes now with 200 experts: the rounds),
# part=block, both models' decode at ctx 512 and 2048 (qwen3 native_fused predicted about 317
# tokens/s at 512), memcheck over the routing tests, then racecheck over the GEMV tests (small
# sizes) with what is left of S30_BUDGET.
stage_s30_c() {
    local t0=$SECONDS m
    timeout 40 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_block*' \
        >"$OUT/s30_c_fused.txt" 2>&1
    echo "fused MoE timed test: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED" "$OUT/s30_c_fused.txt" | head -16
    s25_gtests 'moe_cuda.*:decode_native_cuda.*:native.softmax*-moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' \
        130 "$OUT/s30_c_tests.txt"
    : >"$OUT/s30_c.txt"
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 60 $BIN decode --model $m --variants native,native_fused --mode graph \
            --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
            --db "$DB" --label s30-c-$m --quiet >>"$OUT/s30_c.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode .*graph|FAIL" "$OUT/s30_c.txt" | head -12
    stage_s30_block
    timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 --kernel-name kns=fourfold \
        $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.ties*:moe_cuda.native_step_matches_float64_on_small*:moe_cuda.the_fused_norm*' \
        >"$OUT/s30_c_memcheck.txt" 2>&1
    echo "memcheck (routing): exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s30_c_memcheck.txt" | sort | uniq -c | head
    local left=$((${S30_BUDGET:-400} - (SECONDS - t0)))
    if [ $left -gt 30 ]; then
        FOURFOLD_NATIVE_TEST_SIZES=small timeout $left compute-sanitizer --tool racecheck \
            --error-exitcode 9 --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='native.gemv*' >"$OUT/s30_c_racecheck.txt" 2>&1
        echo "racecheck (gemv): exit $? after $((SECONDS - t0)) s (limit $left s)"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED|RUN) " "$OUT/s30_c_racecheck.txt" | sort | uniq -c | head -20
    fi
    echo "done after $((SECONDS - t0)) s"
}

# Session 30's last call (the device time left, about 270 s): the build with the routing's rounds
# back (the rank lost) and the two-count barrier kept: the timed fused block (predicted T = 1 about
# 31.0 us, T = 8 about 154.4), the MoE gpu tests, then racecheck through `fourfold run` (one process
# without cuBLAS: the gtest process's internal sanitizer error, sessions 1-2 of issue 13) over the
# GEMV's prologues on the balanced path, which no racecheck has seen since ba3b4f3 / d5f3eb6.
stage_s30_d() {
    local t0=$SECONDS t
    timeout 40 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_block*' \
        >"$OUT/s30_d_fused.txt" 2>&1
    echo "fused MoE timed test: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED" "$OUT/s30_d_fused.txt" | head -16
    s25_gtests 'moe_cuda.ties*:moe_cuda.native_step*:moe_cuda.the_fused_norm*:moe_cuda.decoder_moe*' \
        70 "$OUT/s30_d_tests.txt"
    : >"$OUT/s30_d_racecheck.txt"
    for t in bf16 fp32; do
        timeout 45 compute-sanitizer --tool racecheck --kernel-name kns=fourfold \
            $BIN run --workload linear_decode --shape 1x2304x1024,1x2112x1032 \
            --param prologue=rms_norm,swiglu --param bias=false,true --dtype $t --variants native \
            --ledgers correctness --device cuda --no-isolate --db /tmp/rc-$$.db \
            >>"$OUT/s30_d_racecheck.txt" 2>&1
        echo "racecheck linear_decode prologues $t: exit $? after $((SECONDS - t0)) s"
    done
    grep -E "Internal|hazard|RACECHECK SUMMARY|records:|FAIL" "$OUT/s30_d_racecheck.txt" | sort | uniq -c | head -20
}

# Decode attention's timed phases test into $OUT/<tag>_phases.txt (at most <limit> s).
phases_run() {
    local tag=$1 limit=$2 t0=$SECONDS
    timeout "$limit" $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='decode_attention_cuda.the_paths_and_their_phases*' \
        >"$OUT/${tag}_phases.txt" 2>&1
    echo "attention phases: exit $? after $((SECONDS - t0)) s"
}

# Decode attention's phases (the timed gpu test), grid path, into $OUT/<tag>_phases.txt.
s31_phases() {
    phases_run "$1" 60
    grep -E "^attention .*grid|Failure" "$OUT/${1}_phases.txt" | sed 's/; .*//' | head -20
}

# Session 31's first call: session 30's unrun build (s30_d), then issue 13's softmax and pad jobs
# at HEAD (stock and native, the article suite's shapes; the softmax grid path has the two-count
# barrier since 6206b6c), memcheck over the softmax gpu tests (the grid path's new barrier) and
# over decode attention's RoPE-fused test, racecheck over that test, and decode attention's
# phases (the baseline for this session's attention change).
stage_s31_a() {
    local t0=$SECONDS
    stage_s30_d
    timeout -s INT 150 $BIN run --suite article --workload softmax,pad --variants stock,native \
        --device cuda --label s31-a-article --db "$DB" --quiet --min-time 0.1 \
        >"$OUT/s31_a_article.txt" 2>&1
    echo "article softmax,pad: exit $? after $((SECONDS - t0)) s"
    $BIN export --format json --run s31-a-article --db "$DB" >/tmp/s31-a.json &&
        python3 bench/gpu/native_table.py /tmp/s31-a.json | tee "$OUT/s31_a_native_table.md" | tail -40
    timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 --kernel-name kns=fourfold \
        $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='native.softmax*:decode_attention_cuda.rope_fused*' \
        >"$OUT/s31_a_memcheck.txt" 2>&1
    echo "memcheck (softmax, rope-fused attention): exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s31_a_memcheck.txt" | sort | uniq -c | head
    timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 --kernel-name kns=fourfold \
        $BUILD/tests/fourfold_gpu_tests --gtest_filter='decode_attention_cuda.rope_fused*' \
        >"$OUT/s31_a_racecheck.txt" 2>&1
    echo "racecheck (rope-fused attention): exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s31_a_racecheck.txt" | sort | uniq -c | head
    s31_phases s31_a
    echo "done after $((SECONDS - t0)) s"
}

# Session 31's A/B helpers: as s30_swap, over the untracked snapshot directory .s31alt/ (base =
# main's files before the change; head = the tree's own, saved on the first swap).
s31_swap() {
    local snap=$1 f
    [ -d .s31alt/$snap ] || { echo "no snapshot .s31alt/$snap"; return 1; }
    if [ ! -d .s31alt/head ]; then
        for f in $(cd .s31alt/$snap && find . -type f); do
            mkdir -p ".s31alt/head/$(dirname "$f")"
            cp "$f" ".s31alt/head/$f"
        done
    fi
    for f in $(cd .s31alt/$snap && find . -type f); do cp ".s31alt/$snap/$f" "$f"; done
    echo "tree now at snapshot $snap"
}
stage_s31_swap_base() { s31_swap base; }

# Both models' decode at ctx 512 and 2048 (graph, 32 tokens) with the given variants, into
# $OUT/<name>_decode_<tag>.txt, labelled <name>-<tag>-<model>.
decode_both() {
    local tag=$1 variants=$2 name=$3 t0=$SECONDS m
    : >"$OUT/${name}_decode_$tag.txt"
    for m in qwen3-30b-a3b llama3-8b; do
        timeout 70 $BIN decode --model $m --variants "$variants" --mode graph \
            --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
            --db "$DB" --label $name-$tag-$m --quiet >>"$OUT/${name}_decode_$tag.txt" 2>&1
        echo "decode $m ($tag): exit $? after $((SECONDS - t0)) s"
    done
    grep -E "^decode .*graph|FAIL" "$OUT/${name}_decode_$tag.txt" | head -12
}
# Both models' native and native_fused decode, tagged.
s31_decode() { decode_both "$1" native,native_fused s31; }

# Session 31's second call: decode attention's split merge after a per-kv-head barrier, every
# block merging a share (the tree). Its gpu tests and the decoder's, the phases, both models'
# decode; then (stages s31_swap_base, build, s31_base) main's attention files rebuilt and the
# decode again: the same machine's A/B.
# Predicted (warm, whole launch): qwen3 ctx 512 12.97 -> about 11.5 us, ctx 2048 18.4 -> about 13;
# llama3-8b ctx 512 10.0 -> about 9, ctx 2048 15.3 -> about 12.5. Tokens/s: qwen3 native_fused
# ctx 2048 +7 %, ctx 512 +1.5 %; llama3-8b ctx 2048 +2 %.
stage_s31_b() {
    local t0=$SECONDS
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s31_b_tests.txt"
    s31_phases s31_b
    s31_decode head
    echo "done after $((SECONDS - t0)) s"
}
stage_s31_article() {
    local t0=$SECONDS
    timeout -s INT ${S31_ARTICLE_S:-150} $BIN run --suite article --workload softmax,pad \
        --device cuda --label s31-article --db "$DB" --quiet --min-time 0.1 \
        >"$OUT/s31_article.txt" 2>&1
    echo "article softmax,pad: exit $? after $((SECONDS - t0)) s"
    $BIN export --format json --run s31-article --db "$DB" >/tmp/s31-article.json &&
        python3 bench/gpu/native_table.py /tmp/s31-article.json | tee "$OUT/s31_article_table.md" | tail -40
}
stage_s31_base() { s31_decode base; }

# Session 31's third call: decode attention's rounds by a transposed butterfly (the tree) against
# 64dc060's attend (.s31alt/base): tests, phases, decode, memcheck and racecheck of the new
# attend on the tree's build; then the base build's decode; then the article's softmax and pad.
# Predicted (warm, whole launch, positions phase 6.9 us at qwen3 ctx 512): the phase about 5 us,
# qwen3 ctx 512 whole 12.97 -> about 11; qwen3 native_fused +3 %, llama3-8b +1 %.
stage_s31_c() {
    local t0=$SECONDS
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s31_c_tests.txt"
    s31_phases s31_c
    s31_decode head
    timeout 50 compute-sanitizer --tool memcheck --error-exitcode 9 --kernel-name kns=fourfold \
        $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='decode_attention_cuda.matches*:decode_attention_cuda.replays*:decode_attention_cuda.rope_fused*' \
        >"$OUT/s31_c_memcheck.txt" 2>&1
    echo "memcheck (attention): exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s31_c_memcheck.txt" | sort | uniq -c | head
    timeout 50 compute-sanitizer --tool racecheck --error-exitcode 9 --kernel-name kns=fourfold \
        $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='decode_attention_cuda.matches*:decode_attention_cuda.rope_fused*' \
        >"$OUT/s31_c_racecheck.txt" 2>&1
    echo "racecheck (attention): exit $? after $((SECONDS - t0)) s"
    grep -E "RACECHECK SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s31_c_racecheck.txt" | sort | uniq -c | head
    echo "done after $((SECONDS - t0)) s"
}

# Session 31's last call: the gpu tests of s31_c again (their log did not come back) and
# racecheck over the RoPE-fused attention test alone (s31_c's racecheck over two tests ran past
# its limit), on aee5cd3's attend.
stage_s31_d() {
    local t0=$SECONDS
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s31_d_tests.txt"
    grep -E "^\[  (PASSED|FAILED) |FAILED|Failure" "$OUT/s31_d_tests.txt" | head
    timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 --kernel-name kns=fourfold \
        $BUILD/tests/fourfold_gpu_tests --gtest_filter='decode_attention_cuda.rope_fused*' \
        >"$OUT/s31_d_racecheck.txt" 2>&1
    echo "racecheck (rope-fused attention): exit $? after $((SECONDS - t0)) s"
    grep -E "RACECHECK SUMMARY|^\[  (PASSED|FAILED) " "$OUT/s31_d_racecheck.txt" | sort | uniq -c | head
}

# Decode attention's phases, both paths, and the grid path's sweep of the least chunk (the timed
# gpu test), into $OUT/<tag>_phases.txt.
s32_phases() {
    phases_run "$1" 90
    grep -E "Failure" "$OUT/${1}_phases.txt" | head
    python3 bench/gpu/phases_table.py "$OUT/${1}_phases.txt"
}

# Session 32's first call: session 31's branch s31-last-merge merged into main (the last block's
# merge of up to 32 splits through merge_share, the partials of 8 splits loaded together; the
# count-in by one acquire-release add) with 41f618f (no dot products for a group's missing
# heads), both unrun: the attention, decoder and rope gpu tests, the phases with the least-chunk
# sweep, both models' decode. The second call (stages s31_swap_base, build, s32_b) rebuilds
# 3059fff's attention file (.s31alt/base/) for the same-machine A/B.
# Predicted (warm launch): qwen3 ctx 512 (17 splits) 9.4 -> about 8.7 us, llama3-8b ctx 512
# 8.5 -> about 7.6 (the merge and 41f618f's skipped heads); qwen3 native_fused ctx 512 +1 %,
# llama3-8b +1 %. The least-chunk sweep: 64 about as fast as 32 at ctx 512 (two rounds a warp
# against half the splits to merge), 96 and 128 slower.
stage_s32_a() {
    local t0=$SECONDS
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s32_a_tests.txt"
    grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/s32_a_tests.txt" | head
    s32_phases s32_a
    s31_decode head
    echo "done after $((SECONDS - t0)) s"
}
stage_s32_b() {
    s32_phases s32_b
    s31_decode base
}

# Session 32's second change (the tree): decode attention's last-block merge with its values of
# the first splits loaded before the maxima and sums (one round trip fewer), the count-in by one
# acquire-release add after the block barrier (no fence by every thread, none after), the block
# merge's part weights once a head (weigh_parts) rather than once an element, and chunks of 64
# where 32 would be more than 32 splits (qwen3-30b-a3b at 2080: 33 splits, not 65). Against
# 4874afa (.s31alt/base/: its decode_attention.cu, .hpp and _plan.cpp) with s32_b.
# Predicted (warm launch): qwen3 ctx 512 9.20 -> about 8.2 us (split merge 3.6 -> 2.8, block
# merge 1.6 -> 1.4), llama3-8b ctx 512 8.0 -> about 7.0, qwen3 ctx 2048 10.9 -> about 10.2; qwen3
# native_fused +2.5 % at ctx 512, llama3-8b +1.5 %.
stage_s32_c() {
    stage_s32_c1
    s32_sanitizer memcheck s32_c \
        'decode_attention_cuda.matches*:decode_attention_cuda.replays*:decode_attention_cuda.rope_fused*' 60
    s32_sanitizer racecheck s32_c 'decode_attention_cuda.rope_fused*:decode_attention_cuda.replays*' 90
}

# compute-sanitizer's <tool> over the gpu tests of <filter> (at most <limit> s), into
# $OUT/<tag>_<tool>.txt; prints the summary lines.
s32_sanitizer() {
    local tool=$1 tag=$2 filter=$3 limit=$4 t0=$SECONDS
    timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 9 --kernel-name kns=fourfold \
        $BUILD/tests/fourfold_gpu_tests --gtest_filter="$filter" >"$OUT/${tag}_$tool.txt" 2>&1
    echo "$tool ($filter): exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) " "$OUT/${tag}_$tool.txt" |
        sort | uniq -c | head
}

# The tree's build without its sanitizer runs (s32_c's first half).
stage_s32_c1() {
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s32_c_tests.txt"
    s32_phases s32_c
    s31_decode head
}
stage_s32_swap_pre() { s31_swap pre; }

# Session 32's third change (branch s32-preload, .s31alt/pre/): a warp's first round of cache rows
# loaded before the dependency wait (raw, in registers), the row at *pos read again after it (or
# from the fused RoPE's shared copy). Predicted (warm launch, against s32_c's tree): the positions
# phase -0.5 us (the q staging's round trip overlapped) at both models, the whole launch
# likewise; native_fused about +1 % qwen3 (the owner block's cache round trip overlaps the fused
# RoPE), +0.4 % llama3-8b.
stage_s32_d() {
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s32_d_tests.txt"
    s32_phases s32_d
    s31_decode pre
    s32_sanitizer memcheck s32_d \
        'decode_attention_cuda.matches*:decode_attention_cuda.waits*:decode_attention_cuda.rope_fused*' 50
}

# Both models' native_fused decode, tagged.
s32_decode() { decode_both "$1" native_fused s32; }
# One call, three builds (the device's refusals left little time): the tree (d227161's
# attention), then .s31alt/pre/ (the first round before the wait), then .s31alt/base/ (4874afa).
stage_s32_e_head() {
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s32_e_tests.txt"
    s32_phases s32_e_head
    s32_decode head
}
stage_s32_e_pre() {
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s32_e_pre_tests.txt"
    s32_phases s32_e_pre
    s32_decode pre
    s32_sanitizer memcheck s32_e \
        'decode_attention_cuda.matches*:decode_attention_cuda.waits*:decode_attention_cuda.rope_fused*' 45
}
stage_s32_e_base() {
    s32_phases s32_e_base
    s32_decode base
}

# racecheck over d227161's attention (weigh_parts' shared weights, the merges of 18 and 33
# splits in the counters test), then the tree's decode again (after s32_e's base: order reversed).
stage_s32_f() {
    s32_sanitizer racecheck s32_f 'decode_attention_cuda.rope_fused*:decode_attention_cuda.replays*' 100
    s32_decode head2
}

# The next session's first call: e5b0bec (d227161's merges, the chunk rule reverted: qwen3 at
# 2080 positions is 65 splits of 32 again), not run on the GPU: the attention, decoder and rope
# gpu tests (the counters test with probe stop 4), the phases (stop 4: after the count-in, before
# the split merge), both models' decode (both native variants).
# Predicted: qwen3 ctx 2048 attention about 10.0 us warm (the block merge's gain on 65 splits),
# native_fused qwen3 about 334 / 321-322 tokens/s, llama3-8b about 231 / 224.
# Then the fused MoE block's timed test (its probe stops: the routing's breakdown at HEAD, the
# baseline for the next MoE change).
stage_s33_a() {
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*' \
        150 "$OUT/s33_a_tests.txt"
    s32_phases s33_a
    s31_decode s33
    s33_moe_timed s33_a
}

# The fused MoE block's timed test (its probe stops), into $OUT/<tag>_moe.txt; prints its lines.
s33_moe_timed() {
    local tag=$1 t0=$SECONDS
    timeout 60 $BUILD/tests/fourfold_gpu_tests --gtest_filter='moe_cuda.the_fused_block*' \
        >"$OUT/${tag}_moe.txt" 2>&1
    echo "fused MoE timed test: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe block|Failure|FAILED" "$OUT/${tag}_moe.txt" | head -30
}

# Session 33's second call: the MoE routing's ranked top-k (a thread a (token, expert) counts
# the keys ahead of its own; the rounds stay past 1,024 padded keys) and the normalisation in the
# grouping; the attention's last-block merge loads its first maxima and sums before the values,
# with probe stops 5 and 6 inside it. The moe, attention, decoder and rope gpu tests; the phases;
# the fused MoE block's timed test; both models' decode (both native variants).
# Predicted: MoE T=1 top-k phase 2.16 -> about 0.4 us, the fused launch 31.1 -> about 29.5 us
# (T=8 153 -> about 151.5); attention qwen3 ctx 512 split merge 2.81 -> about 2.4 us; qwen3
# native_fused about 343 / 334 tokens/s (from 333.7 / 325.4), llama3-8b about 232 / 224.
stage_s33_b() {
    s25_gtests 'moe_cuda.*:decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*:moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' \
        240 "$OUT/s33_b_tests.txt"
    s32_phases s33_b
    s33_moe_timed s33_b
    s31_decode s33b
}

# Session 33's third call. s33_b's ranked top-k lost (T = 1 routing 8.14 -> 8.17 us, T = 8 17.5 ->
# 24.4) and is gone; its attention change (the maxima before the values) gained nothing and is
# gone; the probes 5 and 6 stay. The tree: the routing warp over 4, 8 or 16 logits a lane, the
# least that holds the experts (at 128 experts a round scanned 16 slots a lane, 12 of them
# empty); the last-block merge loads 20 splits before it adds (17 at ctx 512 took two round
# trips). Then main's two kernel files (.s31alt/base/, eb35728) rebuilt and the decode again.
# Predicted: MoE T = 1 top-k 2.16 -> about 0.8 us, softmax 1.19 -> about 0.9, the fused launch
# 31.1 -> about 29.3 us (T = 8 153 -> about 150); attention qwen3 ctx 512 whole 8.27 -> about
# 7.7 us (the adds phase 1.04 -> about 0.4), ctx 2048 unchanged; qwen3 native_fused +2.5 % at ctx
# 512 against the base, llama3-8b +0.5 %.
stage_s33_c() {
    s25_gtests 'moe_cuda.*:decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths*:moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' \
        240 "$OUT/s33_c_tests.txt"
    s32_phases s33_c
    s33_moe_timed s33_c
    s32_decode s33c
}
stage_s33_c_base() { s32_decode s33c_base; }

# Session 33's last call: compute-sanitizer over b008fce's two kernels (memcheck: the routing at
# 4, 8 and 16 logits a lane in the small shapes and the ties test, the attention's matches, waits
# and counters with probes 5 and 6; racecheck: the ties test and the attention's replays).
stage_s33_d() {
    s32_sanitizer memcheck s33_d \
        'moe_cuda.ties*:moe_cuda.native_step_matches_float64_on_small*' 150
    s32_sanitizer memcheck s33_d_att \
        'decode_attention_cuda.matches*:decode_attention_cuda.waits*:decode_attention_cuda.replays*' 90
    s32_sanitizer racecheck s33_d 'moe_cuda.ties*:decode_attention_cuda.a_captured*' 120
}

# Session 33's fifth call (the last of its device time): the routing warp at 4 or 8 logits a lane
# sorts its keys once and takes the heads (one redux a round, the second only on a tie across
# lanes); the last-block merge loads its first maxima and sums before its 20 splits' values.
# The moe and attention gpu tests, memcheck over the routing's tests, the phases, the fused MoE
# block's timed test, both models' native_fused decode.
# Predicted: MoE T = 1 top-k 1.24 -> about 0.85 us, the fused launch 29.93 -> about 29.5 (T = 8
# 152.3 -> about 151.9); attention qwen3 ctx 512 merge's first phase 1.90 -> about 1.65 us, whole
# 8.05 -> about 7.8; qwen3 native_fused about +0.8 % over s33_c (336.3 / 323.2 on its machine).
stage_s33_e() {
    s25_gtests 'moe_cuda.*:decode_attention_cuda.*-decode_attention_cuda.the_paths*:moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' \
        150 "$OUT/s33_e_tests.txt"
    s32_sanitizer memcheck s33_e 'moe_cuda.ties*:moe_cuda.native_step_matches_float64_on_small*' 60
    s32_phases s33_e
    s33_moe_timed s33_e
    s32_decode s33e
}

# s33_e cut to the device time left (the gpu tests target alone built: FOURFOLD_NINJA_ARGS): the
# routing's and the merge's correctness tests, the fused MoE block's timed test, the phases,
# memcheck over the routing's tests. No decode.
stage_s33_f() {
    s25_gtests 'moe_cuda.ties*:moe_cuda.native_step_matches_float64_on_small*:moe_cuda.native_step_is_bitwise*:decode_attention_cuda.matches*:decode_attention_cuda.replays*' \
        90 "$OUT/s33_f_tests.txt"
    s33_moe_timed s33_f
    s32_phases s33_f
    s32_sanitizer memcheck s33_f 'moe_cuda.ties*:moe_cuda.native_step_matches_float64_on_small*' 40
}

# Session 34's second call (5f213ec): the fused MoE block asked L2 for the next layer's qkv
# weights during its routing (moe_args::l2_next, lost and removed), the experts' rows read
# first-to-go in L2; then its decoder_session.cpp from main (no next weights: .s31alt/nonext/).
stage_s34_b() {
    s25_gtests 'moe_cuda.*:decode_native_cuda.*-moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' \
        200 "$OUT/s34_b_tests.txt"
    s33_moe_timed s34_b
    s32_decode s34b
}
stage_s31_swap_nonext() { s31_swap nonext; }
stage_s34_b_nonext() { s32_decode s34b_nonext; }

# Session 34's third call: every weight stream (load_streaming: the GEMVs, the FP8 GEMV, the MoE
# experts and router; the MoE's staged down rows) read first-to-go in L2, so the KV cache and what
# else a step reads again stay; then main's reduce.cuh, moe.cu and gemv.cu (.s31alt/main34/) on
# the same machine. Predicted: qwen3 native_fused 336 -> about 345 tokens/s at ctx 512, llama3-8b
# 229 -> about 232.
stage_s34_c() {
    s25_gtests 'moe_cuda.ties*:native.gemv*' 120 "$OUT/s34_c_tests.txt"
    s32_decode s34c
}
stage_s31_swap_main34() { s31_swap main34; }
stage_s34_c_base() { s32_decode s34c_base; }

# Session 34's last call: memcheck over the MoE ties and the GEMV tests with every weight stream
# first-to-go in L2 (45c4dee), and the timed MoE block.
stage_s34_d() {
    s32_sanitizer memcheck s34_d 'moe_cuda.ties*:native.gemv*' 150
    s33_moe_timed s34_d
}

# A second decode sample of the tree (45c4dee kernels) on the machine of s34_c.
stage_s34_e() { s32_decode s34e; }

# One native_fused step of each model kernel by kernel under ncu (session 27's profile, last run
# on the native variant at 4d46ad2): each launch timed alone, the caches as the launch before left
# them, so a kernel's µs over its bytes is what it costs the step. About 150 s a model.
stage_s35_profile() {
    s27_step_profile qwen3-30b-a3b native_fused s35_qwen_profile
    S27_LAUNCHES=300 s27_step_profile llama3-8b native_fused s35_llama_profile
}

# Session 35's first call (branch s35-next; session 34's s34-next, lost with its checkout and
# written again): each grid barrier's generation read right after the dependency wait
# (reduce.cuh's grid_generation and grid_barrier_at), in the fused MoE block's two barriers and
# decode attention's shared merge; the MoE block's first-group residual loaded before the down
# barrier. The moe, attention and decoder gpu tests, the timed MoE block, both models' decode;
# then (stages s31_swap_main35, build, s35_a_base) main's reduce.cuh, moe.cu and
# decode_attention.cu (.s31alt/main35/) on the same machine.
# Predicted: MoE T = 1 stop 6 - stop 5 1.55 -> about 1.0 us, the block about -1.1 us; qwen3
# native_fused about +2 % (about 352 / 340 tokens/s), llama3-8b unchanged.
stage_s35_a() {
    s25_gtests 'moe_cuda.*:decode_attention_cuda.*:decode_native_cuda.*-decode_attention_cuda.the_paths*:moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' \
        200 "$OUT/s35_a_tests.txt"
    s33_moe_timed s35_a
    s32_decode s35a
}
stage_s31_swap_main35() { s31_swap main35; }
stage_s35_a_base() {
    s33_moe_timed s35_a_base
    s32_decode s35a_base
}

# Session 35's third call (branch s35-down-prefetch): in the fused MoE block's down phase a warp
# asks L2 for its next item's rows when it stages the current one (more items than warps: 2..8
# tokens; at one token every warp has one item and nothing changes). The moe gpu tests and the
# timed MoE block; then (stages s31_swap_main35c, build, s35_c_base) main's moe.cu
# (.s31alt/main35c/), the timed block again, and memcheck over main's kernels: the MoE ties and
# small steps, decode attention's matches and replays (the barrier generation read ahead,
# 79f59be) and the FP8 GEMV's tests.
# Predicted: T = 8 fused block 149.2 -> about 143 us (its down dots 50 -> about 44), T = 1 unchanged.
stage_s35_c() {
    s25_gtests 'moe_cuda.*-moe_cuda.the_fused_block*:moe_cuda.one_launch_and_two*' 120 \
        "$OUT/s35_c_tests.txt"
    s33_moe_timed s35_c
}
stage_s31_swap_main35c() { s31_swap main35c; }
stage_s35_c_base() {
    s33_moe_timed s35_c_base
    s32_sanitizer memcheck s35_c 'moe_cuda.ties*:moe_cuda.native_step_matches_float64_on_small*:decode_attention_cuda.matches*:decode_attention_cuda.replays*' 150
    s32_sanitizer memcheck s35_c_fp8 'gemv_fp8.*' 90
}

# Session 36's first call: the GEMV pair (kernels/gemv.cu's gemv_pair, one launch across a grid
# barrier: o with the normed gate/up, down with the next layer's normed q/k/v or the LM head;
# the decode variant native_paired). Its gpu tests (the bits of the two launches, the barrier over
# launches and replays, the plan's refusals, the timed pair), the decoder's, the GEMV's; llama3-8b
# native_fused and native_paired in one run each way round; memcheck and racecheck over the pair.
# Predicted: the timed pair about 3 us under its two launches (o + gate/up about 75 -> 72 us,
# down + q/k/v about 50 -> 47); llama3-8b native_paired about 6 us a layer under native_fused:
# about 238 tokens/s at ctx 512 (native_fused 229).
s36_llama() {
    local tag=$1 variants=$2 t0=$SECONDS
    timeout 150 $BIN decode --model llama3-8b --variants "$variants" --mode graph \
        --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
        --db "$DB" --label s36-$tag --quiet >"$OUT/s36_decode_$tag.txt" 2>&1
    echo "decode llama3-8b $variants ($tag): exit $? after $((SECONDS - t0)) s"
    grep -E "^decode .*graph|FAIL" "$OUT/s36_decode_$tag.txt" | head -12
}
stage_s36_a() {
    s25_gtests 'gemv_pair_cuda.*:decode_native_cuda.*:native.gemv*' 240 "$OUT/s36_a_tests.txt"
    grep -E "gemv pair, llama|rel L2" "$OUT/s36_a_tests.txt" | head -12
    s36_llama a native_fused,native_paired
    s36_llama b native_paired,native_fused
    s32_sanitizer memcheck s36_a 'gemv_pair_cuda.*-gemv_pair_cuda.the_pair_and*' 120
    s32_sanitizer racecheck s36_a 'gemv_pair_cuda.both*' 120
}

# Session 36's second call: the one-token GEMV with its 2 KB steps claimed at run time
# (kernels/gemv.cu's gemv_claim: one block of 32 warps an SM, a shared counter, a float a step;
# FOURFOLD_GEMV_CLAIM=1 turns it on in the plan; as run at da84dc5: the switch is gone since
# 6ca6746, so this stage now runs the default twice). The GEMV and decoder gpu tests with it on; the
# decode's GEMV shapes (op_time, graph) with it off and on; llama3-8b native_fused off, on, off;
# qwen3-30b-a3b native_fused on and off.
# Predicted (session 25's probe: the static partition's warp ends spread 1-17 us within an SM):
# 28672 x 4096 + norm about -3.5 us, 4096 x 4096 about -1, the LM head about -7; llama3-8b
# native_fused about 229 -> 238 tokens/s at ctx 512, qwen3 +1-2 %.
s36_ops() {
    local tag=$1 t0=$SECONDS
    : >"$OUT/s36_ops_$tag.txt"
    timeout 60 $BIN run --workload linear_decode \
        --shape 1x6144x4096,1x28672x4096,1x128256x4096,1x5120x2048 --param prologue=rms_norm \
        --dtype bf16 --variants native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s36-ops-$tag --quiet >>"$OUT/s36_ops_$tag.txt" 2>&1
    timeout 30 $BIN run --workload linear_decode --shape 1x4096x4096,1x4096x14336 \
        --param prologue=none,swiglu --param bias=1 --dtype bf16 --variants native --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s36-ops-$tag --quiet \
        >>"$OUT/s36_ops_$tag.txt" 2>&1
    echo "linear_decode ($tag): exit $? after $((SECONDS - t0)) s"
    grep -E "^linear_decode .*graph|FAIL|skipped" "$OUT/s36_ops_$tag.txt" | head -12
}
# One decode of the stages: graph mode, ctx 512 and 2048, 32 tokens, bf16, the throughput and
# correctness ledgers. Arguments: model, variants, extra options ("" or "--weights fp8_row"), the
# record label, the output file, the time limit (s), a note for the echoed line.
stage_decode() {
    local model=$1 variants=$2 extra=$3 label=$4 file=$5 limit=$6 note=$7 t0=$SECONDS
    # shellcheck disable=SC2086 # extra: option words
    timeout "$limit" $BIN decode --model "$model" $extra --variants "$variants" --mode graph \
        --ctx 512,2048 --tokens 32 --device cuda --dtype bf16 --ledgers throughput,correctness \
        --db "$DB" --label "$label" --quiet >"$file" 2>&1
    echo "decode $model $variants${extra:+ $extra} ($note): exit $? after $((SECONDS - t0)) s"
    grep -E "^decode .*graph|FAIL" "$file" | head -6
}
s36_decode() {
    stage_decode "$1" native_fused "" "s36-$2-$1" "$OUT/s36_decode_${2}_$1.txt" 80 \
        "$2, FOURFOLD_GEMV_CLAIM=${FOURFOLD_GEMV_CLAIM:-unset}"
}
stage_s36_b() {
    FOURFOLD_GEMV_CLAIM=1 s25_gtests 'native.gemv*:decode_native_cuda.*' 150 "$OUT/s36_b_tests.txt"
    FOURFOLD_GEMV_CLAIM=0 s36_ops static
    FOURFOLD_GEMV_CLAIM=1 s36_ops claim
    FOURFOLD_GEMV_CLAIM=0 s36_decode llama3-8b static
    FOURFOLD_GEMV_CLAIM=1 s36_decode llama3-8b claim
    FOURFOLD_GEMV_CLAIM=1 s36_decode qwen3-30b-a3b claim
    FOURFOLD_GEMV_CLAIM=0 s36_decode qwen3-30b-a3b static
}

# Session 36's third call: gemv_claim the plan's default for one token with rows of 8 KB or more
# (qwen3's K = 2048 GEMVs keep the static partition). The GEMV, claim and decoder gpu tests;
# memcheck and racecheck over the claim test (direct calls, whole sizes); the decode's GEMV shapes;
# both models' native_fused; llama3-8b's step under ncu, kernel by kernel.
# Predicted: llama3-8b about 240 / 228 tokens/s (s36_b's claim figures), qwen3 back to about
# 342 / 333 (s36_b's static figures); memcheck 0 errors, racecheck 0 hazards.
stage_s36_c() {
    s25_gtests 'native.gemv*:decode_native_cuda.*:gemv_claim_cuda.*' 150 "$OUT/s36_c_tests.txt"
    s32_sanitizer memcheck s36_c 'gemv_claim_cuda.*' 120
    s32_sanitizer racecheck s36_c 'gemv_claim_cuda.*' 150
    s36_ops default
    s36_decode llama3-8b default
    s36_decode qwen3-30b-a3b default
    S27_PROFILE_LIMIT=110 S27_LAUNCHES=300 s27_step_profile llama3-8b native_fused s36_llama_profile
}

# Session 37's first call: the FP8 GEMV on gemv_claim (the bf16 GEMV's claimed steps, moved to
# kernels/gemv_claim.cuh and templated over the weight format) with the RMSNorm and SwiGLU
# prologues, so the fp8 decoder's native_fused path launches what the bf16 one does. The FP8 GEMV,
# the claim, the GEMV and both decoders' gpu tests; memcheck and racecheck over the new FP8 claim
# tests; fp8_linear's shapes with the claim (the default) and without it
# (FOURFOLD_GEMV_FP8_CLAIM_MIN_ROW past every row: the balanced path, the prologues refused);
# llama3-8b with fp8 weights, native_fused claimed then balanced then claimed; the bf16 decoder
# once (the refactor: the same PTX, so the same figure).
# Predicted: 4096 x 4096 8.5 -> 7.5 µs, 14336 x 4096 20.2 -> 18, 4096 x 14336 19.6 -> 17.5, the
# LM head 139 -> 133; llama3-8b fp8 native_fused about 330 -> 390 tokens/s at ctx 512 (three
# launches a layer fewer, the bf16 step's fixed costs on half the bytes).
s37_fp8_ops() {
    local tag=$1 t0=$SECONDS
    timeout 90 $BIN run --workload fp8_linear \
        --shape 1x4096x4096,1x6144x4096,1x14336x4096,1x28672x4096,1x4096x14336,1x128256x4096 \
        --dtype bf16 --variants native_bf16,native_fp8_row --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label s37-fp8-$tag --quiet \
        >"$OUT/s37_fp8_ops_$tag.txt" 2>&1
    echo "fp8_linear ($tag, FOURFOLD_GEMV_FP8_XS=${FOURFOLD_GEMV_FP8_XS:-unset}): exit $? after $((SECONDS - t0)) s"
    grep -E "^fp8_linear .*(graph|FAIL|skipped)" "$OUT/s37_fp8_ops_$tag.txt" | head -14
}
s37_fp8_decode() {
    stage_decode llama3-8b native_fused "--weights fp8_row" "s37-fp8-$1" \
        "$OUT/s37_fp8_decode_$1.txt" 100 "$1, CS_EARLY=${FOURFOLD_GEMV_FP8_CS_EARLY:-unset} CS_SWIGLU_SLICES=${FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES:-unset}"
}
stage_s37_a() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*:gemv_claim_cuda.*:native.gemv*:decode_native_cuda.*' 200 \
        "$OUT/s37_a_tests.txt"
    grep -E "rel L2 from" "$OUT/s37_a_tests.txt" | head -6
    s37_fp8_ops claim
    FOURFOLD_GEMV_FP8_CLAIM_MIN_ROW=1000000000 s37_fp8_ops balanced
    s37_fp8_decode claim
    FOURFOLD_GEMV_FP8_CLAIM_MIN_ROW=1000000000 s37_fp8_decode balanced
    s37_fp8_decode claim2
    s36_decode llama3-8b s37
    s32_sanitizer memcheck s37_a 'gemv_fp8.claimed*:gemv_fp8.a_prologue*' 120
    s32_sanitizer racecheck s37_a 'gemv_fp8.claimed*' 150
}

# (Session 37's switches FOURFOLD_GEMV_FP8_CLAIM_MIN_ROW, FOURFOLD_GEMV_FP8_MMA and FOURFOLD_GEMV_AHEAD
# are gone since 40511c9: s37_a..s37_c now run main's default under every tag.)
# Session 37's second call: the FP8 GEMV's claimed steps on the tensor cores (gemv_fp8_mma: e4m3
# to f16x2, x staged as f16 times 2^-e, m16n8k16 MMAs over 8-row tiles of 256-column steps),
# the default; FOURFOLD_GEMV_FP8_MMA=0 the claimed steps on the fp32 FMA path (s37_a's default),
# FOURFOLD_GEMV_FP8_CLAIM_MIN_ROW past every row the balanced path (main's). Tests, sanitizers over
# the new kernel's tests and the chain, fp8_linear's shapes and llama3-8b fp8 native_fused each way.
# Predicted (the FMA path issues about 76 instructions a warp per 512 weight bytes, the MMA path
# about 20): 28672 x 4096 34.8 -> 31 µs, the LM head 139 -> 128, 4096 x 4096 8.3 -> 7; llama3-8b
# fp8 native_fused 350 -> about 385 tokens/s at ctx 512.
stage_s37_b() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*-decoder_fp8_cuda.native_follows*' 200 "$OUT/s37_b_tests.txt"
    grep -E "rel L2 from|fp8_linear 1x" "$OUT/s37_b_tests.txt" | head -8
    s37_fp8_ops mma
    FOURFOLD_GEMV_FP8_MMA=0 s37_fp8_ops fma
    FOURFOLD_GEMV_FP8_CLAIM_MIN_ROW=1000000000 s37_fp8_ops balanced
    s37_fp8_decode mma
    FOURFOLD_GEMV_FP8_MMA=0 s37_fp8_decode fma
    FOURFOLD_GEMV_FP8_CLAIM_MIN_ROW=1000000000 s37_fp8_decode balanced
    s37_fp8_decode mma2
    s32_sanitizer memcheck s37_b 'gemv_fp8.claimed*:gemv_fp8.a_prologue*:gemv_fp8.a_chain*' 150
    s32_sanitizer racecheck s37_b 'gemv_fp8.claimed*' 150
}

# Session 37's third call: the step after next asked of L2 as a warp claims it (gemv_claim and
# gemv_fp8_mma; FOURFOLD_GEMV_AHEAD=0 turns it off), and the MMA path's two accumulators (8
# dependent MMAs a step, not 16). Why: s37_b measured the three FP8 paths within 5 % of each
# other at 3.2-3.6 TB/s on 117 MB where the bf16 GEMV moves 3.9-4.1 on the same bytes; a warp
# holds one step in flight while it multiplies and two while it waits, so the longer an FP8 step's
# dependent chain (64 FMAs, or 16 MMAs), the fewer bytes in flight. Predicted: FP8 28672 x 4096
# 36 -> 32 µs, LM head 144 -> 132; bf16 o and q/k/v -0.5 µs, gate/up unchanged (99 % already);
# llama3-8b fp8 native_fused about 350 -> 375, bf16 about +1 %.
s37_fp8_ops4() {
    s39_ops fp8_linear 1x4096x4096,1x28672x4096,1x4096x14336,1x128256x4096 native_fp8_row \
        "s37-fp8-$1" "$OUT/s37_fp8_ops_$1.txt"
}
# one op_time + correctness run of a workload's shapes and variants (bf16, 60 s at most), its
# graph lines shown
s39_ops() {
    local workload=$1 shapes=$2 variants=$3 label=$4 log=$5 t0=$SECONDS
    timeout 60 $BIN run --workload "$workload" --shape "$shapes" --dtype bf16 --variants "$variants" \
        --device cuda --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label "$label" \
        --quiet >"$log" 2>&1
    echo "$workload ($label): exit $? after $((SECONDS - t0)) s"
    grep -E "^$workload .*(graph|FAIL|skipped)" "$log" | head -8
}
stage_s37_c() {
    s25_gtests 'gemv_fp8*:gemv_claim_cuda.*:native.gemv*:decoder_fp8_cuda.norms*' 200 "$OUT/s37_c_tests.txt"
    s36_ops ahead
    FOURFOLD_GEMV_AHEAD=0 s36_ops plain
    s37_fp8_ops4 mma_ahead
    FOURFOLD_GEMV_AHEAD=0 s37_fp8_ops4 mma_plain
    FOURFOLD_GEMV_FP8_MMA=0 s37_fp8_ops4 fma_ahead
    FOURFOLD_GEMV_FP8_MMA=0 FOURFOLD_GEMV_AHEAD=0 s37_fp8_ops4 fma_plain
    s36_decode llama3-8b ahead
    FOURFOLD_GEMV_AHEAD=0 s36_decode llama3-8b plain
    s37_fp8_decode mma_ahead
    FOURFOLD_GEMV_FP8_MMA=0 s37_fp8_decode fma_ahead
    FOURFOLD_GEMV_FP8_MMA=0 FOURFOLD_GEMV_AHEAD=0 s37_fp8_decode fma_plain
}

# Session 37's fourth call: what stays (the prefetch ahead and the MMA path removed): the FP8
# GEMV claims its steps only with a prologue (the fp8 decoder's fused norms and SwiGLU), the
# static partition otherwise. Tests, memcheck and racecheck over the claimed FP8 test, fp8_linear's
# shapes (the balanced path: s37_b's figures), llama3-8b fp8 and bf16 native_fused, qwen3 bf16.
# Predicted: llama3-8b fp8 about 351 / 335 tokens/s (s37_b's claimed 350.4 with o claimed too,
# o balanced +0.2 µs a layer), bf16 about 244 / 235, qwen3 about 341 / 330.
stage_s37_d() {
    s25_gtests 'gemv_fp8*:gemv_claim_cuda.*:native.gemv*:decode_native_cuda.*:decoder_fp8_cuda.*-decoder_fp8_cuda.native_follows*' \
        240 "$OUT/s37_d_tests.txt"
    grep -E "rel L2 from" "$OUT/s37_d_tests.txt" | head -8
    s32_sanitizer memcheck s37_d 'gemv_fp8.claimed*:gemv_fp8.a_prologue*' 100
    s32_sanitizer racecheck s37_d 'gemv_fp8.claimed*' 120
    s37_fp8_decode default
    s36_decode llama3-8b s37d
    s37_fp8_ops4 default
    s36_decode qwen3-30b-a3b s37d
}

# Session 38 (2026-12-04) prepared this call; its device time was spent before its first step, so
# the next session runs it: which part of the native path moves tiny-qwen3-moe's fp8 logits away
# from the dequantised reference (decoder_fp8_cuda's part-at-a-time test, per token), fp8_linear's
# prologue cases (the decoder's fused FP8 launches as op figures, beside the fused bf16 GEMV and
# at::linear), and why the FP8 GEMV moves 3.3-3.6 TB/s where the bf16 one moves 4.1-4.5 on the
# same bytes: ncu's warp states, pipes and instruction mix for both on 28672 x 4096, and the SASS
# of both kernels. About 5 minutes with the build.
# a stage's logs (s30_ to s59_ files) in one archive, $OUT/logs_<tag>.tgz: a call brings back few
# files
stage_pack() {
    local files
    files=$(cd "$OUT" && ls | grep -E '^s([34][0-9]|5[0-9]|6[0-9])_' | grep -v '\.tgz$' || true)
    [ -n "$files" ] || return 0
    (cd "$OUT" && tar czf "logs_$1.tgz" $files && rm -f $files)
    echo "logs: $OUT/logs_$1.tgz"
}
s38_ncu_gemv() {
    local tag=$1 workload=$2 variant=$3 regex=$4 t0=$SECONDS
    timeout 90 ncu --clock-control none --launch-count 1 --kernel-name regex:"$regex" \
        --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
        --section InstructionStats --section SchedulerStats --section Occupancy \
        --section MemoryWorkloadAnalysis --section LaunchStats \
        $BIN run --workload "$workload" --shape 1x28672x4096 --dtype bf16 --variants "$variant" \
        --device cuda --ledgers correctness --no-isolate --db /tmp/s38-ncu-$tag.db --quiet \
        >"$OUT/s38_ncu_$tag.txt" 2>&1
    echo "ncu $tag: exit $? after $((SECONDS - t0)) s"
    grep -E "^  [a-z_].*\(|Duration|DRAM Throughput|Memory Throughput|Stall|Issue Slots Busy|Issued Ipc|No Eligible|Active Warps Per|Eligible Warps|Achieved Occ|Registers Per|Executed Ipc|Block Size|Grid Size" \
        "$OUT/s38_ncu_$tag.txt" | head -40
}
s38_sass() {
    local t0=$SECONDS
    which cuobjdump nvdisasm
    for k in gemv gemv_fp8; do
        nvcc -std=c++17 -O3 --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a -Isrc \
            -cubin src/fourfold/kernels/$k.cu -o /tmp/$k.cubin && cuobjdump -sass /tmp/$k.cubin >/tmp/$k.sass
        echo "$k: $(wc -l </tmp/$k.sass) SASS lines"
    done
    tar czf "$OUT/s38_sass.tgz" -C /tmp gemv.sass gemv_fp8.sass
    echo "sass after $((SECONDS - t0)) s"
}
s38_fp8_prologue_ops() {
    local tag=${1:-default} t0=$SECONDS
    : >"$OUT/s38_fp8_pro_$tag.txt"
    for spec in "1x6144x4096 rms_norm 0" "1x28672x4096 rms_norm 0" "1x128256x4096 rms_norm 0" \
        "1x4096x14336 swiglu 1"; do
        set -- $spec
        timeout 90 $BIN run --workload fp8_linear --shape "$1" --param prologue=$2 --param bias=$3 \
            --dtype bf16 --variants bf16,native_bf16,native_fp8_row --device cuda \
            --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label "s38-fp8-pro-$tag" --quiet \
            >>"$OUT/s38_fp8_pro_$tag.txt" 2>&1
    done
    echo "fp8_linear with prologues ($tag, CS_EARLY=${FOURFOLD_GEMV_FP8_CS_EARLY:-unset} CS_SWIGLU_SLICES=${FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES:-unset}): after $((SECONDS - t0)) s"
    grep -E "^fp8_linear .*(graph|FAIL|skipped)" "$OUT/s38_fp8_pro_$tag.txt" | head -16
}
stage_s38_a() {
    s25_gtests 'decoder_fp8_cuda.*:gemv_fp8.fp8_linear*' 240 "$OUT/s38_a_tests.txt"
    grep -E "^seed|rel L2 from|^fp8_linear" "$OUT/s38_a_tests.txt" | cut -c1-400
    s38_fp8_prologue_ops
    s38_ncu_gemv fp8 fp8_linear native_fp8_row "gemv_fp8"
    s38_ncu_gemv bf16 linear_decode native "gemv"
    s38_sass
    stage_pack s38_a
}

# The pad's word path on trial (session 38, FOURFOLD_PAD_WORDS=1; predicted 96x5x130x130 bf16
# 13.79 -> about 11 µs, the small bf16 cases about 1 µs each less): the pad gpu tests (the word
# path's own against stock's bits), memcheck and racecheck over them, then the article suite's
# pads without and with the switch, twice, on one machine. About 3 minutes after the build.
s38_article_pad() {
    local tag=$1 t0=$SECONDS
    timeout 40 $BIN run --suite article --workload pad --device cuda --min-time 0.1 --label "s38-pad-$tag" \
        --db "$DB" --quiet >"$OUT/s38_pad_$tag.txt" 2>&1
    echo "article pad ($tag, FOURFOLD_PAD_WORDS=${FOURFOLD_PAD_WORDS:-unset}): exit $? after $((SECONDS - t0)) s"
    grep -E "^pad .*native.*graph|FAIL" "$OUT/s38_pad_$tag.txt" | head -10
}
stage_s38_b() {
    s25_gtests 'native.pad*:native.kernels_are*:native.memory*' 90 "$OUT/s38_b_tests.txt"
    grep -E "word path asked|native: median" "$OUT/s38_b_tests.txt" | head -6
    FOURFOLD_NATIVE_TEST_SIZES=small s32_sanitizer memcheck s38_b 'native.pad*' 60
    FOURFOLD_NATIVE_TEST_SIZES=small s32_sanitizer racecheck s38_b 'native.pad_on_the_word*' 60
    s38_article_pad regs1
    FOURFOLD_PAD_WORDS=1 s38_article_pad words1
    s38_article_pad regs2
    FOURFOLD_PAD_WORDS=1 s38_article_pad words2
    stage_pack s38_b
}

# The FP8 GEMV's ring of 4 steps in flight on trial (session 38, FOURFOLD_GEMV_FP8_RING=1; the
# balanced and the claimed paths: predicted 28672 x 4096 35 -> about 31 µs, the LM head 147 ->
# about 130, llama3-8b fp8 353 -> about 375 tokens/s, if bytes in flight are what holds the FP8
# GEMV at 3.3-3.6 TB/s): its gpu tests, memcheck and racecheck, the four shapes without and with
# the ring twice on one machine (s38_d: the fused prologue cases and llama3-8b fp8). About 5
# minutes after the build.
stage_s38_c() {
    s25_gtests 'gemv_fp8.a_ring*:gemv_fp8.claimed*:gemv_fp8.matches*' 200 "$OUT/s38_c_tests.txt"
    FOURFOLD_NATIVE_TEST_SIZES=small s32_sanitizer memcheck s38_c 'gemv_fp8.a_ring*:gemv_fp8.claimed*' 120
    FOURFOLD_GEMV_FP8_RING=1 s32_sanitizer racecheck s38_c 'gemv_fp8.a_ring*' 90
    s37_fp8_ops4 balanced1
    FOURFOLD_GEMV_FP8_RING=1 s37_fp8_ops4 ring1
    s37_fp8_ops4 balanced2
    FOURFOLD_GEMV_FP8_RING=1 s37_fp8_ops4 ring2
    stage_pack s38_c
}
# s38_c's second half: the fused prologue cases (the claimed path) and llama3-8b fp8 without and
# with the ring. About 4 minutes.
stage_s38_d() {
    s38_fp8_prologue_ops claim
    FOURFOLD_GEMV_FP8_RING=1 s38_fp8_prologue_ops ring
    s37_fp8_decode claim
    FOURFOLD_GEMV_FP8_RING=1 s37_fp8_decode ring
    stage_pack s38_d
}

# Session 39 (2026-12-04): the gpu tests of what session 39 changed (session 38's trials removed,
# the routed model's fp8 test held per token), then where the FP8 GEMV's missing bandwidth comes
# from: the same 117 MB as rows of 2, 4, 8 and 16 KB, FP8 and bf16 (session 37: FP8 28672 x 4096
# 35 µs where bf16 14336 x 4096, the same bytes, takes 30). If the bf16 GEMV over 4 KB rows
# (28672 x 2048) is as slow as FP8's, the row length (twice the rows, half the steps a row) costs
# it, not the FP8 arithmetic. About 3 minutes after the build.
s39_rows() {
    s39_ops fp8_linear 1x57344x2048,1x28672x4096,1x14336x8192,1x7168x16384 native_fp8_row \
        "s39-rows-$1" "$OUT/s39_rows_fp8_$1.txt"
    s39_ops linear_decode 1x57344x1024,1x28672x2048,1x14336x4096,1x7168x8192 native \
        "s39-rows-$1" "$OUT/s39_rows_bf16_$1.txt"
}
stage_s39_a() {
    s25_gtests 'decoder_fp8_cuda.*:gemv_fp8.*:native.pad*:native.kernels_are*' 300 "$OUT/s39_a_tests.txt"
    grep -E "^seed|rel L2 from" "$OUT/s39_a_tests.txt" | cut -c1-300
    s39_rows one
    s39_rows two
    stage_pack s39_a
}

# Session 39 prepared this call (its device time went to s39_a and the probe). Two FP8 GEMV changes,
# both the same bits as before, so their gpu tests must pass as before:
# 1. x's bf16 widened by byte permutes (976856d, the default now): timed in the product against
#    session 39's figures on a7ed76d / 8747c45 (28672 x 4096 35.1-35.3 µs, LM head 142-143,
#    6144 x 4096 + RMSNorm 11.8, llama3-8b fp8 353.3 / 337.1 tokens/s); predicted from the probe
#    (-3 to -4 %): about 34.0, 137, 11.5 and 360.
# 2. x staged as floats a block, balanced and claimed (FOURFOLD_GEMV_FP8_XS=1, on trial): its
#    test (the unstaged bits), memcheck and racecheck, then the four shapes and llama3-8b fp8 (o
#    projection) with and without it, twice; predicted from the probe's copy (-6 to -8 %):
#    28672 x 4096 about 32.5 µs, LM head about 131 (4096 x 14336: 56 KiB of floats, not staged
#    balanced); the claimed prologue cases about 5 % less, llama3-8b fp8 about 370 tokens/s.
# Then the probe's bf16_prmt (the bf16 GEMV's pairs widened by byte permutes, unmeasured) beside
# balanced. About 8 minutes with the build; then s40_b.
stage_s40_a() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*:gemv_claim_cuda.*' 300 "$OUT/s40_a_tests.txt"
    s37_fp8_ops4 prmt1
    FOURFOLD_GEMV_FP8_XS=1 s37_fp8_ops4 xs1
    s37_fp8_ops4 prmt2
    FOURFOLD_GEMV_FP8_XS=1 s37_fp8_ops4 xs2
    s38_fp8_prologue_ops prmt
    FOURFOLD_GEMV_FP8_XS=1 s38_fp8_prologue_ops xs
    s37_fp8_decode prmt
    FOURFOLD_GEMV_FP8_XS=1 s37_fp8_decode xs
    nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc bench/gpu/gemv_probe.cu -lcublas \
        -o /tmp/probe && PROBE_FP8=1 /tmp/probe >"$OUT/s40_probe.txt" 2>&1
    grep -E "balanced|bf16_prmt|fp8 |fp8_prmt|fp8_h8xs" "$OUT/s40_probe.txt"
    stage_pack s40_a
}
# s40_a's sanitizers, on the warm machine (about 3 minutes): memcheck and racecheck over the
# staged kernels' tests.
stage_s40_b() {
    FOURFOLD_NATIVE_TEST_SIZES=small s32_sanitizer memcheck s40_b 'gemv_fp8.x_staged*:gemv_fp8.claimed*' 120
    s32_sanitizer racecheck s40_b 'gemv_fp8.x_staged*:gemv_fp8.claimed*' 150
    stage_pack s40_b
}

# Session 40's second build (s40_a's staged trial removed): the column-stationary FP8 GEMV on trial
# (FOURFOLD_GEMV_FP8_CS=1; bench/gpu/gemv_probe.cu's copy moved the bare stream's rate: 117 MB
# 34.4 -> 28.6 µs, the LM head's 525 MB 136.7 -> 118.6). The gpu tests (its own sets the switch),
# the four FP8 shapes and the prologue cases without and with it, llama3-8b fp8 without and with
# it, the fp8 decoder's tests under it. Predicted: 28672 x 4096 35.7 -> about 30 µs, the LM head
# 145 -> about 124, 4096 x 14336 19.3 -> about 16.5; llama3-8b fp8 351 -> about 390 tokens/s.
stage_s40_c() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*:gemv_claim_cuda.*' 300 "$OUT/s40_c_tests.txt"
    s37_fp8_ops4 base1
    FOURFOLD_GEMV_FP8_CS=1 s37_fp8_ops4 cs1
    s37_fp8_ops4 base2
    FOURFOLD_GEMV_FP8_CS=1 s37_fp8_ops4 cs2
    s38_fp8_prologue_ops base
    FOURFOLD_GEMV_FP8_CS=1 s38_fp8_prologue_ops cs
    s37_fp8_decode base
    FOURFOLD_GEMV_FP8_CS=1 s37_fp8_decode cs
    FOURFOLD_GEMV_FP8_CS=1 s25_gtests 'decoder_fp8_cuda.*' 200 "$OUT/s40_c_tests_cs.txt"
    nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc bench/gpu/gemv_probe.cu -lcublas \
        -o /tmp/probe && PROBE_FP8=1 /tmp/probe >"$OUT/s40_c_probe.txt" 2>&1
    grep -E "balanced|stream|fp8 |fp8_cs" "$OUT/s40_c_probe.txt"
    stage_pack s40_c
}
# s40_c's sanitizers, on the warm machine: memcheck and racecheck over the column-stationary test.
stage_s40_d() {
    FOURFOLD_NATIVE_TEST_SIZES=small s32_sanitizer memcheck s40_d 'gemv_fp8.column_stationary*' 240
    s32_sanitizer racecheck s40_d 'gemv_fp8.column_stationary*' 240
    stage_pack s40_d
}
# Session 40's third build: the column-stationary kernel the default for one token with K up to
# 16 KB (the switch gone); the balanced and claimed FP8 kernels keep K past it (their tests moved
# to K = 16400-20464). The gpu tests, memcheck over the dependent-launch chain (column-stationary,
# balanced and mixed links), the FP8 op figures and llama3-8b fp8. Predicted as s40_c's CS column:
# 28672 x 4096 28.9 µs, the LM head 122, llama3-8b fp8 387 / 368 tokens/s.
stage_s40_e() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*:gemv_claim_cuda.*' 300 "$OUT/s40_e_tests.txt"
    FOURFOLD_NATIVE_TEST_SIZES=small s32_sanitizer memcheck s40_e 'gemv_fp8.a_chain*' 120
    s37_fp8_ops4 default
    s38_fp8_prologue_ops default
    s37_fp8_decode default
    stage_pack s40_e
}
# The two prologue tests after their shared body moved into one helper (no kernel change).
stage_s40_f() {
    s25_gtests 'gemv_fp8.claimed*:gemv_fp8.column*' 120 "$OUT/s40_f_tests.txt"
    stage_pack s40_f
}
# The column-stationary kernel's first rows loaded before its prologue (their DRAM round trip under
# the prologue's L2 reads; the same bits). Predicted against s40_e: 6144 x 4096 + RMSNorm 11.3 ->
# about 10.5 µs, 4096 x 14336 + SwiGLU + bias 17.8 -> about 16.5, llama3-8b fp8 387 -> about 397.
stage_s40_g() {
    s25_gtests 'gemv_fp8.column*:decoder_fp8_cuda.norms*' 100 "$OUT/s40_g_tests.txt"
    s38_fp8_prologue_ops early
    s37_fp8_decode early
    stage_pack s40_g
}
# (s40_g ran on b518b13; its kernel change was reverted for its figures: 6144 x 4096 + RMSNorm
# 11.3 -> 10.2 µs, 4096 x 14336 + SwiGLU + bias 17.8 -> 18.1, llama3-8b fp8 387.4 -> 385.5 tokens/s
# on another machine. On main the stage runs main's kernel.)

# Session 41's first call (prepared in session 40, unmeasured): the column-stationary kernel's two
# trials on one machine, both giving main's bits: FOURFOLD_GEMV_FP8_CS_EARLY=1 (the first rows'
# loads before the prologue: s40_g measured it against s40_e across two machines, q/k/v + RMSNorm
# 11.3 -> 10.2 µs, SwiGLU 17.8 -> 18.1, decode 387.4 -> 385.5) and FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=1
# (each warp's slice of the SwiGLU from global memory: no block pass over 57 KB of gate and up, no
# barrier before the rows). Predicted: 4096 x 14336 + SwiGLU + bias 17.8 -> about 16.5 µs with
# the slices; llama3-8b fp8 387 -> about 392 with both. The gpu tests (the trials' bits against
# main's), memcheck and racecheck over them, then the prologue ops and llama3-8b fp8 under each
# setting, twice, interleaved (the second round in s41_b on the warm machine). About 7 minutes with
# the build, then about 3.
s41_trials() {
    local round=$1
    s38_fp8_prologue_ops "main$round"
    FOURFOLD_GEMV_FP8_CS_EARLY=1 s38_fp8_prologue_ops "early$round"
    FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=1 s38_fp8_prologue_ops "slices$round"
    FOURFOLD_GEMV_FP8_CS_EARLY=1 FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=1 s38_fp8_prologue_ops "both$round"
    s37_fp8_decode "main$round"
    FOURFOLD_GEMV_FP8_CS_EARLY=1 s37_fp8_decode "early$round"
    FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=1 s37_fp8_decode "slices$round"
    FOURFOLD_GEMV_FP8_CS_EARLY=1 FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=1 s37_fp8_decode "both$round"
}
stage_s41_a() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*' 300 "$OUT/s41_a_tests.txt"
    s32_sanitizer memcheck s41_a 'gemv_fp8.column_stationary_choices*' 120
    s32_sanitizer racecheck s41_a 'gemv_fp8.column_stationary_choices*' 120
    s41_trials 1
    stage_pack s41_a
}
stage_s41_b() {
    s41_trials 2
    # the bf16 GEMV as a column-stationary kernel, in the probe first (bf16_cs_*, against
    # balanced on all 13 shapes; 4096 x 4096 is where a fixed cost could go)
    nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc bench/gpu/gemv_probe.cu -lcublas \
        -o /tmp/probe && /tmp/probe >"$OUT/s41_b_probe.txt" 2>&1
    grep -E "balanced |stream |cs_|against" "$OUT/s41_b_probe.txt"
    stage_pack s41_b
}

# Session 41's second build: s41_a/b found the per-warp SwiGLU (CS_SWIGLU_SLICES=1) 17.3 -> 16.4 µs
# and llama3-8b fp8 387.5 -> 393.0 tokens/s, but with a relative L2 of 0.27 in the decode while
# every single-kernel test gave main's bits. Suspected: ptxas moved the straight-line __ldg
# (ld.global.nc: read-only for the kernel's life) of [gate | up] above griddepcontrol.wait. Now
# load_after_wait (a volatile coherent ld.global) reads them, the slices are the SwiGLU default,
# and the early rows the default on RMSNorm runs of at most 16 rows. This call: the SASS of the
# kernel with __ldg (the old source, rebuilt) and with the new load, the order of its loads and
# the wait; the gpu tests (a new chain test: gate_up then SwiGLU links, poisoned, eager and
# captured, under each forcing); memcheck and racecheck over the chain and choices tests; then
# the prologue ops and llama3-8b fp8 decode with the new defaults and each choice forced off.
# Predicted: decode correctness PASS at about 393-396 tokens/s (ctx 512), qkv + RMSNorm 10.5 µs.
s41_sass() {
    local t0=$SECONDS inc
    # the old form: gemv_cs.cuh (where the kernel lives since session 41's move) with __ldg
    mkdir -p /tmp/s41old/fourfold/kernels
    sed 's/load_after_wait(/__ldg(/g' src/fourfold/kernels/gemv_cs.cuh \
        >/tmp/s41old/fourfold/kernels/gemv_cs.cuh
    for v in old new; do
        inc=""
        [ $v = old ] && inc="-I/tmp/s41old"
        nvcc -std=c++17 -O3 --expt-relaxed-constexpr -gencode arch=compute_90a,code=sm_90a $inc -Isrc \
            -cubin src/fourfold/kernels/gemv_fp8.cu -o /tmp/s41_$v.cubin &&
            cuobjdump -sass /tmp/s41_$v.cubin >/tmp/s41_$v.sass
        # (s41_e's pattern "Function : .*gemv_fp8_csILi3EEv" matched nothing: the header's form
        # is printed now, and any line naming the kernel and "Function" opens it)
        grep -m3 -n "Function" /tmp/s41_$v.sass
        awk '/Function/ && /gemv_cs.*e4m3_weights.*Li3E/{on=1; next} /Function/{on=0} on' \
            /tmp/s41_$v.sass >"$OUT/s41_sass_$v.txt"
        echo "$v: $(wc -l <"$OUT/s41_sass_$v.txt") lines; loads, waits, barriers in order:"
        grep -nE "LDG|ACQ|DEPBAR|WARPSYNC|BAR|CCTL|PREEXIT|griddep|ERRBAR|MEMBAR|CGAERRBAR|LDS|STS" \
            "$OUT/s41_sass_$v.txt" | head -24
    done
    echo "sass after $((SECONDS - t0)) s"
}
s41_defaults() {
    local round=$1
    s38_fp8_prologue_ops "new$round"
    FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0 s38_fp8_prologue_ops "off$round"
    s37_fp8_decode "new$round"
    FOURFOLD_GEMV_FP8_CS_EARLY=0 FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0 s37_fp8_decode "off$round"
    FOURFOLD_GEMV_FP8_CS_EARLY=0 s37_fp8_decode "noearly$round"
    FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0 s37_fp8_decode "noslices$round"
}
stage_s41_c() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*' 300 "$OUT/s41_c_tests.txt"
    s32_sanitizer memcheck s41_c 'gemv_fp8.a_fused_swiglu*:gemv_fp8.column_stationary_choices*' 180
    s32_sanitizer racecheck s41_c 'gemv_fp8.a_fused_swiglu*:gemv_fp8.column_stationary_choices*' 180
    s41_defaults 1
    stage_pack s41_c
}
stage_s41_d() {
    s41_sass
    s41_defaults 2
    stage_pack s41_d
}

# Session 41's last call: s41_c found the per-warp SwiGLU with load_after_wait correct in the
# decode (PASS, llama3-8b fp8 391.0 tokens/s against 387.6 without it) and the early rows losing
# the decode again (389.1 with them): removed, the per-warp SwiGLU the default. This build: the
# SASS of the kernel with __ldg and with load_after_wait, the gpu tests (the chain test with N of
# 4 rows a block of the wave: s41_c's 2048 rows took no column-stationary plan), memcheck and
# racecheck over the chain and the SwiGLU tests, then llama3-8b fp8 with the default and with
# FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0, and the prologue ops. Predicted: 391 and 387.6 tokens/s.
stage_s41_e() {
    s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*' 300 "$OUT/s41_e_tests.txt"
    s37_fp8_decode new3
    FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0 s37_fp8_decode off3
    s32_sanitizer memcheck s41_e 'gemv_fp8.a_fused_swiglu*:gemv_fp8.column_stationary_swiglu*' 60
    s32_sanitizer racecheck s41_e 'gemv_fp8.a_fused_swiglu*:gemv_fp8.column_stationary_swiglu*' 60
    s41_sass
    s38_fp8_prologue_ops new3
    stage_pack s41_e
}

# Session 43's first call (prepared in sessions 41 and 42, unmeasured). Session 42 (no device)
# read the SASS of every kernel (nvdisasm) and found ptxas placing non-coherent loads (__ldg) of a
# dependent launch's input above griddepcontrol.wait (ACQBULK): the softmax's first vectors (45
# kernels), the bf16 / fp16 column-stationary trial's x, and in session 41's old source the FP8
# per-warp SwiGLU's [gate | up] (its decode's relative L2 0.27). Those inputs now go through
# load_after_wait (elements.cuh); scripts/check_sass_waits.py (ctest kernels.sass_waits, which
# needs cuobjdump: here it runs) holds every kernel to it. This call: that check; the gpu tests
# (new: dependent_launch_cuda.*, a 256 MiB GEMV then the softmax, swiglu or the one-token GEMV
# reading its NaN-poisoned output, eager and 3 graph replays), the GEMV, FP8, softmax, swiglu and
# MoE tests (the MoE's norm weight is read before the wait by an L1::no_allocate load now); the
# bf16 decoder's tests with the trial on; the decode's bf16 GEMV shapes and llama3-8b
# native_fused with it off and on (the bf16 column-stationary kernel on trial,
# FOURFOLD_GEMV_CS=1: gemv_cs of gemv_cs.cuh over same_weights). Predicted from session 41's
# probe: 6144 x 4096 + RMSNorm about -2 µs, 4096 x 4096 about -1, 28672 x 4096 + RMSNorm about
# -3.5, the LM head about -7; llama3-8b bf16 246 -> about 255 tokens/s at ctx 512 (its down
# projection, K = 14336, stays claimed); qwen3-30b-a3b's K = 2048 GEMVs take it too (s43_b).
stage_s43_a() {
    local t0=$SECONDS
    ctest --test-dir $BUILD -R sass_waits --output-on-failure >"$OUT/s43_a_sass.txt" 2>&1
    echo "kernels.sass_waits: exit $? after $((SECONDS - t0)) s"
    grep -E "check_sass_waits|Passed|Failed|Skipped|loads before" "$OUT/s43_a_sass.txt" | head -12
    s25_gtests 'dependent_launch_cuda.*:gemv_claim_cuda.*:gemv_fp8*:native.gemv*:native.softmax*:swiglu_cuda.*' \
        300 "$OUT/s43_a_tests.txt"
    FOURFOLD_GEMV_CS=1 s25_gtests 'decode_native_cuda.*:native.gemv*' 200 "$OUT/s43_a_tests_cs.txt"
    s36_ops base1
    FOURFOLD_GEMV_CS=1 s36_ops cs1
    s36_decode llama3-8b base1
    FOURFOLD_GEMV_CS=1 s36_decode llama3-8b cs1
    stage_pack s43_a
}
# The softmax's article cases after its loads moved below the wait (session 42): they were
# measured with the first vectors' loads hoisted above it (1 x 128,256 fp32 3.69-3.71 µs).
# Predicted: +0.2 to +0.5 µs a call (the row's first lines come from L2, prefetched before the
# wait, after it instead of during the launch before's tail).
s43_softmax() {
    local tag=$1 t0=$SECONDS
    timeout 120 $BIN run --workload softmax --shape 1x128256,1x262144,8x128256,64x32000,64x128256 \
        --dtype fp32 --variants stock,native --device cuda --ledgers op_time,correctness \
        --min-time 0.1 --label "s43-softmax-$tag" --db "$DB" --quiet >"$OUT/s43_softmax_$tag.txt" 2>&1
    timeout 60 $BIN run --workload softmax --shape 1x32000,1x128256 --dtype bf16 --variants stock,native \
        --device cuda --ledgers op_time,correctness --min-time 0.1 --label "s43-softmax-$tag" \
        --db "$DB" --quiet >>"$OUT/s43_softmax_$tag.txt" 2>&1
    echo "softmax ($tag): exit $? after $((SECONDS - t0)) s"
    grep -E "^softmax .*(graph|PASS|FAIL)" "$OUT/s43_softmax_$tag.txt" | head -30
}
# The second call on the warm machine (about 6 minutes): the sanitizers over the trial's test,
# the chain tests and the fused rope's test; the MoE, FP8 decoder and decode attention tests
# (the fused rope bitwise against rope_kv then attention with its loads issued together, the
# default since session 42, and in the compiler's order); qwen3-30b-a3b off and on; the softmax's
# article cases after the fix.
stage_s43_b() {
    local rope='decode_attention_cuda.rope_fused*'
    s32_sanitizer memcheck s43_b "gemv_claim_cuda.column*:dependent_launch_cuda.*:$rope" 150
    s32_sanitizer racecheck s43_b "gemv_claim_cuda.column*:dependent_launch_cuda.*:$rope" 150
    s25_gtests 'moe_cuda.*:decoder_fp8_cuda.*:decode_native_cuda.*:decode_attention_cuda.*-decode_attention_cuda.the_paths*' \
        280 "$OUT/s43_b_tests.txt"
    s36_decode qwen3-30b-a3b base1
    FOURFOLD_GEMV_CS=1 s36_decode qwen3-30b-a3b cs1
    s43_softmax 1
    stage_pack s43_b
}
# The third call (about 6 minutes; session 43 started with 25 of its 30 device minutes, so the
# rope and epilogue A/Bs share one call, each default run serving both): decode attention's fused
# rope with its loads issued together (session 42's default: one round trip a row where nvcc's
# order made three, the v row's copy no longer four loads and stores in series) against
# FOURFOLD_ATTENTION_ROPE_LOADS=0; the GEMV epilogues' scale and bias fetched at the start
# (cp.async into shared memory after the wait, where the column-stationary and claimed epilogues
# loaded them after their last block barrier) against FOURFOLD_GEMV_EPILOGUE_PREFETCH=0. The
# defaults' runs of s43_a (llama3-8b bf16, the bf16 ops) and s43_b (qwen3-30b-a3b) count too.
# Predicted: rope qwen3-30b-a3b +2-3 % (342 -> about 350 tokens/s at ctx 512), llama3-8b +1 %;
# epilogue about -0.5 µs an op with a scale or a bias, llama3-8b fp8 390.8 -> about 400, bf16 +1 %.
stage_s43_c() {
    FOURFOLD_ATTENTION_ROPE_LOADS=0 s36_decode qwen3-30b-a3b ropeold1
    FOURFOLD_ATTENTION_ROPE_LOADS=0 s37_fp8_decode ropeold1
    s37_fp8_decode new1
    FOURFOLD_GEMV_EPILOGUE_PREFETCH=0 s37_fp8_decode epiold1
    FOURFOLD_GEMV_EPILOGUE_PREFETCH=0 s37_fp8_ops epiold
    s37_fp8_ops epinew
    FOURFOLD_GEMV_EPILOGUE_PREFETCH=0 s36_ops epiold
    FOURFOLD_ATTENTION_ROPE_LOADS=0 s36_decode llama3-8b ropeold1
    FOURFOLD_GEMV_EPILOGUE_PREFETCH=0 s36_decode llama3-8b epiold1
    s36_decode qwen3-30b-a3b new2
    stage_pack s43_c
}
# A fourth call if the device time allows (about 4 minutes): s43_c's second round, interleaved.
stage_s43_d() {
    s36_decode qwen3-30b-a3b new3
    FOURFOLD_ATTENTION_ROPE_LOADS=0 s36_decode qwen3-30b-a3b ropeold2
    FOURFOLD_GEMV_EPILOGUE_PREFETCH=0 s37_fp8_decode epiold2
    s37_fp8_decode new2
    FOURFOLD_ATTENTION_ROPE_LOADS=0 s37_fp8_decode ropeold2
    stage_pack s43_d
}

# Session 44's first call (about 7 minutes with the build). Session 43 made the column-stationary
# GEMV the default for one token of bf16 / fp16 with rows of 8 KB or more (llama3-8b 244.8 ->
# 254.2 tokens/s; qwen3-30b-a3b's 4 KB rows keep the static partition: with them it lost 3.5 %).
# This call: the GEMV and decoder gpu tests at the default; llama3-8b at the default, with
# FOURFOLD_GEMV_CS=0 and at the default again (session 43 read 254.2 with it on one machine and
# 250.3 on the next, same kernels: the gain wants one machine); qwen3-30b-a3b native_fused.
# Predicted: llama3-8b about 254 / 245 tokens/s (ctx 512 / 2048), qwen3-30b-a3b about 342 / 336
# (its GEMVs unchanged).
stage_s44_a() {
    s25_gtests 'dependent_launch_cuda.*:gemv_claim_cuda.*:native.gemv*:decode_native_cuda.*' 240 \
        "$OUT/s44_a_tests.txt"
    s36_decode llama3-8b cs
    FOURFOLD_GEMV_CS=0 s36_decode llama3-8b claimed
    s36_decode llama3-8b cs2
    s36_decode qwen3-30b-a3b cs
    stage_pack s44_a
}

# Session 44's second call, on the same warm machine (about 6 minutes): the article suite's
# linear_decode jobs (96 one-token shapes and 6 with a bias; stock, generic, native) for issue
# 13's geometric mean (>= 1.5x, last 1.238x in session 23, before the column-stationary default)
# and its "no shape more than 2 % slower" rule; then one qwen3-30b-a3b step under ncu with its
# K = 2048 GEMVs static (the default) and column-stationary (FOURFOLD_GEMV_CS=1): session 43's
# unexplained 3.5 % (the op alone was 0.6 µs faster with it, the decode slower).
# The article suite's linear_decode (96 shapes, stock and native) under `label`, its summary and
# issue 13's GEMV table (bench/gpu/native_table.py).
article_linear_decode() {
    local label=$1 t0=$SECONDS
    timeout -s INT 260 $BIN run --suite article --workload linear_decode --device cuda \
        --min-time 0.05 --label $label-article --db "$DB" --quiet >"$OUT/${label}_article.txt" 2>&1
    echo "article linear_decode: exit $? after $((SECONDS - t0)) s"
    sed -n '/^speed-up of/,/^$/p' "$OUT/${label}_article.txt"
    grep -cE "^linear_decode .*PASS" "$OUT/${label}_article.txt"
    grep -E "^linear_decode .*(FAIL|skipped)" "$OUT/${label}_article.txt" | head -5
    $BIN export --format json --run $label-article --db "$DB" >"$OUT/${label}_article.json"
    python3 bench/gpu/native_table.py "$OUT/${label}_article.json" >"$OUT/${label}_article_table.md" 2>&1
    tail -14 "$OUT/${label}_article_table.md"
}

# Predicted: the geometric mean about 1.3x (the K = 4096 shapes 1-21 % faster, session 43's ops);
# under ncu the column-stationary qkv and o GEMVs faster alone, as in the op figures, so that the
# loss is in the overlap with the MoE block before them, not in the kernels.
stage_s44_b() {
    local t0=$SECONDS
    article_linear_decode s44
    S27_PROFILE_LIMIT=120 s27_step_profile qwen3-30b-a3b native_fused s44_qwen_static
    FOURFOLD_GEMV_CS=1 S27_PROFILE_LIMIT=120 s27_step_profile qwen3-30b-a3b native_fused s44_qwen_cs
    echo "after $((SECONDS - t0)) s"
    stage_pack s44_b
}

# Session 45's first call (about 8-9 minutes with the build): session 44's two trials, unmeasured.
# 1. The tensor-core GEMV of 2..8 tokens in rounds (FOURFOLD_GEMV_MMA_ROUNDS=1, gemv_mma_rounds):
#    its gpu test and the GEMV edge sizes with it (the sanitizers in s45_c).
# 2. Column-stationary rows of 4 KB where the weights are 64 MB or more (FOURFOLD_GEMV_CS_BIG=1):
#    qwen3-30b-a3b native_fused with it and without (its LM head 156.8 -> 143.8 µs alone under
#    ncu, s44_b). Predicted: +0.3-0.5 % (13 µs of its 2.93 ms a token).
# 3. Column-stationary below 4 rows a block of the wave (FOURFOLD_GEMV_CS_FEW=1): its gpu test,
#    the native decoder's tests with it; qwen3 with it (its o GEMV, 2048 x 4096 +
#    the residual, 8.77 µs alone on the split-K path) and with both. Predicted: +2-4 % if the
#    MoE block after it does not pay at its start (the loss the qkv GEMVs showed).
# 4. Where column-stationary qwen3 loses (session 43: 342.3 -> 330.4 with FOURFOLD_GEMV_CS=1; its
#    kernels not slower alone, s44_b): FOURFOLD_GEMV_CS=1 again, then both ways with the GEMVs'
#    dependent launch off (FOURFOLD_GEMV_DEPENDENT_LAUNCH=0: a GEMV's start no longer overlaps
#    the MoE block's end) and with every kernel's off (FOURFOLD_DEPENDENT_LAUNCH=0: nor does
#    decode attention's start, whose KV prefetch before its wait needs a free SM, overlap the qkv
#    GEMV's end; one column-stationary block fills an SM until it leaves, 4 static blocks leave
#    one by one). Predicted, if the loss is in those overlaps: without them both lose ground and
#    column-stationary is no longer behind.
# qwen3-30b-a3b's decodes for session 44's column-stationary trials (s45_a, s46_a).
s45_column_stationary_decodes() {
    s36_decode qwen3-30b-a3b base
    FOURFOLD_GEMV_CS_BIG=1 s36_decode qwen3-30b-a3b big
    FOURFOLD_GEMV_CS_FEW=1 s36_decode qwen3-30b-a3b few
    FOURFOLD_GEMV_CS_FEW=1 FOURFOLD_GEMV_CS_BIG=1 s36_decode qwen3-30b-a3b fewbig
    s36_decode qwen3-30b-a3b base2
    FOURFOLD_GEMV_CS=1 s36_decode qwen3-30b-a3b cs
}
stage_s45_a() {
    FOURFOLD_GEMV_MMA_ROUNDS=1 s25_gtests 'gemv_claim_cuda.tensor_cores_in_rounds*:native.gemv_matches*' \
        200 "$OUT/s45_a_tests.txt"
    FOURFOLD_GEMV_CS_FEW=1 s25_gtests 'gemv_claim_cuda.column_stationary_few*:decode_native_cuda.*' \
        120 "$OUT/s45_a_tests_few.txt"
    s45_column_stationary_decodes
    FOURFOLD_GEMV_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b base_nodep
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b cs_nodep
    FOURFOLD_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b base_nopdl
    FOURFOLD_GEMV_CS=1 FOURFOLD_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b cs_nopdl
    stage_pack s45_a
}

# Session 45's second call, same machine (about 7 minutes). The 2..8-token sweep (stage
# native_tokens's 16 shapes at 2, 4 and 8 tokens; issue 13: geometric mean >= 1.3x over stock, 1.09x
# in session 25, bandwidth-bound 0.878x) in rounds with stock beside it, then gemv_mma (the default)
# alone on the same machine; then the article's 26 one-token shapes of the static partition
# column-stationary (FOURFOLD_GEMV_CS=1) with stock, and the default alone.
# Predicted (rounds against gemv_mma): the LM head 128,256 x 4096 288-291 -> about 250 µs, 25,600 x
# 5120 76-83 -> about 68, 8192 x 8192 36-40 -> about 35, the one-wave shapes unchanged; the
# static-partition shapes of 4 KB rows and more 2-8 % faster column-stationary (151,936 x 2048 in
# the decode: 8 %), those of 2-2.3 KB rows (3 slices, the last a quarter full) not.
stage_s45_b() {
    local t0=$SECONDS
    local shapes
    shapes=$(native_token_shapes) # (stages/native.sh)
    FOURFOLD_GEMV_MMA_ROUNDS=1 timeout -s INT 200 $BIN run --workload linear_decode --shape "$shapes" \
        --dtype bf16 --variants stock,native --device cuda --min-time 0.05 \
        --ledgers op_time,correctness --label s45-rounds --db "$DB" --quiet >"$OUT/s45_rounds.txt" 2>&1
    echo "rounds sweep: exit $? after $((SECONDS - t0)) s"
    sed -n '/^speed-up of/,/^$/p' "$OUT/s45_rounds.txt"
    timeout -s INT 120 $BIN run --workload linear_decode --shape "$shapes" \
        --dtype bf16 --variants native --device cuda --min-time 0.05 --ledgers op_time \
        --label s45-tiles --db "$DB" --quiet >"$OUT/s45_tiles.txt" 2>&1
    echo "gemv_mma sweep: exit $? after $((SECONDS - t0)) s"
    # the article's 26 one-token shapes on the static partition (rows under 8 KB, 0.988x of stock
    # together in s44_b): column-stationary at any row length (FOURFOLD_GEMV_CS=1; for the 7 of 64
    # MB or more of 4 KB rows and longer, the plan FOURFOLD_GEMV_CS_BIG=1 makes), then the default
    # and the split-K shapes of 8 KB rows with 2 rows a run or more (FOURFOLD_GEMV_CS_FEW=1)
    local big=1x1024x4096,1x1536x4096,1x2048x4096,1x1024x5120,1x2048x5376,1x2048x6144,1x1152x6912
    big=$big,1x1024x8192,1x2048x8192
    big=$big,1x3072x1024,1x2560x2048,1x4096x1536,1x6912x1152,1x2880x2880,1x4096x2048,1x3072x3072
    big=$big,1x4096x2560,1x4096x2880,1x6144x2048,1x4096x3840,1x5760x2880,1x8192x2048,1x9728x2560
    big=$big,1x8192x3072,1x10240x2560,1x15360x3840,1x151936x1024,1x128256x2048,1x262144x1152
    big=$big,1x151936x2048,1x151936x2560,1x128256x3072,1x201088x2880,1x262208x2560,1x262208x3840
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_FEW=1 timeout -s INT 140 $BIN run --workload linear_decode --shape "$big" \
        --dtype bf16 --variants stock,native --device cuda --min-time 0.05 --ledgers op_time,correctness \
        --label s45-big --db "$DB" --quiet >"$OUT/s45_big.txt" 2>&1
    echo "static-partition shapes, column-stationary: exit $? after $((SECONDS - t0)) s"
    grep -cE "^linear_decode .*PASS" "$OUT/s45_big.txt"
    timeout -s INT 75 $BIN run --workload linear_decode --shape "$big" --dtype bf16 --variants native \
        --device cuda --min-time 0.05 --ledgers op_time --label s45-big-base --db "$DB" --quiet \
        >"$OUT/s45_big_base.txt" 2>&1
    echo "static-partition shapes, default: exit $? after $((SECONDS - t0)) s"
    local run
    for run in s45-rounds s45-tiles s45-big s45-big-base; do
        $BIN export --format json --run $run --db "$DB" >"$OUT/s45_$run.json"
    done
    python3 bench/gpu/native_table.py "$OUT/s45_s45-rounds.json" | tail -6
    python3 bench/gpu/ab_table.py "$OUT/s45_s45-tiles.json" "$OUT/s45_s45-rounds.json" gemv_mma rounds
    python3 bench/gpu/ab_table.py "$OUT/s45_s45-big-base.json" "$OUT/s45_s45-big.json" static cs
    stage_pack s45_b
}

# Session 45's third call (about 5-6 minutes): the sanitizers over session 44's trials and session
# 45's pad. memcheck and racecheck over the rounds test (the split's sums meet in shared memory,
# two buffers by the round's parity, one barrier a round), memcheck over the few-rows
# column-stationary test and over the pad's tests (its new dependent launch and prefetch).
stage_s45_c() {
    FOURFOLD_GEMV_MMA_ROUNDS=1 s32_sanitizer memcheck s45_c 'gemv_claim_cuda.tensor_cores_in_rounds*' 120
    FOURFOLD_GEMV_MMA_ROUNDS=1 s32_sanitizer racecheck s45_c 'gemv_claim_cuda.tensor_cores_in_rounds*' 150
    FOURFOLD_GEMV_CS_FEW=1 s32_sanitizer memcheck s45_c_few 'gemv_claim_cuda.column_stationary_few*' 90
    s32_sanitizer memcheck s45_c_pad 'dependent_launch_cuda.the_pad*:native.pad_matches*' 90
    stage_pack s45_c
}

# Session 45's two default changes and one trial, unmeasured (about 6-7 minutes; run it second,
# after s45_a, whose decodes already carry the defaults: s45_a's base against its split_nopf
# says what the split-K prefetch does to qwen3).
# 1. The pad: its register path (every 2-byte pad) launched dependent on the launch before, with
#    each warp's first 8 rows of input prefetched into L2 before its wait. Its gpu tests (a pad
#    reading the launch before's output among them); the article's 8 pad cases three ways on one
#    machine: the default, without the prefetch (FOURFOLD_PAD_PREFETCH=0), and without either
#    (FOURFOLD_DEPENDENT_LAUNCH=0 too: the code before, for the bf16 pads). Measured on an H100
#    (s45_f): 96x5x130x130 bf16 16.93 -> 16.10 µs, the small bf16 pads 1.3-1.8 µs less. Predicted
#    on the H200: 13.8 -> about 13.0 µs; the prefetch's share and the launch's now told apart.
#    (fp32, the staged path: as before in the default; its "before" run has no dependent launch.)
# 2. The split-K GEMV (gemv_vec) under 8 MiB of weights asks L2 for its first two steps before its
#    wait; with it (stock beside) and without (FOURFOLD_GEMV_VEC_PREFETCH=0), the 35 split shapes
#    (the 12 of 8 MiB or more now the same kernel both ways: a control). Measured on an H100
#    (s45_f, before the threshold): the 23 under 8 MiB 1.038x, the 12 larger 0.956x. Predicted on
#    the H200: the 23 about 1.04x, the 12 1.00x; with a bias the bias's cost within 2 % on the 8
#    shapes measured (6 under 8 MiB; 1024 x 4096 and 2048 x 2048 at 8 MiB: no prefetch).
# (Run in session 46 on d0f16de. The split-K prefetch (0.989x) and the rounds' dependent launch
# (0.933x) lost and were removed after it: FOURFOLD_GEMV_VEC_PREFETCH and FOURFOLD_GEMV_MMA_DEPENDENT
# do nothing on later builds, and FOURFOLD_GEMV_MMA_ROUNDS=1 / CS_FEW=1 are defaults in part.)
stage_s45_e() {
    s25_gtests 'dependent_launch_cuda.*:native.pad*' 150 "$OUT/s45_e_tests.txt"
    s45_pad_run s45-pad
    s45_pad_run s45-pad-nopf FOURFOLD_PAD_PREFETCH=0
    s45_pad_run s45-pad-before FOURFOLD_PAD_PREFETCH=0 FOURFOLD_DEPENDENT_LAUNCH=0
    python3 bench/gpu/ab_table.py "$OUT/s45-pad-before.json" "$OUT/s45-pad.json" before now
    python3 bench/gpu/ab_table.py "$OUT/s45-pad-nopf.json" "$OUT/s45-pad.json" no-prefetch prefetch
    s45_split_ab
    # the fused bias (issue 13: <= 2 % over none; +6.3 % at worst in s44_b, 1024 x 2560): eight
    # split shapes with and without, the bias's line now prefetched with the first steps
    local biased=1x1024x2560,1x512x2880,1x1024x4096,1x2048x2048,1x768x2048,1x1152x1024,1x2048x640
    biased=$biased,1x128x2880
    s45_prefetch_ab bias "$biased" --param bias=false,true
    s45_rounds_dependent
    stage_pack s45_e
}

# 3. (trial) The tensor-core GEMV in rounds launched dependent (FOURFOLD_GEMV_MMA_DEPENDENT=1 with
#    FOURFOLD_GEMV_MMA_ROUNDS=1; gemv_mma lost 1.3 µs with it in session 23): its gpu test, then
#    the 16 shapes of stage native_tokens at 2 and 8 tokens, rounds serial and dependent.
#    Predicted: the shapes of nearly a full wave about 1 µs less a call; the small ones -1 to +1.3.
s45_rounds_dependent() {
    local t0=$SECONDS shapes="" t nk
    FOURFOLD_GEMV_MMA_ROUNDS=1 FOURFOLD_GEMV_MMA_DEPENDENT=1 s25_gtests \
        'gemv_claim_cuda.tensor_cores_in_rounds*' 90 "$OUT/s45_e_rounds_dep_tests.txt"
    for t in 2 8; do
        for nk in 768x2048 1024x4096 2048x2048 4096x4096 2560x4096 14336x4096 4096x14336 8192x8192 \
            3072x3072 5120x5120 151936x1024 128256x4096 1024x1024 6144x2048 17408x5120 25600x5120; do
            shapes=$shapes${shapes:+,}${t}x$nk
        done
    done
    local label dep
    for label in s45-rounds-serial s45-rounds-dep; do
        dep=0
        [ $label = s45-rounds-dep ] && dep=1
        FOURFOLD_GEMV_MMA_ROUNDS=1 FOURFOLD_GEMV_MMA_DEPENDENT=$dep timeout -s INT 90 $BIN run \
            --workload linear_decode --shape "$shapes" --dtype bf16 --variants native --device cuda \
            --min-time 0.05 --ledgers op_time,correctness --label $label --db "$DB" --quiet \
            >"$OUT/$label.txt" 2>&1
        echo "rounds sweep ($label): exit $? after $((SECONDS - t0)) s"
        grep -cE "^linear_decode .*PASS" "$OUT/$label.txt"
        $BIN export --format json --run $label --db "$DB" >"$OUT/$label.json"
    done
    python3 bench/gpu/ab_table.py "$OUT/s45-rounds-serial.json" "$OUT/s45-rounds-dep.json" serial dependent
}

# The article's 35 one-token split-K shapes (as one --shape list).
s45_split_shapes() {
    local split=1x1024x4096,1x1024x8192,1x2048x2048,1x512x2048,1x2048x8192,1x1024x3072,1x8x4096
    split=$split,1x2048x1024,1x1024x1024,1x1024x2048,1x2048x6144,1x1024x2560,1x1024x5120,1x2048x4096
    split=$split,1x128x2048,1x768x2048,1x2048x768,1x512x4096,1x128x4096,1x1536x4096,1x1024x640
    split=$split,1x256x640,1x640x1024,1x2048x640,1x640x2048,1x1024x1152,1x256x1152,1x1152x1024
    split=$split,1x1152x6912,1x2048x2560,1x2048x3840,1x2048x5376,1x512x2880,1x32x2880,1x128x2880
    echo "$split"
}

# The article's 35 one-token split-K shapes with the split-K prefetch (stock beside) and without.
s45_split_ab() {
    local split
    split=$(s45_split_shapes)
    s45_prefetch_ab split "$split"
}

# One A/B of the split-K prefetch: `name` over `shapes` (more `run` arguments after them), with it
# (stock beside) and without (FOURFOLD_GEMV_VEC_PREFETCH=0), then the table.
s45_prefetch_ab() {
    local name=$1 shapes=$2 t0=$SECONDS
    shift 2
    timeout -s INT 120 $BIN run --workload linear_decode --shape "$shapes" "$@" --dtype bf16 \
        --variants stock,native --device cuda --min-time 0.05 --ledgers op_time,correctness \
        --label "s45-$name" --db "$DB" --quiet >"$OUT/s45_$name.txt" 2>&1
    echo "$name, prefetch: exit $? after $((SECONDS - t0)) s"
    grep -cE "^linear_decode .*PASS" "$OUT/s45_$name.txt"
    FOURFOLD_GEMV_VEC_PREFETCH=0 timeout -s INT 90 $BIN run --workload linear_decode --shape "$shapes" \
        "$@" --dtype bf16 --variants native --device cuda --min-time 0.05 --ledgers op_time \
        --label "s45-$name-nopf" --db "$DB" --quiet >"$OUT/s45_${name}_nopf.txt" 2>&1
    echo "$name, no prefetch: exit $? after $((SECONDS - t0)) s"
    local run
    for run in "s45-$name" "s45-$name-nopf"; do
        $BIN export --format json --run "$run" --db "$DB" >"$OUT/s45_$run.json"
    done
    python3 bench/gpu/ab_table.py "$OUT/s45_s45-$name-nopf.json" "$OUT/s45_s45-$name.json" no-prefetch prefetch
}

# Session 45's device call when loans came back late in the session (about 8 minutes with the
# build): the two default changes alone. The dependent-launch and pad gpu tests; the article's
# pads before (both switches off) and now; the split-K A/B; qwen3 with and without the split-K
# prefetch. Predictions as in s45_e and s45_a.
stage_s45_f() {
    s25_gtests 'dependent_launch_cuda.*:native.pad*' 150 "$OUT/s45_f_tests.txt"
    s45_pad_run s45-pad
    s45_pad_run s45-pad-before FOURFOLD_PAD_PREFETCH=0 FOURFOLD_DEPENDENT_LAUNCH=0
    python3 bench/gpu/ab_table.py "$OUT/s45-pad-before.json" "$OUT/s45-pad.json" before now
    s45_split_ab
    s36_decode qwen3-30b-a3b base
    FOURFOLD_GEMV_VEC_PREFETCH=0 s36_decode qwen3-30b-a3b split_nopf
    stage_pack s45_f
}

s45_pad_run() { # label, then the switches as NAME=VALUE
    local label=$1 t0=$SECONDS
    shift
    env "$@" timeout -s INT 100 $BIN run --suite article --workload pad --device cuda --min-time 0.05 \
        --label "$label" --db "$DB" --quiet >"$OUT/${label}.txt" 2>&1
    echo "article pad ($label $*): exit $? after $((SECONDS - t0)) s"
    grep -cE "^pad .*PASS" "$OUT/${label}.txt"
    grep -E "^pad .*(FAIL|skipped)" "$OUT/${label}.txt" | head -4
    $BIN export --format json --run "$label" --db "$DB" >"$OUT/${label}.json"
}

# Session 45's fourth call if the device time allows (about 5 minutes): issue 15's peer in the same
# call. bench/compile_decode.py with one K and one V cache tensor a layer (session 44; they were
# views of one [layers, ...] tensor, written in place, which functionalisation may rebuild whole
# each layer), beside fourfold's llama3-8b stock and native_fused, graph mode, ctx 512.
# Predicted: torch_compile 130.8 (session 23) -> 170-200 tokens/s if the cache was the gap;
# native_fused about 254, so 1.27-1.5x (the target asks 1.2x).
stage_s45_d() {
    PYTHON_DECODE_LIMIT_S=330 PYTHON_DECODE_ARGS="--param mode=graph --variants stock,native_fused,torch_compile" \
        stage_python_decode
    mv "$OUT/python_decode.txt" "$OUT/s45_d_python_decode.txt" 2>/dev/null
    stage_pack s45_d
}

# Session 43's last device minutes (about 4 minutes after the build), on bfc2820: the two-block
# trial of c6400ff (FOURFOLD_GEMV_CS_TWO_BLOCKS=1), its correctness first, then its A/B on both
# decodes. It lost and was removed after this call: the switch does nothing on later builds.
stage_s43_e() {
    s25_gtests 'gemv_claim_cuda.column*:native.gemv*' 120 "$OUT/s43_e_tests.txt"
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_TWO_BLOCKS=1 s36_decode qwen3-30b-a3b cs1two
    s36_decode qwen3-30b-a3b base
    FOURFOLD_GEMV_CS_TWO_BLOCKS=1 s36_decode llama3-8b two
    s36_decode llama3-8b one
    s32_sanitizer memcheck s43_e 'gemv_claim_cuda.column*' 60
    stage_pack s43_e
}

# Session 46's first call (about 8 minutes with the build), on the H200: the correctness of every
# trial and of session 45's two default changes, the pad's memcheck (its new dependent launch and
# prefetch are in the default), and qwen3's decodes for the two column-stationary trials
# (predictions as in s45_a: CS_BIG +0.3-0.5 %, CS_FEW +2-4 %; FOURFOLD_GEMV_CS=1 behind, as in
# session 43). s45_a's dependent-launch diagnostics wait for a session with time to spare.
stage_s46_a() {
    FOURFOLD_GEMV_MMA_ROUNDS=1 s25_gtests 'gemv_claim_cuda.tensor_cores_in_rounds*:native.gemv_matches*' \
        200 "$OUT/s46_a_tests_rounds.txt"
    FOURFOLD_GEMV_CS_FEW=1 s25_gtests 'gemv_claim_cuda.column_stationary_few*:decode_native_cuda.*' \
        120 "$OUT/s46_a_tests_few.txt"
    s25_gtests 'dependent_launch_cuda.*:native.pad*' 150 "$OUT/s46_a_tests_pad.txt"
    s32_sanitizer memcheck s46_a_pad 'dependent_launch_cuda.the_pad*:native.pad_matches*' 90
    s45_column_stationary_decodes
    stage_pack s46_a
}

# Session 46's last call (about 8 minutes with the build): the defaults the first four calls chose.
# Rounds (gemv_mma_rounds) for 2..8 tokens from 64 MiB of weights; column-stationary below 4 rows
# a block of the wave with 4 rows a run or more (FOURFOLD_GEMV_CS_FEW=0: off); the split-K
# prefetch and the rounds' dependent launch removed. The GEMV gpu tests, memcheck over the few-rows
# test (its new K = 4096 shape of 4-5 rows a run), qwen3 and llama3-8b, the 2..8-token sweep and
# the 35 split shapes with stock beside (in the order a short budget cuts them). Predicted: T=2..8 1.121x (gemv_mma, s45_b) -> about
# 1.15x; the 35 split shapes 1.837x -> about 1.95x; qwen3 about 350 / 336 tokens/s (s46_a's few),
# llama3-8b 250-254 / 245 (unchanged: no shape of it changes path).
# One stock-and-native linear_decode run of `shapes` under label s46-`name`, cut at `limit` s:
# its PASS count, summary and JSON export.
s46_linear_run() {
    local name=$1 shapes=$2 limit=$3 t0=$SECONDS
    timeout -s INT "$limit" $BIN run --workload linear_decode --shape "$shapes" --dtype bf16 \
        --variants stock,native --device cuda --min-time 0.05 --ledgers op_time,correctness \
        --label s46-$name --db "$DB" --quiet >"$OUT/s46_$name.txt" 2>&1
    echo "$name: exit $? after $((SECONDS - t0)) s"
    grep -cE "^linear_decode .*PASS" "$OUT/s46_$name.txt"
    sed -n '/^speed-up of/,/^$/p' "$OUT/s46_$name.txt"
    $BIN export --format json --run s46-$name --db "$DB" >"$OUT/s46_$name.json"
}
stage_s46_b() {
    s25_gtests 'gemv_claim_cuda.*:dependent_launch_cuda.the_one_token_gemv*:native.gemv*:decode_native_cuda.*' \
        200 "$OUT/s46_b_tests.txt"
    s32_sanitizer memcheck s46_b_few 'gemv_claim_cuda.column_stationary_few*' 60
    s36_decode qwen3-30b-a3b s46
    s46_linear_run split "$(s45_split_shapes)" 90
    s36_decode llama3-8b s46
    s46_linear_run tokens "$(native_token_shapes)" 120 # (stages/native.sh)
    python3 bench/gpu/native_table.py "$OUT/s46_tokens.json" | tail -6
    stage_pack s46_b
}

# Session 47's second call, after `build s46_b` on the same machine (about 8 minutes).
# 1. Issue 13's one-token table over the article's 96 shapes on the new defaults. Predicted: the
#    geometric mean 1.267x (s44_b) -> about 1.29x (8 split shapes column-stationary, 1.16-1.35x
#    each in s45_b; the split-K prefetch gone); the shapes more than 2 % slower than stock 13 ->
#    about 11 (the static partition's).
# 2. Why column-stationary 4 KB rows lose in qwen3's decode though faster alone (s45_b: 1.131x
#    over 35 shapes; qwen3 344.2 -> 329.5 tokens/s, s46_a): s45_a's diagnostics, not yet run.
#    FOURFOLD_GEMV_CS=1 against the default with the GEMVs' dependent launch off and with every
#    kernel's off. Predicted, if the loss is in the overlap with the launch before or after:
#    without it both lose ground and column-stationary is no longer behind.
# 3. One native_fused qwen3 step kernel by kernel under ncu (the o GEMV now column-stationary;
#    session 35's profile had it 8.80 µs alone on the split path). Predicted: about 6.5 µs.
stage_s47_a() {
    local t0=$SECONDS
    article_linear_decode s47
    s36_decode qwen3-30b-a3b base
    FOURFOLD_GEMV_CS=1 s36_decode qwen3-30b-a3b cs
    FOURFOLD_GEMV_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b base_nodep
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b cs_nodep
    FOURFOLD_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b base_nopdl
    FOURFOLD_GEMV_CS=1 FOURFOLD_DEPENDENT_LAUNCH=0 s36_decode qwen3-30b-a3b cs_nopdl
    echo "after $((SECONDS - t0)) s"
    S27_PROFILE_LIMIT=120 s27_step_profile qwen3-30b-a3b native_fused s47_qwen_profile
    stage_pack s47_a
}

# Session 47's third call (about 8 minutes with the build): the sanitizers over the code as it
# ships (2f0cf2c: rounds for 2..8 tokens from 64 MiB, column-stationary below 4 rows a block), which
# session 46 ran only under the trial switches. memcheck and racecheck over the native op tests
# (small sizes), then over the GEMV path tests (rounds, few rows, claimed, column-stationary).
stage_s47_b() {
    SANITIZER_LIMIT_S=110 stage_sanitizer
    s32_sanitizer racecheck s47_b_gemv 'gemv_claim_cuda.*' 90
    s32_sanitizer memcheck s47_b_gemv 'gemv_claim_cuda.*' 90
    stage_pack s47_b
}

# Session 47's fourth call (about 6 minutes with a build of the CLI alone, FOURFOLD_NINJA_ARGS=
# fourfold): gemv_cs with the norm fused loads its first rows' weights before the prologue
# (gemv_plan::cs_fetch_first) against after it (FOURFOLD_GEMV_CS_FETCH_FIRST=0, as before). Why:
# s47_a measured qwen3 with every K = 2048 GEMV column-stationary 349.4 -> 341.3 tokens/s with the
# GEMVs' dependent launch, 333.6 -> 333.8 without: column-stationary loses in the overlap with the
# launch before, and unlike gemv_balanced it reads x and runs the norm's block sum and barrier
# before its first weight load. Predicted: per norm-fused column-stationary GEMV 0.3-0.8 µs;
# llama3-8b fp8 (2 a layer) 392 -> about 397 tokens/s, bf16 250 -> about 253, qwen3 with
# FOURFOLD_GEMV_CS=1 341 -> about 346. The decodes' correctness ledger checks every token.
s47_ops() {
    local tag=$1 t0=$SECONDS
    timeout 60 $BIN run --workload linear_decode --shape 1x5120x2048,1x4096x2048,1x6144x4096,1x28672x4096 \
        --param prologue=rms_norm --dtype bf16 --variants native --device cuda --min-time 0.05 \
        --ledgers op_time,correctness --label s47-ops-$tag --db "$DB" --quiet >"$OUT/s47_ops_$tag.txt" 2>&1
    echo "ops $tag: exit $? after $((SECONDS - t0)) s"
    # shape, median µs, GB/s; then each case's correctness verdict
    grep -E "^linear_decode .* graph " "$OUT/s47_ops_$tag.txt" | awk '{print $4, $5, $(NF-8) " µs", $(NF-2) " GB/s"}'
    grep -E "^linear_decode .*(PASS|FAIL)" "$OUT/s47_ops_$tag.txt" | awk '{print $4, $5, $6}'
}
stage_s47_c() {
    s37_fp8_decode ff_on
    FOURFOLD_GEMV_CS_FETCH_FIRST=0 s37_fp8_decode ff_off
    FOURFOLD_GEMV_CS=1 s36_decode qwen3-30b-a3b cs_ff_on
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_FETCH_FIRST=0 s36_decode qwen3-30b-a3b cs_ff_off
    FOURFOLD_GEMV_CS=1 s47_ops cs_ff_on
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_FETCH_FIRST=0 s47_ops cs_ff_off
    s36_decode llama3-8b ff_on
    FOURFOLD_GEMV_CS_FETCH_FIRST=0 s36_decode llama3-8b ff_off
    stage_pack s47_c
}

# Session 48's first call (about 7 minutes with the build): session 47's fetch-first (s47_c ran on
# an H100 with the CLI alone built: no gpu tests, no sanitizer, no H200 figure). The GEMV and FP8
# GEMV gpu tests with the new same-bits test; memcheck and racecheck over it; on the H200, the
# default against FOURFOLD_GEMV_CS_FETCH_FIRST=0 for llama3-8b fp8 (predicted 392 -> about 395
# tokens/s at ctx 512, H100 +0.6 %) and qwen3 with FOURFOLD_GEMV_CS=1 beside the default (s47_a:
# 341.3 against 349.4; predicted about 346 with fetch-first: still behind, so K = 2048 rows keep
# the static partition unless it reads >= 349); the norm-fused op shapes both ways. Last, the
# trial FOURFOLD_GEMV_CS_TAIL=1 (K = 1152 column-stationary) against the default, stock beside:
# predicted 262144 x 1152 about 174 -> 138 µs (0.83x -> about 1.05x of stock), 6912 x 1152 7.4 ->
# about 6.5 (0.90x -> about 1.03x); the default if both gain.
stage_s48_a() {
    s25_gtests 'gemv_claim_cuda.*:gemv_fp8*:decoder_fp8_cuda.*:decode_native_cuda.*' 200 "$OUT/s48_a_tests.txt"
    s32_sanitizer memcheck s48_a_first 'gemv_claim_cuda.column_stationary_norm*' 60
    s32_sanitizer racecheck s48_a_first 'gemv_claim_cuda.column_stationary_norm*' 90
    s37_fp8_decode ff_on
    FOURFOLD_GEMV_CS_FETCH_FIRST=0 s37_fp8_decode ff_off
    s36_decode qwen3-30b-a3b base
    FOURFOLD_GEMV_CS=1 s36_decode qwen3-30b-a3b cs_ff_on
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_FETCH_FIRST=0 s36_decode qwen3-30b-a3b cs_ff_off
    FOURFOLD_GEMV_CS=1 s47_ops cs_ff_on
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_FETCH_FIRST=0 s47_ops cs_ff_off
    s36_decode llama3-8b ff_on
    s46_linear_run tail_off 1x262144x1152,1x6912x1152 40
    FOURFOLD_GEMV_CS_TAIL=1 s46_linear_run tail_on 1x262144x1152,1x6912x1152 40
    stage_pack s48_a
}

# Session 48's second call (about 8 minutes with the build): the trial FOURFOLD_GEMV_CS_HALF=1, the
# column-stationary kernel in two blocks of 8 warps an SM where a row's slices divide 8 (K = 2048
# and 4096 bf16, K = 4096 e4m3), so a block can start beside one block of the launch before (a
# block of 16 warps at 128 registers fills an SM's register file). And session 48's default
# column-stationary K = 1152 (FOURFOLD_GEMV_CS_TAIL). Predicted (H100 or H200, one call): qwen3
# with FOURFOLD_GEMV_CS=1 and the trial at or above the default (s48_a on an H100: 295.9 against
# 298.8 without the trial); qwen3 with the trial alone (its o GEMV, 2048 x 4096) +0.5 %; llama3-8b
# fp8 +0.5-1 % (every GEMV but the down projection); llama3-8b bf16 +0.5 %.
s48_pair() {
    local what=$1
    s36_decode "$what" base
    FOURFOLD_GEMV_CS_HALF=1 s36_decode "$what" half
}
stage_s48_b() {
    s25_gtests 'gemv_claim_cuda.column_stationary*:gemv_claim_cuda.claimed*' 150 "$OUT/s48_b_tests.txt"
    FOURFOLD_GEMV_CS_HALF=1 s25_gtests 'gemv_fp8*:decoder_fp8_cuda.*:decode_native_cuda.*' 150 \
        "$OUT/s48_b_tests_half.txt"
    s48_pair qwen3-30b-a3b
    FOURFOLD_GEMV_CS=1 s36_decode qwen3-30b-a3b cs
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_HALF=1 s36_decode qwen3-30b-a3b cs_half
    s37_fp8_decode base
    FOURFOLD_GEMV_CS_HALF=1 s37_fp8_decode half
    s48_pair llama3-8b
    s36_decode qwen3-30b-a3b base2
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_HALF=1 s36_decode qwen3-30b-a3b cs_half2
    FOURFOLD_GEMV_CS=1 s47_ops cs
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_HALF=1 s47_ops cs_half
    local mid=1x8192x2048,1x4096x2048,1x6144x2048,1x8192x3072,1x4096x2560,1x262144x1152,1x6912x1152
    s46_linear_run mid_default "$mid" 40
    FOURFOLD_GEMV_CS=1 FOURFOLD_GEMV_CS_HALF=1 s46_linear_run mid_cs_half "$mid" 40
    s32_sanitizer memcheck s48_b 'gemv_claim_cuda.column_stationary_in_two*' 120
    s32_sanitizer racecheck s48_b 'gemv_claim_cuda.column_stationary_in_two*' 120
    stage_pack s48_b
}

# Session 48's third call (about 9 minutes with the build): the defaults after s48_b, column-
# stationary for rows of 4 KB or more without a prologue (FOURFOLD_GEMV_CS_PLAIN) and for K = 1152
# (FOURFOLD_GEMV_CS_TAIL). The GEMV gpu tests; the article's linear_decode jobs. Predicted: T = 1
# over the 96 shapes 1.304x (s47_a) -> about 1.33x, the shapes more than 2 % slower than stock
# 11 -> 2-4 (262208 x 5376 and 128256 x 8192 claimed, 1152 x 6912 split); qwen3-30b-a3b and
# llama3-8b unchanged (their 4-8 KB rows have the norm fused): about 350 and 249 tokens/s.
stage_s48_c() {
    s25_gtests 'gemv_claim_cuda.*:native.gemv*:dependent_launch_cuda.the_one_token_gemv*' 150 \
        "$OUT/s48_c_tests.txt"
    article_linear_decode s48
    s36_decode qwen3-30b-a3b s48c
    s36_decode llama3-8b s48c
    stage_pack s48_c
}

# (Session 50: the trial FOURFOLD_GEMV_CS_L2_RUN=1 was removed after this stage measured it; its
# runs here are now the default's.)
# Session 49's first call (about 6 minutes with the build): the trial FOURFOLD_GEMV_CS_L2_RUN=1
# (gemv_cs asks L2 for its whole run before the wait, up to 24 MB, as gemv_balanced's first two
# steps do for qwen3's qkv), its gpu tests, and the defaults beside it. Hypothesis (session 47: the
# static partition gains 15.8 tokens/s from the dependent launch where column-stationary gains
# 7.5): the difference is what each asks of L2 before its wait. Predicted: qwen3 with
# FOURFOLD_GEMV_CS=1 and the trial within 0.5 % of the default (s48_b: 340.3 against 350.4
# without it); llama3-8b bf16 and fp8 (column-stationary K = 4096) +0-1 %. Then `s49_b` (or
# `build s49_b` on a fresh machine): s48_c's article run at session 48's defaults, on an H200
# issue 13's figures.
# One model's native_fused decodes (s36_decode; "fp8": llama3-8b with fp8_row weights,
# s37_fp8_decode), one a spec: "tag" at the defaults, or "tag:VAR=VALUE[,VAR=VALUE...]" with those
# variables set in a subshell (so they end with it) and echoed beside the figures.
decode_ab() {
    local model=$1 spec tag vars
    shift
    for spec in "$@"; do
        tag=${spec%%:*}
        vars=
        [[ $spec == *:* ]] && vars=${spec#*:}
        (
            # shellcheck disable=SC2086 # a comma-separated list of VAR=VALUE words
            [ -n "$vars" ] && export ${vars//,/ }
            echo "[$tag] ${vars:-defaults}"
            if [ "$model" = fp8 ]; then
                s37_fp8_decode "$tag"
            else
                s36_decode "$model" "$tag"
            fi
        )
    done
}
# The unfused native decode (`--variants native`): its qwen3 qkv and LM head GEMVs have no
# prologue, so session 48's FOURFOLD_GEMV_CS_PLAIN default moved them to column-stationary.
s49_native() {
    stage_decode qwen3-30b-a3b native "" "s49-native-$1" "$OUT/s49_native_$1.txt" 80 "$1"
}
stage_s49_a() {
    s25_gtests 'gemv_claim_cuda.*:native.gemv*:dependent_launch_cuda.the_one_token_gemv*:decode_native_cuda.*' 200 \
        "$OUT/s49_a_tests.txt"
    FOURFOLD_GEMV_CS_L2_RUN=1 s25_gtests 'gemv_claim_cuda.column_stationary*:gemv_fp8*' 120 \
        "$OUT/s49_a_tests_l2run.txt"
    s49_native plain
    FOURFOLD_GEMV_CS_PLAIN=0 s49_native static
    local l2run=FOURFOLD_GEMV_CS_L2_RUN=1
    decode_ab qwen3-30b-a3b base cs:FOURFOLD_GEMV_CS=1 cs_l2run:FOURFOLD_GEMV_CS=1,$l2run l2run:$l2run
    decode_ab llama3-8b base l2run:$l2run
    decode_ab fp8 base l2run:$l2run
    stage_pack s49_a
}
# Session 49, after s49_a and s49_b if the device time holds (about 3 minutes, the build kept):
# nothing asked of L2 before the wait (FOURFOLD_GEMV_CS_L2_RUN=0), alone and with two blocks an SM
# (FOURFOLD_GEMV_CS_HALF=1, which lost alone at ctx 512 in s48_b: qwen3 350.4 -> 346.9, llama3-8b
# 249.2 -> 247.3). Hypothesis: more blocks resident early means more early L2 requests during the
# launch before (decode attention, latency-bound, before the o GEMV), which delay it. Predicted: if
# so, the half blocks without the requests at or above the default; the requests' own worth: the
# default against =0 (no prediction of sign).
stage_s49_c() {
    local none=FOURFOLD_GEMV_CS_L2_RUN=0 half=FOURFOLD_GEMV_CS_HALF=1
    decode_ab qwen3-30b-a3b base l2none:$none half:$half half_l2none:$half,$none
    decode_ab llama3-8b base l2none:$none half_l2none:$half,$none
    # rows of 2-4 KB without a prologue, static (the default) against column-stationary (s48_c on
    # an H100: 151936 x 1024 at 97 % of the copy bandwidth, 3072 x 1024 1.17x and 4096 x 1536
    # 1.04x over stock): whether FOURFOLD_GEMV_CS_PLAIN's 4 KB could go lower
    local short=1x151936x1024,1x3072x1024,1x4096x1536,1x8192x1536,1x4096x1024,1x32768x1024
    s46_linear_run short_default "$short" 40
    FOURFOLD_GEMV_CS=1 s46_linear_run short_cs "$short" 40
    # issue 15's MoE figures, last measured in session 35 (T = 1 30.5 µs warm; target 25)
    local t0=$SECONDS
    timeout 60 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn,block --dtype bf16 \
        --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s49-moe --quiet >"$OUT/s49_moe.txt" 2>&1
    echo "moe_decode: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode .*(graph|PASS|FAIL)" "$OUT/s49_moe.txt" | head -16
    stage_pack s49_c
}
# Session 49 (written without a device): each kernel's cost inside the captured decode step, the
# dependent launches' overlap counted (ncu times each kernel alone: session 47's o GEMV read 8.51
# µs there against 5.66 in the op benchmark). bench/gpu/kernel_timeline.cpp, a CUDA injection
# library over CUPTI's concurrent-kernel records, is built here against the CUPTI that libtorch
# loads; each decode (ctx 512, native_fused, qwen3-30b-a3b then llama3-8b) runs with it, and
# bench/gpu/timeline_table.py makes the table of what each kind of kernel adds to a step. The
# traced decode's tokens/s beside the untraced one (s36_decode base, same call) says what the
# tracing costs; more than 3 % and the table is only indicative. Predicted (qwen3, a layer about
# 57 µs in the graph): the MoE block about 28 µs exposed, decode attention 7-8, the qkv and o
# GEMVs 6-8 each; the LM head about 150 µs a step.
timeline_cupti() {
    local torch_lib lib inc d
    torch_lib=$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
    lib=$(ldd "$torch_lib"/libtorch_cuda.so "$torch_lib"/libtorch_cpu.so 2>/dev/null |
        awk '/libcupti/{print $3; exit}')
    # (else the wheels' copy, then the toolkit's)
    local wheels
    wheels=$(python3 -c 'import nvidia,os;print(" ".join(os.path.join(p,d,"lib") for p in nvidia.__path__ for d in sorted(os.listdir(p))))' 2>/dev/null)
    # shellcheck disable=SC2086 # wheels: a list of folders
    for d in "$(dirname "${lib:-/nonexistent/x}")" $wheels /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
        if [ -e "$d/libcupti.so" ] || ls "$d"/libcupti.so.* >/dev/null 2>&1; then
            lib=$d
            break
        fi
    done
    for d in /usr/local/cuda/include /usr/local/cuda/extras/CUPTI/include "$lib/../include"; do
        [ -f "$d/cupti.h" ] && inc=$d && break
    done
    echo "cupti: include ${inc:-not found}, lib ${lib:-not found}"
    [ -n "$inc" ] && [ -n "$lib" ] || return 1
    local so
    so=$(cd "$lib" && ls libcupti.so libcupti.so.* 2>/dev/null | head -1)
    g++ -std=c++20 -O2 -shared -fPIC -I"$inc" bench/gpu/kernel_timeline.cpp "$lib/$so" \
        -Wl,-rpath,"$lib" -o "$BUILD/libkernel_timeline.so" 2>&1 | head -20
    [ -f "$BUILD/libkernel_timeline.so" ]
}
s49_timeline_decode() { # MODEL [TAG: the files' name, the model's by default]
    local model=$1 tag=${2:-$1} t0=$SECONDS
    CUDA_INJECTION64_PATH=$PWD/$BUILD/libkernel_timeline.so FOURFOLD_TIMELINE=$OUT/tl_$tag \
        timeout 120 $BIN decode --model "$model" --variants native_fused --mode graph --ctx 512 \
        --tokens 32 --device cuda --dtype bf16 --ledgers throughput --db "$DB" \
        --label s49-timeline-$tag --quiet >"$OUT/s49_tl_decode_$tag.txt" 2>&1
    echo "traced decode $tag: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode .*graph|kernel_timeline" "$OUT/s49_tl_decode_$tag.txt" | head -6
    python3 bench/gpu/timeline_table.py --nodes 12 "$OUT"/tl_"$tag".*.tsv \
        >"$OUT/s49_tl_table_$tag.md" 2>&1
    head -40 "$OUT/s49_tl_table_$tag.md"
    (cd "$OUT" && for f in tl_"$tag".*.tsv; do gzip -c "$f" >"s49_$f.gz" && rm -f "$f"; done)
}
stage_s49_timeline() {
    timeline_cupti || { echo "no CUPTI to build against: no timeline"; return 1; }
    s36_decode qwen3-30b-a3b untraced
    s49_timeline_decode qwen3-30b-a3b
    s36_decode llama3-8b untraced
    s49_timeline_decode llama3-8b
    stage_pack s49_timeline
}
# Session 49 (written without a device): two trials of the fused MoE block's routing prefix.
# 1. FOURFOLD_MOE_FLAGGED_LOGITS=1 (moe_plan::flagged_logits): the logits published with a flag
#    word each and polled, no first grid barrier; the same bits.
# 2. FOURFOLD_MOE_TOPK_LOGITS=1 (moe_plan::topk_on_logits): the top-k rounds on the logits, only
#    the k chosen exponentiated; the softmax over 128 experts (a warp max, 4 exps, a warp sum, 4
#    divisions) leaves the routing's path; the weights equal up to rounding.
# Their gpu tests, the MoE and native decode tests with both on, memcheck and racecheck over the
# flagged test, the timed block's phases (barrier, flagged, both), qwen3-30b-a3b's decode four
# ways and the base and flagged again. Predicted (session 35's phases at T = 1: the prologue
# barrier, stop 6 - stop 5, 1.41 µs; the softmax, stop 7 - stop 6, 0.76): flagged stop 6 - stop 5
# about 0.7 µs and the block about -0.6 µs at T = 1 and 8; top-k on logits the routing about -0.4
# µs at T = 1; qwen3 native_fused +0.8-1.0 % flagged, +0.5-0.7 % top-k, +1.3-1.7 % both. About 7
# minutes: a call of its own.
stage_s49_moe() {
    local t0=$SECONDS flagged=FOURFOLD_MOE_FLAGGED_LOGITS=1 topk=FOURFOLD_MOE_TOPK_LOGITS=1
    s25_gtests 'moe_cuda.flagged_logits*:moe_cuda.top_k_on_the_logits*' 150 "$OUT/s49_moe_trial_tests.txt"
    local tests='moe_cuda.*:decode_native_cuda.*:-moe_cuda.*timed*:moe_cuda.one_launch_and_two_kernels_agree*'
    # (the suite once with both on: each alone has its own test above)
    FOURFOLD_MOE_FLAGGED_LOGITS=1 FOURFOLD_MOE_TOPK_LOGITS=1 s25_gtests "$tests" 200 \
        "$OUT/s49_moe_tests_both.txt"
    local tool
    for tool in memcheck racecheck; do
        FOURFOLD_MOE_FLAGGED_LOGITS=1 FOURFOLD_NATIVE_TEST_SIZES=small timeout 120 \
            compute-sanitizer --tool $tool --error-exitcode 9 \
            --kernel-name kns=moe $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='moe_cuda.flagged_logits*' >"$OUT/s49_moe_$tool.txt" 2>&1
        echo "compute-sanitizer $tool (flagged logits): exit $? after $((SECONDS - t0)) s"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Internal|^\[  (PASSED|FAILED) " \
            "$OUT/s49_moe_$tool.txt" | sort | uniq -c | head
    done
    local timed='moe_cuda.the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed'
    s25_gtests "$timed" 90 "$OUT/s49_moe_timed_barrier.txt"
    grep -E "^moe block" "$OUT/s49_moe_timed_barrier.txt" | head -20
    FOURFOLD_MOE_FLAGGED_LOGITS=1 s25_gtests "$timed" 90 "$OUT/s49_moe_timed_flagged.txt"
    grep -E "^moe block" "$OUT/s49_moe_timed_flagged.txt" | head -20
    FOURFOLD_MOE_FLAGGED_LOGITS=1 FOURFOLD_MOE_TOPK_LOGITS=1 s25_gtests "$timed" 90 \
        "$OUT/s49_moe_timed_both.txt"
    grep -E "^moe block" "$OUT/s49_moe_timed_both.txt" | head -20
    decode_ab qwen3-30b-a3b base flagged:$flagged topk:$topk both:$flagged,$topk base2 \
        flagged2:$flagged
    echo "after $((SECONDS - t0)) s"
    stage_pack s49_moe
}
stage_s49_b() {
    article_linear_decode s49
    stage_pack s49_b
}

# Session 50 (about 8-9 minutes with the build on an H200, 4-5 on an H100): the MoE routing's
# new defaults (the flagged logits and the top-k on the logits, s49_moe on an H100: qwen3-30b-a3b
# native_fused 290.8 -> 297.4 tokens/s at ctx 512), their gpu tests and the native decode's, the
# qwen3 decode at the defaults against both off (=0) and again, moe_decode's op figures (issue
# 15's T = 1 target, 25 µs; last on an H200 in session 35, 30.5), llama3-8b bf16 and fp8 at the
# defaults, the qwen3 step's kernel timeline, then, on an H200 only, the article linear_decode run (issue 13's figures at session
# 48's GEMV defaults). Predicted on an H200: qwen3 350.4 -> about 358 (+2.3 %); the MoE block T = 1
# about 1.2 µs less; llama3-8b as session 48 (249-251 bf16, about 388-392 fp8: no MoE); the
# article T = 1 geometric mean about 1.33x.
stage_s50_a() {
    local t0=$SECONDS old=FOURFOLD_MOE_FLAGGED_LOGITS=0,FOURFOLD_MOE_TOPK_LOGITS=0
    s25_gtests 'moe_cuda.flagged_logits*:moe_cuda.top_k_on_the_logits*:decode_native_cuda.*' 150 \
        "$OUT/s50_a_tests.txt"
    decode_ab qwen3-30b-a3b base old:$old base2
    # each kernel kind's exposed µs a step at the defaults (s49_timeline's table)
    if timeline_cupti; then s49_timeline_decode qwen3-30b-a3b; fi
    timeout 60 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn,block --dtype bf16 \
        --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s50-moe --quiet >"$OUT/s50_moe.txt" 2>&1
    echo "moe_decode: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode .*(graph|PASS|FAIL)" "$OUT/s50_moe.txt" | head -16
    decode_ab llama3-8b base
    decode_ab fp8 base
    # column-stationary for plain rows of 3 KB, and of 2 KB with 64 MB of weights (session 50's
    # trial, the default from 4f81eb6; =0 the static partition): on an H100 4096 x 1536 and 8192 x
    # 1536 13-16 % less, 32768 x 1024 and 151936 x 1024 6-8 % less, 3072 x 1024 and 4096 x 1024
    # not taken. (The first session 50 call ran it as a trial against the static default: the
    # files' names are its, "trial" the rule and "default" the static partition.)
    local short=1x151936x1024,1x3072x1024,1x4096x1536,1x8192x1536,1x4096x1024,1x32768x1024
    FOURFOLD_GEMV_CS_PLAIN_SHORT=0 s46_linear_run s50_short_default "$short" 40
    s46_linear_run s50_short_trial "$short" 40
    grep -hE "^linear_decode .*graph" "$OUT"/s46_s50_short_{default,trial}.txt | awk '{print $2, $4, $5, $(NF-7)}'
    # (S50_ARTICLE=0: not run, where the device time left would not hold it)
    if [ "${S50_ARTICLE:-1}" = 0 ]; then
        echo "article linear_decode: not run (S50_ARTICLE=0)"
    elif nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
        article_linear_decode s50
    else
        echo "article linear_decode: not run (issue 13's figures are the H200's)"
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s50_a
}

# Session 51 (about 8-9 minutes with the build on an H200): the down counters (moe_plan::
# down_counters, the default with the flagged logits: no grid barrier before the MoE's down phase,
# each down item waits for its expert's gate/up units to be counted done), their gpu test (the
# barriers' bits across probes and the other plans' launches), the qwen3 decode at the defaults
# against the counters off (=0: session 50's defaults) and both session-50 trials off, again,
# moe_decode's op figures with and without the counters, the qwen3 step's kernel timeline, and
# llama3-8b bf16 and fp8 (no MoE). Predicted on an H200: session 50's defaults about 358 tokens/s
# at ctx 512 (350.4 before them); the counters -0.5 to -1.5 µs a layer (the barrier's arrival and
# release, and the warps' skew into it), about +1 % (+0.4 to +2 %); the MoE block T = 1 the same.
# If the counters' test fails, the rest runs with them off.
stage_s51_a() {
    local t0=$SECONDS old=FOURFOLD_MOE_FLAGGED_LOGITS=0,FOURFOLD_MOE_TOPK_LOGITS=0
    local c0=FOURFOLD_MOE_DOWN_COUNTERS=0
    s25_gtests 'moe_cuda.down_counters*:moe_cuda.flagged_logits*:moe_cuda.top_k_on_the_logits*:decode_native_cuda.*' \
        200 "$OUT/s51_a_tests.txt"
    if ! grep -q "^\[  PASSED  \]" "$OUT/s51_a_tests.txt"; then
        echo "the gpu tests did not pass: the rest with the counters off"
        export FOURFOLD_MOE_DOWN_COUNTERS=0
    fi
    decode_ab qwen3-30b-a3b base c0:$c0 old:$old base2 c02:$c0
    local v
    for v in default c0; do
        (
            [ $v = c0 ] && export FOURFOLD_MOE_DOWN_COUNTERS=0
            timeout 60 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn,block \
                --dtype bf16 --variants stock,native --device cuda --ledgers op_time,correctness \
                --min-time 0.1 --db "$DB" --label s51-moe-$v --quiet >"$OUT/s51_moe_$v.txt" 2>&1
            echo "moe_decode ($v): exit $? after $((SECONDS - t0)) s"
            grep -E "^moe_decode .*(graph|PASS|FAIL)" "$OUT/s51_moe_$v.txt" | head -16
        )
    done
    if timeline_cupti; then s49_timeline_decode qwen3-30b-a3b; fi
    decode_ab llama3-8b base
    decode_ab fp8 base
    echo "after $((SECONDS - t0)) s"
    stage_pack s51_a
}

# Session 51's second call: compute-sanitizer (memcheck, racecheck) over the down counters' test
# and the top-k on the logits (small sizes), the fused block's phases with and without the
# counters (the timed test), then, on an H200 only, the article linear_decode run (issue 13).
stage_s51_b() {
    local t0=$SECONDS tool
    for tool in memcheck racecheck; do
        FOURFOLD_NATIVE_TEST_SIZES=small timeout 150 \
            compute-sanitizer --tool $tool --error-exitcode 9 \
            --kernel-name kns=moe $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='moe_cuda.down_counters*:moe_cuda.top_k_on_the_logits*' \
            >"$OUT/s51_moe_$tool.txt" 2>&1
        echo "compute-sanitizer $tool (counters, top-k): exit $? after $((SECONDS - t0)) s"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Internal|^\[  (PASSED|FAILED) " \
            "$OUT/s51_moe_$tool.txt" | sort | uniq -c | head
    done
    local timed='moe_cuda.the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed'
    s25_gtests "$timed" 90 "$OUT/s51_timed_counters.txt"
    grep -E "^moe block" "$OUT/s51_timed_counters.txt" | head -20
    FOURFOLD_MOE_DOWN_COUNTERS=0 s25_gtests "$timed" 90 "$OUT/s51_timed_c0.txt"
    grep -E "^moe block" "$OUT/s51_timed_c0.txt" | head -20
    if [ "${S51_ARTICLE:-1}" = 0 ]; then
        echo "article linear_decode: not run (S51_ARTICLE=0)"
    elif nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
        article_linear_decode s51
    else
        echo "article linear_decode: not run (issue 13's figures are the H200's)"
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s51_b
}

# Kernel files of another commit, kept under .s52alt/<name>/ (untracked, carried), copied over
# the tree's (the CLI is then rebuilt alone).
s52_swap_in() {
    (cd ".s52alt/$1" && find . -type f) | while read -r f; do cp ".s52alt/$1/$f" "$f"; done
}
# Session 52's first call (about 9 minutes with the build on an H200): racecheck again over the
# counters' test and the top-k on the logits (session 51: 416 warnings, all route_warp's rewrite of
# the top-k weights, now behind a __syncwarp), the gpu tests, the fused block's phases with the
# units counted one at a time (the default), a block's at once (the trial FOURFOLD_MOE_DOWN_COUNT=
# block) and without counters, the qwen3 decode with each, and last session 48's kernels
# (5d27b71: the qwen3 gap, 338.4 today with both session-50 trials off against 350.4 then) swapped
# into the tree with only the CLI rebuilt. Make the snapshot before the call (untracked, carried):
#   for f in $(git diff --name-only 5d27b71 HEAD -- src/fourfold/kernels); do
#       mkdir -p .s52alt/s48/$(dirname $f); git show 5d27b71:$f >.s52alt/s48/$f; done
# Predicted (H200): the block count's gate/up back to about 19.7 µs at T = 1, its block about 29
# (the per-unit counters 31.3, =0 30.4), qwen3 +1.5-2 % over =0 (the per-unit counters +0.6 %).
stage_s52_a() {
    local t0=$SECONDS c0=FOURFOLD_MOE_DOWN_COUNTERS=0 blk=FOURFOLD_MOE_DOWN_COUNT=block
    local old=FOURFOLD_MOE_FLAGGED_LOGITS=0,FOURFOLD_MOE_TOPK_LOGITS=0
    s25_gtests 'moe_cuda.down_counters*:moe_cuda.flagged_logits*:moe_cuda.top_k_on_the_logits*:decode_native_cuda.*' \
        200 "$OUT/s52_a_tests.txt"
    FOURFOLD_NATIVE_TEST_SIZES=small timeout 150 \
        compute-sanitizer --tool racecheck --error-exitcode 9 \
        --kernel-name kns=moe $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='moe_cuda.down_counters*:moe_cuda.top_k_on_the_logits*' \
        >"$OUT/s52_a_racecheck.txt" 2>&1
    echo "compute-sanitizer racecheck (counters, top-k): exit $? after $((SECONDS - t0)) s"
    grep -E "RACECHECK SUMMARY|Internal|^\[  (PASSED|FAILED) " "$OUT/s52_a_racecheck.txt" |
        sort | uniq -c | head
    grep -E "Warning|Error" "$OUT/s52_a_racecheck.txt" | sed 's/+0x[0-9a-f]*//g' | sort | uniq -c | head -5
    local timed='moe_cuda.the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed'
    local v
    for v in unit block c0; do
        (
            [ $v = block ] && export FOURFOLD_MOE_DOWN_COUNT=block
            [ $v = c0 ] && export FOURFOLD_MOE_DOWN_COUNTERS=0
            s25_gtests "$timed" 90 "$OUT/s52_timed_$v.txt"
            grep -E "^moe block" "$OUT/s52_timed_$v.txt" | head -20
        )
    done
    decode_ab qwen3-30b-a3b base block:$blk c0:$c0 old:$old base2 block2:$blk
    if [ -d .s52alt/s48/src ]; then
        s52_swap_in s48
        echo "tree: session 48's kernels (.s52alt/s48)"
        ninja -C $BUILD fourfold >"$OUT/s52_build48.log" 2>&1
        echo "CLI at session 48's kernels: exit $? after $((SECONDS - t0)) s"
        decode_ab qwen3-30b-a3b s48 s48b
    else
        echo "no .s52alt/s48: session 48's kernels not run"
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s52_a
}

# Session 52's second call (about 2 minutes warm): the trial FOURFOLD_GEMV_CLAIM_ROW_CAP=1 (blocks
# of more than 1,024 rows keep the static partition, not the claimed steps) on the claimed
# kernel's two article shapes that session 51 measured under stock (262,208 x 5376 0.894x at 3.83
# TB/s, 151,936 x 5120 0.957x) and its 972-row 128,256 x 8192 (not moved: the control), each
# against the default, twice. Predicted (H200): the two at the static partition's 4.2-4.3 TB/s,
# about 660 and 360 µs (0.99-1.03x), the control as before (471 µs).
stage_s52_b() {
    local t0=$SECONDS shapes=1x262208x5376,1x151936x5120,1x128256x8192
    s46_linear_run s52_claim_default "$shapes" 60
    FOURFOLD_GEMV_CLAIM_ROW_CAP=1 s46_linear_run s52_claim_cap "$shapes" 60
    s46_linear_run s52_claim_default2 "$shapes" 60
    FOURFOLD_GEMV_CLAIM_ROW_CAP=1 s46_linear_run s52_claim_cap2 "$shapes" 60
    grep -hE "^linear_decode .*graph" "$OUT"/s46_s52_claim_*.txt | awk '{print $2, $4, $5, $(NF-7)}'
    echo "after $((SECONDS - t0)) s"
    stage_pack s52_b
}

# Session 52's second call (about 5 minutes with the build): s52_a ran on an H100 and found a
# block's count the best (qwen3-30b-a3b native_fused 309.2 tokens/s at ctx 512, per-unit 304.4,
# no counters 297.7), now the default (FOURFOLD_MOE_DOWN_COUNT=unit: per-unit). Here: the qwen3
# gap (session 48's kernels 298.3 against 289.4 today with both session-50 trials off, same card)
# split between the GEMV rules that came after session 48 (FOURFOLD_GEMV_CS_PLAIN=0: the o
# projection's 8 KB rows back to the static partition; =_SHORT=0), the claim row cap trial
# (s52_b's runs) and moe_decode's op figures at the new default. Predicted: old with
# FOURFOLD_GEMV_CS_PLAIN=0 back to about 298 if the o projection's rule is the gap.
stage_s52_c() {
    local t0=$SECONDS old=FOURFOLD_MOE_FLAGGED_LOGITS=0,FOURFOLD_MOE_TOPK_LOGITS=0
    decode_ab qwen3-30b-a3b base unit:FOURFOLD_MOE_DOWN_COUNT=unit csp0:FOURFOLD_GEMV_CS_PLAIN=0 \
        short0:FOURFOLD_GEMV_CS_PLAIN_SHORT=0 old:$old oldcsp0:$old,FOURFOLD_GEMV_CS_PLAIN=0 base2
    timeout 60 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn,block --dtype bf16 \
        --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s52-moe --quiet >"$OUT/s52_moe.txt" 2>&1
    echo "moe_decode: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode .*(graph|PASS|FAIL)" "$OUT/s52_moe.txt" | head -16
    stage_s52_b
    echo "after $((SECONDS - t0)) s"
    stage_pack s52_c
}

# Session 52's third call (about 6 minutes with the build): s52_c put the qwen3 gap (session 48's
# kernels 298.3 tokens/s, today's with both session-50 trials off 289.2, H100) outside the GEMV
# rules that came after it (FOURFOLD_GEMV_CS_PLAIN=0 289.7). The step's kernel timeline at the
# defaults, with both trials off, and with session 48's kernels swapped in (.s52alt/s48, made as
# for s52_a) says which kernel kind holds the 0.1 ms a step. Predicted: the MoE kernel, about 2
# µs a layer.
s52_timeline() {
    s49_timeline_decode qwen3-30b-a3b
    mv "$OUT/s49_tl_table_qwen3-30b-a3b.md" "$OUT/s52_tl_table_$1.md"
    (cd "$OUT" && for f in s49_tl_qwen3-30b-a3b.*.gz; do mv "$f" "s52_$1_${f#s49_}"; done)
}
stage_s52_d() {
    local t0=$SECONDS
    timeline_cupti || { echo "no CUPTI to build against: no timeline"; return 1; }
    s52_timeline default
    (
        export FOURFOLD_MOE_FLAGGED_LOGITS=0 FOURFOLD_MOE_TOPK_LOGITS=0
        s52_timeline old
    )
    if [ -d .s52alt/s48/src ]; then
        s52_swap_in s48
        ninja -C $BUILD fourfold >"$OUT/s52_build48.log" 2>&1
        echo "CLI at session 48's kernels: exit $? after $((SECONDS - t0)) s"
        s52_timeline s48
        decode_ab qwen3-30b-a3b s48
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s52_d
}

# Session 52's fourth call (about 6 minutes with the build): s52_d's timeline put the qwen3 gap in
# the MoE kernel (both session-50 trials off 40.37 µs exposed a layer, session 48's kernels 38.28,
# H100). The kernels just before the flagged logits' trial (.s52alt/a, 8eff9ee^) and with it
# (.s52alt/b, 8eff9ee), each swapped in with the CLI rebuilt, the qwen3 decode with both trials
# off. Predicted: a about 298 tokens/s at ctx 512 (session 48's), b about 289.
stage_s52_e() {
    local t0=$SECONDS v
    for v in a b; do
        [ -d .s52alt/$v/src ] || continue
        s52_swap_in "$v"
        ninja -C $BUILD fourfold >"$OUT/s52_build_$v.log" 2>&1
        echo "CLI at .s52alt/$v: exit $? after $((SECONDS - t0)) s"
        decode_ab qwen3-30b-a3b "$v:FOURFOLD_MOE_FLAGGED_LOGITS=0,FOURFOLD_MOE_TOPK_LOGITS=0"
    done
    echo "after $((SECONDS - t0)) s"
    stage_pack s52_e
}

# Session 53's first call (about 9 minutes with the build): the trial FOURFOLD_MOE_COMPILED_
# DEFAULTS=1 (moe_plan::compiled_defaults: the one launch's instance with the fused prologue, the
# flagged logits, the top-k on the logits and a block's down count known to the compiler). Session
# 52 (H100) found each trial's code costing the paths that did not take it (both session-50
# trials off: 299.3 tokens/s at the kernels before them, 294.1 with the flagged logits' code,
# 289.2 today; the MoE 2.1 µs a layer more exposed than session 48's). Its gpu test (the barriers'
# bits, eager and graph, with the probes between), the fused block's phases and the qwen3 decode,
# each against the general instance, then on an H200 llama3-8b (no MoE) and the qwen3 step's
# timeline. Predicted: qwen3 +1 to +3 % (H100 309.5 -> 313-319 at ctx 512; H200 about 355-365),
# the block T = 1 about 1 µs less.
stage_s53_a() {
    local t0=$SECONDS comp=FOURFOLD_MOE_COMPILED_DEFAULTS=1
    s25_gtests 'moe_cuda.down_counters*:moe_cuda.flagged_logits*:moe_cuda.top_k_on_the_logits*:decode_native_cuda.*' \
        200 "$OUT/s53_a_tests.txt"
    if ! grep -q "^\[  PASSED  \]" "$OUT/s53_a_tests.txt"; then
        echo "the gpu tests did not pass: the compiled defaults not timed"
        comp=FOURFOLD_MOE_COMPILED_DEFAULTS=0
    fi
    # the counters' test runs the per-unit, block (the default since session 52: never under
    # memcheck) and compiled plans; racecheck last ran on the first two (s52_a)
    local tool
    for tool in memcheck racecheck; do
        FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize $tool 'moe_cuda.down_counters*' moe \
            "$OUT/s53_moe_$tool.txt" 150
    done
    local timed='moe_cuda.the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed'
    local v
    for v in general compiled; do
        (
            [ $v = compiled ] && export "$comp"
            s25_gtests "$timed" 90 "$OUT/s53_timed_$v.txt"
            grep -E "^moe block" "$OUT/s53_timed_$v.txt" | head -20
        )
    done
    decode_ab qwen3-30b-a3b base comp:$comp base2 comp2:$comp
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
        decode_ab llama3-8b base
        decode_ab fp8 base
        if timeline_cupti; then (export "$comp" && s49_timeline_decode qwen3-30b-a3b); fi
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s53_a
}

# Session 53's second call (about 6 minutes warm, on an H200 only: issue 13's figures are the
# H200's): the claim row cap trial on its two shapes and the control (s52_b's runs: on the H100 in
# session 52 the cap lost 3-5 %, where the H200 had run the claimed steps at 0.894x and 0.957x of
# stock), then the article linear_decode run. Predicted (H200): the cap 0.99-1.03x on the two; the
# article T = 1 about 1.35x (no GEMV change since session 51's 1.346x).
# 0 on an H200; else says STAGE is not run there (the issues' figures are the H200's) and 1
only_on_h200() {
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && return 0
    echo "$1: not an H200 (the issues' figures are the H200's): not run"
    return 1
}
stage_s53_b() {
    local t0=$SECONDS
    only_on_h200 s53_b || return 0
    stage_s52_b
    article_linear_decode s53
    echo "after $((SECONDS - t0)) s"
    stage_pack s53_b
}

# compute-sanitizer's TOOL over the gpu tests FILTER, kernels whose names hold KNS, at most LIMIT
# seconds, into LOG: its exit status, the summaries and the first warnings and errors.
s53_sanitize() {
    local tool=$1 filter=$2 kns=$3 log=$4 limit=$5 t0=$SECONDS
    timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 9 --kernel-name kns="$kns" \
        $BUILD/tests/fourfold_gpu_tests --gtest_filter="$filter" >"$log" 2>&1
    echo "compute-sanitizer $tool ($filter): exit $? after $((SECONDS - t0)) s"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Internal|^\[  (PASSED|FAILED) " "$log" | sort | uniq -c | head
    grep -E "Warning|Error" "$log" | grep -v SUMMARY | sed 's/+0x[0-9a-f]*//g' | sort | uniq -c | head -5
}

# Session 53's second call (about 8 minutes with the build): the defaults compiled in are the
# default now (d08ef3c; s53_a, H100: qwen3-30b-a3b 309.4 -> 314.4 / 314.7 tokens/s at ctx 512, the
# fused block 35.89 -> 34.84 µs at T = 1; memcheck over the counters' three plans 0 errors, its
# racecheck ran past 150 s). The MoE and native decode gpu tests at the new default, racecheck
# over the flagged-logits and top-k tests (which take the default plan, now the compiled one),
# the qwen3 decode at the default and with FOURFOLD_MOE_COMPILED_DEFAULTS=0, and decode
# attention's phases on this card (the next target: 9 µs exposed a layer at ctx 512 for 1 MB).
# Predicted: the tests pass, racecheck 0 hazards, qwen3 about 314.5 against 309.5.
stage_s53_c() {
    local t0=$SECONDS
    s25_gtests 'moe_cuda.*:decode_native_cuda.*-moe_cuda.*timed*:moe_cuda.one_launch_and_two_kernels_agree_and_their_times_are_printed' \
        240 "$OUT/s53_c_tests.txt"
    # (the flagged logits' and top-k tests take the default plan: the compiled one)
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize racecheck \
        'moe_cuda.flagged_logits*:moe_cuda.top_k_on_the_logits*' moe "$OUT/s53_c_racecheck.txt" 240
    decode_ab qwen3-30b-a3b base general:FOURFOLD_MOE_COMPILED_DEFAULTS=0
    s25_gtests 'decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' 90 \
        "$OUT/s53_c_attention.txt"
    grep -E "^attention" "$OUT/s53_c_attention.txt" | sed 's/ a launch;.*//' | head -60
    echo "after $((SECONDS - t0)) s"
    stage_pack s53_c
}

# Session 53's third call (about 8 minutes with the build): decode attention's first round of
# cache rows loaded right after the dependency wait, before the query rows are made (the fused
# rope's loads or q's then in flight with them; the owner's row at *pos from the rope's shared
# memory), where they waited for the query's barrier: one L2 round trip off the chain.
# FOURFOLD_ATTENTION_PRELOAD=0 puts the old order back. s53_c (H100): qwen3 ctx 512 warm, wait
# 0.99, + positions 4.07, whole 8.00 µs. Predicted: positions about 3.6, whole about 7.5 µs;
# qwen3-30b-a3b native_fused +0.4-0.7 % (48 launches a step), llama3-8b +0.2-0.4 %.
stage_s53_d() {
    local t0=$SECONDS
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*:rope_kv_cuda.*-decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' \
        200 "$OUT/s53_d_tests.txt"
    local tool
    for tool in memcheck racecheck; do # (the fused rope's test: preload on and off)
        s53_sanitize $tool 'decode_attention_cuda.rope_fused*:decode_attention_cuda.the_fused_merge*' \
            attention "$OUT/s53_d_$tool.txt" 150
    done
    local v
    for v in preload old; do
        (
            [ $v = old ] && export FOURFOLD_ATTENTION_PRELOAD=0
            s25_gtests 'decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' 90 \
                "$OUT/s53_d_attention_$v.txt"
            grep -E "^attention .*(grid path \(|least chunk 64)" "$OUT/s53_d_attention_$v.txt" |
                sed 's/ a launch;.*//' | head -24
        )
    done
    decode_ab qwen3-30b-a3b base old:FOURFOLD_ATTENTION_PRELOAD=0 base2 old2:FOURFOLD_ATTENTION_PRELOAD=0
    decode_ab llama3-8b base old:FOURFOLD_ATTENTION_PRELOAD=0
    echo "after $((SECONDS - t0)) s"
    stage_pack s53_d
}

# Session 53's fourth call (about 6 minutes with the build): why the first round's preload
# (be81b89) took nothing off decode attention's positions phase (s53_d, H100: 4.07 -> 4.00 µs
# warm, whole 8.03 against 7.98 with FOURFOLD_ATTENTION_PRELOAD=0; qwen3 +0.1-0.6 %). Whether
# ptxas sank the preload's loads below the query's barrier (the SASS of attention_kernel<bf16,
# 128>: where the LDGs sit against BAR.SYNC and the wait), and where a launch's warps stall
# (Nsight Compute, the source page's SASS stall samples of one qwen3 ctx 512 decode launch, with
# the fused rope).
stage_s53_e() {
    local t0=$SECONDS obj
    obj=$(find $BUILD -name 'decode_attention.cu.o' | head -1)
    cuobjdump -sass "$obj" >"$OUT/s53_att_sass_all.txt" 2>&1
    awk '/Function : /{p = /attention_kernelI13__nv_bfloat16Li128/} p' "$OUT/s53_att_sass_all.txt" \
        >"$OUT/s53_att_sass.txt"
    echo "sass: $(wc -l <"$OUT/s53_att_sass.txt") lines of attention_kernel<bf16, 128>"
    grep -nE "ACQBULK|BAR\.SYNC|BAR\.RED|LDG|LDS|STS|MEMBAR|ATOM|RED\.|EXIT" "$OUT/s53_att_sass.txt" |
        sed 's/  */ /g' | head -70
    local db=/tmp/s53-ncu-$$.db
    timeout 200 ncu --clock-control none --kernel-name regex:attention_kernel \
        --launch-skip 150 --launch-count 1 --set full --import-source yes -o "$OUT/s53_att" \
        $BIN decode --model qwen3-30b-a3b --variants native_fused --mode graph --ctx 512 \
        --tokens 4 --ledgers throughput --timeout 0.5 --device cuda --dtype bf16 --db "$db" \
        --quiet >"$OUT/s53_ncu.txt" 2>&1
    echo "ncu exit $? after $((SECONDS - t0)) s"
    tail -3 "$OUT/s53_ncu.txt"
    if [ -f "$OUT/s53_att.ncu-rep" ]; then
        ncu -i "$OUT/s53_att.ncu-rep" --page details --csv >"$OUT/s53_att_details.csv" 2>&1
        ncu -i "$OUT/s53_att.ncu-rep" --page source --csv --print-source sass \
            >"$OUT/s53_att_source.csv" 2>&1
        echo "details $(wc -l <"$OUT/s53_att_details.csv") lines, source $(wc -l <"$OUT/s53_att_source.csv") lines"
        grep -E "Duration|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Block Size|Grid Size" \
            "$OUT/s53_att_details.csv" | cut -c1-200 | head -12
    fi
    rm -f "$db"
    echo "after $((SECONDS - t0)) s"
    stage_pack s53_e
}

# Session 53's last call (the session's last ~4.5 minutes of device time, the gpu tests and the
# CLI built alone: FOURFOLD_NINJA_ARGS="fourfold_gpu_tests fourfold"): the trial
# FOURFOLD_ATTENTION_VECTOR_LOADS=1 (the grid path's cache rows in 4-, 8- or 16-byte loads; s53_e's
# SASS: 32 two-byte loads a round a thread at bf16 head_dim 128). Its bits against the scalar
# loads, the timed phases each way, the fused rope's test with it, then the qwen3 decode.
# Predicted: positions phase 4.0 -> 3.6-3.8 µs warm (qwen3 ctx 512), qwen3 +0.2-0.5 %.
stage_s53_f() {
    local t0=$SECONDS v
    (
        export FOURFOLD_ATTENTION_VECTOR_LOADS=1
        s25_gtests 'decode_attention_cuda.vector_loads*:decode_attention_cuda.rope_fused*' 60 \
            "$OUT/s53_f_tests.txt"
    )
    for v in vector scalar; do
        (
            [ $v = vector ] && export FOURFOLD_ATTENTION_VECTOR_LOADS=1
            s25_gtests 'decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' 60 \
                "$OUT/s53_f_attention_$v.txt"
            grep -E "^attention .*grid path \((stopped after phase [12]|whole)" \
                "$OUT/s53_f_attention_$v.txt" | sed 's/ a launch;.*//' | head -12
        )
    done
    decode_ab qwen3-30b-a3b base vec:FOURFOLD_ATTENTION_VECTOR_LOADS=1
    echo "after $((SECONDS - t0)) s"
    stage_pack s53_f
}

# Session 54's first call (about 8 minutes with the build): the trial FOURFOLD_ATTENTION_VECTOR_
# LOADS=1 again (s53_f, H100: the whole launch -0.04 to -0.35 µs warm, qwen3 +0.2 / +0.1 %, one
# pair; its bits test threw on a 20-position cache, a test bug fixed in efb3e18). Its bits test
# and the fused rope's with the trial on, memcheck over the first, the timed phases each way, and
# the decode A/B in two pairs on qwen3 and one on llama3-8b; on an H200 also llama3-8b fp8 and
# the qwen3 step's timeline at the defaults (the compiled MoE defaults and the attention preload:
# first H200 figures). Predicted: the tests pass, qwen3 +0.2-0.4 %, llama3-8b +0.2-0.5 % (32
# launches of 7.4 µs a step, -0.14 to -0.35 µs each); H200 qwen3 about 355 at ctx 512 (349.2 in
# session 51, +1.6 % from the compiled defaults).
stage_s54_a() {
    local t0=$SECONDS vec=FOURFOLD_ATTENTION_VECTOR_LOADS=1
    (
        export "$vec"
        # (the block-heads trial's own test is s54_b's)
        s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*-decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed:decode_attention_cuda.four_query_heads*' \
            200 "$OUT/s54_a_tests.txt"
    )
    if ! grep -q "^\[  PASSED  \] " "$OUT/s54_a_tests.txt" || grep -q "FAILED" "$OUT/s54_a_tests.txt"; then
        echo "the gpu tests did not pass with the vector loads: not timed"
        vec=FOURFOLD_ATTENTION_VECTOR_LOADS=0
    fi
    s53_sanitize memcheck 'decode_attention_cuda.vector_loads*' attention "$OUT/s54_a_memcheck.txt" 120
    local v
    for v in vector scalar; do
        (
            [ $v = vector ] && export "$vec"
            s25_gtests 'decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' 60 \
                "$OUT/s54_a_attention_$v.txt"
            grep -E "^attention .*grid path \((stopped after phase [12]|whole)" \
                "$OUT/s54_a_attention_$v.txt" | sed 's/ a launch;.*//' | head -12
        )
    done
    decode_ab qwen3-30b-a3b base vec:$vec base2 vec2:$vec
    decode_ab llama3-8b base vec:$vec
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
        decode_ab fp8 base vec:$vec
        if timeline_cupti; then s49_timeline_decode qwen3-30b-a3b; fi
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s54_a
}

# Session 54's second call (about 8 minutes with the build): the trial FOURFOLD_ATTENTION_BLOCK_
# HEADS=4 (written in session 53 without a device: a kv head's query heads in blocks of 4, 4 warps
# a block, a round 8 positions x 4 heads a warp, each half's splits merged apart; llama3-8b's
# groups of 4 no longer leave half of every round's 32 pairs empty, qwen3's 4 kv heads fill 136
# blocks where 68 ran). Its gpu test, the whole attention suite and the native decode with the
# trial on, memcheck and racecheck over its test, the timed phases each way, and the decode A/B.
# Predicted (H100, warm, ctx 512): qwen3 attention 8.0 -> about 6.8 µs (the block merge over 4
# parts, the last block's partials 35 KB where 70 were), llama3-8b 7.3 -> about 6.5; qwen3
# native_fused +1.0-1.5 %, llama3-8b +0.5-1 %.
stage_s54_b() {
    local t0=$SECONDS four=FOURFOLD_ATTENTION_BLOCK_HEADS=4
    s25_gtests 'decode_attention_cuda.four_query_heads*' 120 "$OUT/s54_b_test.txt"
    (
        export "$four"
        s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*-decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' \
            200 "$OUT/s54_b_tests.txt"
    )
    if ! grep -q "^\[  PASSED  \] " "$OUT/s54_b_test.txt" || grep -q "FAILED" "$OUT/s54_b_test.txt" "$OUT/s54_b_tests.txt"; then
        echo "the gpu tests did not pass with 4 heads a block: not timed"
        stage_pack s54_b
        return 0
    fi
    local tool
    for tool in memcheck racecheck; do
        s53_sanitize $tool 'decode_attention_cuda.four_query_heads*' attention "$OUT/s54_b_$tool.txt" 150
    done
    local v
    for v in four eight; do
        (
            [ $v = four ] && export "$four"
            s25_gtests 'decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' 60 \
                "$OUT/s54_b_attention_$v.txt"
            grep -E "^attention .*grid path \(" "$OUT/s54_b_attention_$v.txt" | sed 's/ a launch;.*//' | head -24
        )
    done
    decode_ab qwen3-30b-a3b base four:$four base2 four2:$four
    decode_ab llama3-8b base four:$four
    echo "after $((SECONDS - t0)) s"
    stage_pack s54_b
}

# Session 54's third call, not run (no machine came; about 6 minutes with the build): the two
# attention trials as defaults (`vector_loads` where the caches are aligned, not yet with 4 heads a
# block; `block_heads` 4 where a kv head's group has more than 4 heads and the splits stay: qwen3
# at ctx 512, not 2048). The attention and native decode suites at the defaults, the vector
# instance of 4 heads a block (FOURFOLD_ATTENTION_VECTOR_LOADS=1) under its test, the native decode
# and memcheck, the timed phases, and the decode A/B: the defaults, both off (8 a block, scalar),
# and vector loads with 4 a block. Predicted (H100): qwen3 ctx 512 +1.0 % over both off (s54_b),
# with the vector 4-a-block instance +1.3 %; ctx 2048 +0.3 % (s54_a); llama3-8b 0 to +0.2 %; on an
# H200 also llama3-8b fp8.
stage_s54_c() { s54_defaults s54_c full; }

# s54_c cut to the device time left after refused starts (about 4 minutes with the build of the
# gpu tests and the CLI alone): the suites at the new defaults, memcheck, the phases, one qwen3
# pair and one llama3-8b pair against both off.
stage_s54_d() { s54_defaults s54_d; }
# s54_d cut again (about 3 minutes with the build of the gpu tests and the CLI): no llama3-8b pair
stage_s54_e() { s54_defaults s54_e short; }
# s54_c, s54_d and s54_e: LABEL, then `full` for s54_c's second qwen3 pair and the H200's fp8
# pair, or `short` for no llama3-8b pair
s54_defaults() {
    local label=$1 full=${2:-} t0=$SECONDS
    local old=FOURFOLD_ATTENTION_BLOCK_HEADS=8,FOURFOLD_ATTENTION_VECTOR_LOADS=0
    local both=FOURFOLD_ATTENTION_VECTOR_LOADS=1 # vector loads with 4 heads a block too
    s25_gtests 'decode_attention_cuda.*:decode_native_cuda.*-decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' \
        200 "$OUT/${label}_tests.txt"
    # the vector instance of 4 heads a block (not yet run): its test, memcheck, the native decode
    (
        export "$both"
        s25_gtests 'decode_attention_cuda.four_query_heads*:decode_native_cuda.*' 120 \
            "$OUT/${label}_tests_both.txt"
    )
    if ! grep -q "^\[  PASSED  \] " "$OUT/${label}_tests.txt" || grep -q "FAILED" "$OUT/${label}_tests.txt"; then
        echo "the gpu tests did not pass at the new defaults: not timed"
        stage_pack "$label"
        return 0
    fi
    s53_sanitize memcheck 'decode_attention_cuda.four_query_heads*:decode_attention_cuda.vector_loads*' \
        attention "$OUT/${label}_memcheck.txt" 90
    FOURFOLD_ATTENTION_VECTOR_LOADS=1 s53_sanitize memcheck 'decode_attention_cuda.four_query_heads*' \
        attention "$OUT/${label}_memcheck_both.txt" 90
    grep -q "FAILED" "$OUT/${label}_tests_both.txt" && both=FOURFOLD_ATTENTION_VECTOR_LOADS=0
    s25_gtests 'decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed' 60 \
        "$OUT/${label}_attention.txt"
    grep -E "^attention .*grid path \((stopped after phase [12]|whole)" "$OUT/${label}_attention.txt" |
        sed 's/ a launch;.*//' | head -12
    if [ "$full" = full ]; then
        decode_ab qwen3-30b-a3b base old:$old both:$both base2 old2:$old both2:$both
    else
        decode_ab qwen3-30b-a3b base old:$old both:$both
    fi
    [ "$full" = short ] || decode_ab llama3-8b base old:$old
    if [ "$full" = full ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
        decode_ab fp8 base old:$old
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack "$label"
}

# Session 55's first pad call (about 5 minutes with the build; s55_b right after it): the register path's flat split
# (pad_flat, the default: each warp an even share of the flat output's units, 8 a lane in flight
# for units of 8 bytes or less) against the chunks of 8 rows before it (FOURFOLD_PAD_FLAT=0),
# against 4 units a lane (FOURFOLD_PAD_UNITS_A_LANE=4), and the fp32 pads on it against the staged
# path (FOURFOLD_PAD_STAGED=0). The pad gpu tests each way and the article's 8 pad cases each way
# (two pairs of default and chunks). Predicted (H100): 96x5x130x130 bf16 16.1 -> about 13.5 µs (864 of 5280 warps no
# longer take a third chunk of three rounds alone), the small bf16 pads 0.5-1.5 µs less; fp32 on
# the flat path within 5 % of staged.
# Nsight Compute (the clocks left alone) on the native bf16 pad: OUT file, launches, SHAPE(s), then
# the sections; the lines that matter printed
s55_ncu_pad() {
    local out=$1 launches=$2 shape=$3 sections=() section
    shift 3
    for section in "$@"; do sections+=(--section "$section"); done
    timeout 90 ncu --clock-control none --kernel-name regex:"pad" --launch-count "$launches" \
        "${sections[@]}" $BIN run --workload pad --shape "$shape" --dtype bf16 --variants native \
        --ledgers correctness --device cuda --db /tmp/ncu-s55.db --quiet >"$out" 2>&1
    echo "ncu ($shape): exit $?"
    grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Issued Warp|No Eligible|Warp Cycles Per Issued|Stall|Executed Instructions  " \
        "$out" | head -24
}
# The pad's gpu tests (LABEL, FILTER) into $OUT/LABEL_tests.txt: false, with the logs packed, where
# any failed (the stage is then not timed)
s55_pad_tests() {
    s25_gtests "$2" 150 "$OUT/$1_tests.txt"
    if ! grep -q "^\[  PASSED  \] " "$OUT/$1_tests.txt" || grep -q "FAILED" "$OUT/$1_tests.txt"; then
        echo "the pad gpu tests did not pass: not timed"
        stage_pack "$1"
        return 1
    fi
}
stage_s55_a() {
    local t0=$SECONDS
    s55_pad_tests s55_a 'native.pad*:dependent_launch_cuda.the_pad*' || return 0
    local v
    for v in FOURFOLD_PAD_STAGED=0 FOURFOLD_PAD_UNITS_A_LANE=4 FOURFOLD_PAD_FLAT=0; do
        env "$v" timeout 150 $BUILD/tests/fourfold_gpu_tests --gtest_filter='native.pad*' \
            >"$OUT/s55_a_tests_$v.txt" 2>&1
        echo "pad gpu tests with $v: exit $?"
        grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" "$OUT/s55_a_tests_$v.txt" | head -4
    done
    s45_pad_run s55-flat
    s45_pad_run s55-chunks FOURFOLD_PAD_FLAT=0
    s45_pad_run s55-flat4 FOURFOLD_PAD_UNITS_A_LANE=4
    s45_pad_run s55-regs FOURFOLD_PAD_STAGED=0
    s45_pad_run s55-flat2
    s45_pad_run s55-chunks2 FOURFOLD_PAD_FLAT=0
    python3 bench/gpu/ab_table.py "$OUT/s55-chunks.json" "$OUT/s55-flat.json" chunks flat
    python3 bench/gpu/ab_table.py "$OUT/s55-chunks2.json" "$OUT/s55-flat2.json" chunks2 flat2
    python3 bench/gpu/ab_table.py "$OUT/s55-flat4.json" "$OUT/s55-flat.json" four eight
    python3 bench/gpu/ab_table.py "$OUT/s55-flat.json" "$OUT/s55-regs.json" staged registers
    echo "after $((SECONDS - t0)) s"
    stage_pack s55_a
}

# s55_a's second half, on the same warm machine (about 3 minutes): memcheck over the pad tests
# (the flat path; fp32 on it too), Nsight Compute on the large bf16 pad flat and in chunks.
stage_s55_b() {
    local t0=$SECONDS
    export FOURFOLD_NATIVE_TEST_SIZES=small
    s53_sanitize memcheck 'native.pad*' pad "$OUT/s55_b_memcheck.txt" 100
    FOURFOLD_PAD_STAGED=0 s53_sanitize memcheck 'native.pad_matches*' pad "$OUT/s55_b_memcheck_fp32.txt" 80
    unset FOURFOLD_NATIVE_TEST_SIZES
    local w
    for w in flat chunks; do
        (
            [ $w = chunks ] && export FOURFOLD_PAD_FLAT=0
            s55_ncu_pad "$OUT/s55_b_ncu_$w.txt" 3 1x96x5x130x130 SpeedOfLight MemoryWorkloadAnalysis \
                Occupancy LaunchStats WarpStateStats
        )
    done
    echo "after $((SECONDS - t0)) s"
    stage_pack s55_b
}

# Session 55's second pad call (about 7 minutes with the build): s55_a's figures as the rule (the
# flat split with 8 units a lane only where the wave takes the pad in one round of 8, else 4) under
# the pad gpu tests; the SASS of the flat kernel's 2-byte instances (are a round's loads all
# issued before its first store?); Nsight Compute's warp states on 128x3x64x64 bf16 at 4 and 8
# units a lane (8 took 7.59 µs against 6.49 in two rounds against three); the article's 8 pad
# cases at the rule (twice), in chunks, and the fp32 pads on the register path at the rule and at
# 8 a lane (FOURFOLD_PAD_STAGED=0: s55_a had them 4-20 % ahead of staged on the three small fp32
# pads, 7 % behind on the large). Predicted (H100): bf16 at the rule 6.49 / 8.21 / 4.93 / 15.58
# µs (s55_a's best flat figure each), 1.12x over the chunks.
stage_s55_c() {
    local t0=$SECONDS
    s55_pad_tests s55_c 'native.pad*:dependent_launch_cuda.the_pad*' || return 0
    local obj
    obj=$(find "$BUILD" -name 'pad.cu.o' | head -1)
    cuobjdump -sass "$obj" >"$OUT/s55_c_pad.sass" 2>&1
    python3 - "$OUT/s55_c_pad.sass" <<'PY'
import re, sys
name, ops = None, []
def show():
    if name and "pad_flat" in name and "bfloat16" in name:
        seq, last, n = [], None, 0
        for o in ops:
            if o == last: n += 1
            else:
                if last: seq.append(f"{last}x{n}")
                last, n = o, 1
        if last: seq.append(f"{last}x{n}")
        short = re.sub(r".*pad_flat", "pad_flat", name)[:60]
        print(short, len(ops), "memory ops in order:", " ".join(seq)[:400])
for line in open(sys.argv[1]):
    m = re.match(r"\s*Function : (\S+)", line)
    if m:
        show(); name, ops = m.group(1), []; continue
    m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
    if m:
        op = m.group(2).split(".")[0]
        if op in ("LDG", "STG", "BRA", "EXIT", "CCTL"):
            ops.append(op)
show()
PY
    local b
    for b in 4 8; do
        FOURFOLD_PAD_UNITS_A_LANE=$b s55_ncu_pad "$OUT/s55_c_ncu_$b.txt" 2 1x128x3x64x64 SpeedOfLight \
            Occupancy WarpStateStats SchedulerStats InstructionStats
    done
    s45_pad_run s55-rule
    s45_pad_run s55-rule-chunks FOURFOLD_PAD_FLAT=0
    s45_pad_run s55-rule-regs FOURFOLD_PAD_STAGED=0
    s45_pad_run s55-rule-regs8 FOURFOLD_PAD_STAGED=0 FOURFOLD_PAD_UNITS_A_LANE=8
    s45_pad_run s55-rule2
    python3 bench/gpu/ab_table.py "$OUT/s55-rule-chunks.json" "$OUT/s55-rule.json" chunks rule
    python3 bench/gpu/ab_table.py "$OUT/s55-rule-chunks.json" "$OUT/s55-rule2.json" chunks rule2
    python3 bench/gpu/ab_table.py "$OUT/s55-rule.json" "$OUT/s55-rule-regs.json" rule registers
    python3 bench/gpu/ab_table.py "$OUT/s55-rule.json" "$OUT/s55-rule-regs8.json" rule registers8
    echo "after $((SECONDS - t0)) s"
    stage_pack s55_c
}

# Session 55's third pad call (about 7 minutes with the build): the flat path with fewer
# instructions (s55_c's ncu: 128x3x64x64 bf16 issue-bound, 0.67 warps issued a scheduler, DRAM 9 %
# busy, 4.7 M instructions, about half of them each warp's start: the prefetch's division a line
# and three divisions; the loop's rows stepped by a 64-bit multiply a unit): the prefetch as one
# run of lines, the row's input offset stepped by an add. And the fp32 pads on the register path
# up to 4 rounds of loads a warp (staged from 5). The pad and VAE-pad gpu tests at the defaults and
# staged (FOURFOLD_PAD_STAGED=1), memcheck, the instructions of 128x3x64x64 bf16, the article's pad
# cases at the defaults, in chunks and staged. Predicted (H100): 128x3x64x64 bf16 4.7 -> about
# 3.5 M instructions, 6.49 -> about 5.6 µs; 96x5x130x130 bf16 15.5 -> about 13.5; fp32
# 128x3x64x64 / 192x3x64x64 / 384x3x32x32 about 6.5 / 9.2 / 5.3 (staged 8.8 / 10.0 / 5.8).
stage_s55_d() { s55_lean s55_d full; }
# (Ran on c2a3734: the pad and VAE-pad tests passed, the dependent-launch pad test failed on its
# expectation that fp32 pads stage, fixed in adb3d91; stopped there. Run s55_d next.)
# s55_d cut to the device time left after refused starts (about 5.5 minutes with the build): the
# gpu tests at the defaults, memcheck, the article's pads at the defaults and in chunks, then the
# instructions if the time allows
stage_s55_e() { s55_lean s55_e; }
# Session 56's first call (about 7 minutes with the build): s55_d on the flat path made leaner
# still (build of this line's commit): the per-launch steps made on the host (no integer division
# a warp), one unsigned compare for an input row (the plane's validity folded into its limit),
# the input row as a pointer stepped by an add, and the share's full rounds apart from its last
# (no end check a unit). Predicted (H100): 128x3x64x64 bf16 4.71 -> about 3.0 M instructions,
# 6.49 -> about 5.3 µs; 96x5x130x130 bf16 15.52 -> about 13.0; 192x3x64x64 8.21 -> 7.3;
# 384x3x32x32 4.93 -> 4.4; fp32 128x3x64x64 / 192x3x64x64 / 384x3x32x32 about 6.3 / 9.0 / 5.2.
stage_s56_a() { s55_lean s56_a full; }
# Session 56's second call (about 5 minutes with the build): which of the flat path's changes lost.
# s56_a (760e68c) ran 96x5x130x130 bf16 in 17.67 µs and 384x3x32x32 in 5.94, where s55_c's flat
# path (86de552) ran 15.52 and 4.93, though 128x3x64x64 took 4.71 -> 3.86 M instructions; ncu:
# 96x5x130x130 issued 0.44 a scheduler, 56 % of cycles no warp eligible: latency, not issue. The
# article pads for this build, then s55_c's pad.cu and pad_plan.cpp (86de552) and session 55's
# lean path (7efea1e), each rebuilt in place from build_variants/ (carried; /build*/ is ignored),
# each with the SASS of pad_flat<bf16, 2, contiguous, 4> and ncu's warp states of two pads.
# Predicted: s55c 6.5 / 8.2 / 4.9 / 15.5 µs again (bf16); lean between s55c and lean2.
s56_variant() { # LABEL, then the build_variants/ folder to build from (none: this build)
    local label=$1 dir=${2:-} o
    if [ -n "$dir" ]; then
        # the tree's files kept aside, put back below and touched: ninja goes by timestamps, so the
        # variant's object outlived it into the next call on the same machine (s57_b's pad table
        # was s55_c's kernel again)
        mkdir -p /tmp/s56_tree
        [ -f /tmp/s56_tree/pad.cu ] ||
            cp src/fourfold/kernels/pad.cu src/fourfold/kernels/pad_plan.cpp /tmp/s56_tree/
        cp "build_variants/$dir/pad.cu" "build_variants/$dir/pad_plan.cpp" src/fourfold/kernels/
        FOURFOLD_NINJA_ARGS=fourfold stage_build || { s56_restore; return 1; }
    fi
    s45_pad_run "s56-$label"
    o=$(find "$BUILD" -name 'pad.cu.o' | head -1)
    cuobjdump -sass "$o" 2>/dev/null | awk '/Function : /{p = /pad_flatI13__nv_bfloat16Li2ELb1ELi4/} p' \
        >"$OUT/s56_sass_$label.txt"
    echo "sass ($label): $(wc -l <"$OUT/s56_sass_$label.txt") lines"
    FOURFOLD_PAD_UNITS_A_LANE=4 s55_ncu_pad "$OUT/s56_ncu_$label.txt" 2 1x128x3x64x64,1x96x5x130x130 \
        SpeedOfLight SchedulerStats InstructionStats WarpStateStats
    [ -z "$dir" ] || s56_restore
}
# the tree's pad files back in place (newer than any object built from a variant)
s56_restore() {
    [ -f /tmp/s56_tree/pad.cu ] || return 0
    cp /tmp/s56_tree/pad.cu /tmp/s56_tree/pad_plan.cpp src/fourfold/kernels/
    touch src/fourfold/kernels/pad.cu src/fourfold/kernels/pad_plan.cpp
}
stage_s56_b() {
    local t0=$SECONDS
    s56_variant lean2
    s56_variant s55c 86de552 || return 0
    python3 bench/gpu/ab_table.py "$OUT/s56-s55c.json" "$OUT/s56-lean2.json" s55c lean2
    s56_variant lean 7efea1e || return 0
    python3 bench/gpu/ab_table.py "$OUT/s56-s55c.json" "$OUT/s56-lean.json" s55c lean
    (cd "$OUT" && tar czf s56_b_runs.tgz s56-*.json s56-*.txt && rm -f s56-*.json s56-*.txt)
    stage_pack s56_b
    echo "after $((SECONDS - t0)) s"
}
# Session 56's third call (about 5 minutes with the build): s56_b's SASS showed why 760e68c lost
# on 96x5x130x130 and 384x3x32x32: each unit's two 2-byte loads were packed into its store word
# right away, before the branch of the next unit's step, so the pack waited for them (control
# code: scoreboard wait) and a round's units went one round trip each (ncu: 51 % of stall cycles
# on the scoreboard). The elements now stay apart until the stores (as s55_c), 2-byte elements in
# 16-byte units 2 a lane and in 8-byte units 4 (more spilled). Tests, memcheck, the article pads at
# the defaults and in chunks, ncu's instructions. Predicted (H100, bf16): 128x3x64x64 about 5.8
# µs, 192x3x64x64 7.3, 384x3x32x32 4.6, 96x5x130x130 14.0; 3.9 M instructions for 128x3x64x64.
stage_s56_c() {
    s55_lean s56_c
    local o
    o=$(find "$BUILD" -name 'pad.cu.o' | head -1)
    cuobjdump -sass "$o" 2>/dev/null | awk '/Function : /{p = /pad_flatI13__nv_bfloat16Li2ELb1ELi4/} p' \
        | grep -E "LDG|STG|PRMT|BRA" | head -40
}
# s56_c cut to the device time left after refused starts (about 4 minutes with the build): the
# pad tests, the article pads at the defaults and in chunks, memcheck, the rounds check on the
# pad's SASS, ncu's instructions, then s55_c's flat path rebuilt in place as the same-call
# baseline (with its SASS and ncu, s56_variant).
# Not run in session 56 (no device time left); on cfc45f9 it also times the split made on the host
# (no 64-bit division a warp). Predicted (H100, bf16): 128x3x64x64 about 5.6 µs and 3.0 M
# instructions (lean2 3.86 M), 192x3x64x64 7.2, 384x3x32x32 4.5, 96x5x130x130 13.8 and 5.6 M
# (lean2 6.50 M); fp32 as lean2 or up to 0.3 µs less; the rounds check clean.
stage_s56_d() {
    local t0=$SECONDS
    s55_pad_tests s56_d 'native.pad*:dependent_launch_cuda.the_pad*' || return 0
    s45_pad_run s56-d
    s45_pad_run s56-d-chunks FOURFOLD_PAD_FLAT=0
    python3 bench/gpu/ab_table.py "$OUT/s56-d-chunks.json" "$OUT/s56-d.json" chunks fix
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'native.pad*' pad "$OUT/s56_d_memcheck.txt" 60
    cuobjdump -sass "$(find "$BUILD" -name 'pad.cu.o' | head -1)" >"$OUT/s56_d_pad_sass.txt" 2>&1
    python3 scripts/check_sass_rounds.py --sass "$OUT/s56_d_pad_sass.txt" | tail -4
    FOURFOLD_PAD_UNITS_A_LANE=4 s55_ncu_pad "$OUT/s56_d_ncu.txt" 2 1x128x3x64x64,1x96x5x130x130 \
        SpeedOfLight SchedulerStats InstructionStats
    # the baseline in the same call: s55_c's flat path rebuilt in place (carry build_variants,
    # made on the CPU machine by: for f in pad.cu pad_plan.cpp; do git show
    # 86de552:src/fourfold/kernels/$f > build_variants/86de552/$f; done)
    if [ -f build_variants/86de552/pad.cu ]; then
        s56_variant s55c 86de552 && python3 bench/gpu/ab_table.py "$OUT/s56-s55c.json" \
            "$OUT/s56-d.json" s55c fix
    else
        echo "s56_d: no build_variants/86de552 carried: no same-call baseline"
    fi
    (cd "$OUT" && tar czf s56_d_runs.tgz s56-*.json s56-*.txt && rm -f s56-*.json s56-*.txt)
    stage_pack s56_d
    echo "after $((SECONDS - t0)) s"
}
# s55_d and s55_e: LABEL, then `full` for the staged passes (the tests and the article run)
s55_lean() {
    local label=$1 full=${2:-} t0=$SECONDS
    [ "$full" = full ] && FOURFOLD_PAD_STAGED=1 s25_gtests 'native.pad*' 100 "$OUT/${label}_tests_staged.txt"
    s55_pad_tests "$label" 'native.pad*:dependent_launch_cuda.the_pad*:vae_cuda.the_native_pad*' || return 0
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'native.pad*' pad "$OUT/${label}_memcheck.txt" 90
    s45_pad_run s55-lean
    s45_pad_run s55-lean-chunks FOURFOLD_PAD_FLAT=0
    python3 bench/gpu/ab_table.py "$OUT/s55-lean-chunks.json" "$OUT/s55-lean.json" chunks lean
    if [ "$full" = full ]; then
        s45_pad_run s55-lean-staged FOURFOLD_PAD_STAGED=1
        python3 bench/gpu/ab_table.py "$OUT/s55-lean-staged.json" "$OUT/s55-lean.json" staged lean
    fi
    stage_pack "$label"
    FOURFOLD_PAD_UNITS_A_LANE=4 s55_ncu_pad "$OUT/${label}_ncu.txt" 2 1x128x3x64x64,1x96x5x130x130 \
        SpeedOfLight SchedulerStats InstructionStats
    echo "after $((SECONDS - t0)) s"
}

# Session 57's second call, on an H200 only (about 7 minutes warm after s56_d; the build redone
# for the tree's pad kernel, which s56_d's baseline replaced in place): the article pads at the
# defaults (issue 13's 96x5x130x130 bf16 target, 10.5 µs; session 51: 13.67), the three decodes
# of issue 15 (native_fused, ctx 512 and 2048: qwen3-30b-a3b, llama3-8b bf16 and fp8_row; session
# 51: 349.2, 248.8 / 238.8, 386.9 tokens/s), then the article linear_decode run (issue 13's GEMV
# targets). Predicted: the decodes as session 51 within 1 % (no decode kernel changed since), the
# 96x5x130x130 pad about s56_d's H100 figure x 2,995 / 4,193 plus 0.5 µs of latency.
stage_s57_b() {
    local t0=$SECONDS
    if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
        echo "s57_b: not an H200 (issues 13 and 15 set their targets on the H200): not run"
        return 0
    fi
    s45_pad_run s57-pad
    s45_pad_run s57-pad-chunks FOURFOLD_PAD_FLAT=0
    python3 bench/gpu/ab_table.py "$OUT/s57-pad-chunks.json" "$OUT/s57-pad.json" chunks flat
    decode_ab qwen3-30b-a3b base
    decode_ab llama3-8b base
    decode_ab fp8 base
    echo "after $((SECONDS - t0)) s"
    [ $((SECONDS - t0)) -lt 260 ] && article_linear_decode s57
    (cd "$OUT" && tar czf s57_b_runs.tgz s57-*.json s57-*.txt && rm -f s57-*.json s57-*.txt)
    stage_pack s57_b
    echo "after $((SECONDS - t0)) s"
}

# Session 57's third call (warm, about 2 minutes): moe_decode's op figures on the H200 (issue 15's
# ffn T = 1 target, 25 µs; session 51: 31.5) and the qwen3 step's in-graph kernel timeline.
stage_s57_c() {
    local t0=$SECONDS
    timeout 90 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn,block \
        --dtype bf16 --variants stock,native --device cuda --ledgers op_time,correctness \
        --min-time 0.1 --db "$DB" --label s57-moe --quiet >"$OUT/s57_moe.txt" 2>&1
    echo "moe_decode: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode .*(graph|PASS|FAIL)" "$OUT/s57_moe.txt" | head -16
    if timeline_cupti; then s49_timeline_decode qwen3-30b-a3b; fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s57_c
}

# Session 57's fourth call (about 4 minutes with the build; run with pad.cu and pad_plan.cpp
# touched first: s56_d's baseline had swapped s55_c's files in place, and ninja's timestamps kept
# that object in s57_b, whose pad table is s55_c's kernel again): the fix's remaining gpu tests
# (staged, the VAE's native pad) and the article pads timed again on the fix. Predicted: the tests
# pass; the pads within 2 % of s56_d's (5.40 / 6.52 / 3.90 / 12.31 µs bf16).
stage_s57_d() {
    local t0=$SECONDS
    FOURFOLD_PAD_STAGED=1 s25_gtests 'native.pad*' 100 "$OUT/s57_d_tests_staged.txt"
    s55_pad_tests s57_d 'native.pad*:dependent_launch_cuda.the_pad*:vae_cuda.the_native_pad*' || return 0
    s45_pad_run s57-fix
    (cd "$OUT" && tar czf s57_d_runs.tgz s57-*.json s57-*.txt && rm -f s57-*.json s57-*.txt)
    stage_pack s57_d
    echo "after $((SECONDS - t0)) s"
}

# Session 57's fifth call (about 4 minutes with the build): where the fix's flat path spends its
# time on the H200 (s56_d: 96x5x130x130 bf16 12.31 µs, 76.6 % of the copy bandwidth, issued 0.55
# warps a cycle a scheduler, 45 % of cycles no warp eligible, about 42 instructions a unit of 4
# elements in the loop's SASS, 7 of them constant-bank reloads). The article pads at the plan's
# units a lane, forced 4 and 8, and staged, against the default in the same call (the default is
# main's, with 9b4e93a's tail round, its last unit stored first: predicted as s56_d within 1 %,
# since no article pad's tail takes 16-byte units of 2-byte elements); then ncu's
# per-instruction warp-state samples of that pad (SASS page, CSV) and its warp states. Predicted:
# forced 4 or 8 within 3 % of the default on the bf16 pads; staged slower on the three small bf16
# pads (as on the H100); the samples mostly long-scoreboard waits at the round's first packing.
stage_s57_e() {
    local t0=$SECONDS v
    s45_pad_run s57-def
    for v in u4:FOURFOLD_PAD_UNITS_A_LANE=4 u8:FOURFOLD_PAD_UNITS_A_LANE=8 staged:FOURFOLD_PAD_STAGED=1; do
        s45_pad_run "s57-${v%%:*}" "${v#*:}"
        python3 bench/gpu/ab_table.py "$OUT/s57-def.json" "$OUT/s57-${v%%:*}.json" default "${v%%:*}" |
            head -10
    done
    timeout 120 ncu --clock-control none --kernel-name regex:"pad_flat" --launch-count 1 \
        --warp-sampling-interval 0 --import-source no --section SourceCounters \
        --section WarpStateStats --section InstructionStats --section SchedulerStats \
        -o "$OUT/s57_e_pad" -f $BIN run --workload pad --shape 1x96x5x130x130 --dtype bf16 \
        --variants native --ledgers correctness --device cuda --db /tmp/ncu-s57.db --quiet \
        >"$OUT/s57_e_ncu.txt" 2>&1
    echo "ncu -o: exit $?"
    ncu -i "$OUT/s57_e_pad.ncu-rep" --page details >"$OUT/s57_e_ncu_details.txt" 2>&1
    grep -E "Stall|Issued Warp|No Eligible|Executed Instructions  |Warp Cycles Per Issued" \
        "$OUT/s57_e_ncu_details.txt" | head -30
    ncu -i "$OUT/s57_e_pad.ncu-rep" --page source --csv --print-source sass \
        >"$OUT/s57_e_ncu_sass.csv" 2>&1
    echo "sass page: $(wc -l <"$OUT/s57_e_ncu_sass.csv") lines"
    head -2 "$OUT/s57_e_ncu_sass.csv" | cut -c1-600
    # (s58_a reads s57-def.json after this: S57_E_KEEP=1 leaves the runs for its own tar)
    [ -n "${S57_E_KEEP:-}" ] ||
        (cd "$OUT" && tar czf s57_e_runs.tgz s57-*.json s57-*.txt && rm -f s57-*.json s57-*.txt)
    stage_pack s57_e
    echo "after $((SECONDS - t0)) s"
}

# Session 58's first call (about 6-7 minutes with the build): s57_e, then the trial on branch
# s57-off32 (7f35c68: the flat path's offsets in a plane 32-bit) rebuilt in place from
# build_variants/s57-off32 (carry it with .deps; made by: git show s57-off32:src/fourfold/kernels/
# pad.cu > build_variants/s57-off32/pad.cu, and pad_plan.cpp alike), its pad gpu tests and the
# article pads against s57_e's default in the same call. Its hot loop, counted on the cubin here
# (/tmp tools of session 57: the BRA targets decoded): 165 -> 157 instructions a round of 4 bf16
# 8-byte units, 127 -> 117 for 4-byte units, 236 -> 215 for fp32's 8 a lane. Predicted: 96x5x130x130
# bf16 12.3 -> about 11.9 µs (the loop's share of the issue), the small pads -0 to -3 %.
s58_off32() {
    local t0=$SECONDS
    if [ ! -f build_variants/s57-off32/pad.cu ]; then
        echo "s58: no build_variants/s57-off32 carried: the trial not run"
        return 0
    fi
    mkdir -p /tmp/s56_tree
    [ -f /tmp/s56_tree/pad.cu ] ||
        cp src/fourfold/kernels/pad.cu src/fourfold/kernels/pad_plan.cpp /tmp/s56_tree/
    cp build_variants/s57-off32/pad.cu build_variants/s57-off32/pad_plan.cpp src/fourfold/kernels/
    FOURFOLD_NINJA_ARGS="fourfold fourfold_gpu_tests" stage_build || { s56_restore; return 1; }
    if s55_pad_tests s58_off32 'native.pad*:dependent_launch_cuda.the_pad*:vae_cuda.the_native_pad*'; then
        FOURFOLD_PAD_STAGED=1 s25_gtests 'native.pad*' 100 "$OUT/s58_off32_tests_staged.txt"
        s45_pad_run s57-off32
        python3 bench/gpu/ab_table.py "$OUT/s57-def.json" "$OUT/s57-off32.json" default off32
    fi
    s56_restore
    echo "off32: after $((SECONDS - t0)) s"
}
stage_s58_a() {
    # main's tail round (9b4e93a, its last unit stored first) under the gpu tests and memcheck
    # first: never run on a GPU before
    s55_pad_tests s58_a 'native.pad*:dependent_launch_cuda.the_pad*:vae_cuda.the_native_pad*' ||
        return 0
    FOURFOLD_PAD_STAGED=1 s25_gtests 'native.pad*' 100 "$OUT/s58_a_tests_staged.txt"
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'native.pad*' pad "$OUT/s58_a_memcheck.txt" 60
    S57_E_KEEP=1 stage_s57_e
    s58_off32
    (cd "$OUT" && tar czf s58_a_runs.tgz s57-*.json s57-*.txt 2>/dev/null && rm -f s57-*.json s57-*.txt)
    stage_pack s58_a
}

# Session 58's first call, cut to what the device time left allows (about 4-5 minutes with the
# build; session 58's starts were refused for 40 minutes): main's tail round under the pad gpu
# tests and memcheck, main's article pads, then the s57-off32 trial against them (s58_off32).
# s57_e's units-a-lane, staged and ncu runs wait.
stage_s58_b() {
    s55_pad_tests s58_b 'native.pad*:dependent_launch_cuda.the_pad*:vae_cuda.the_native_pad*' ||
        return 0
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'native.pad*' pad "$OUT/s58_b_memcheck.txt" 60
    s45_pad_run s57-def
    s58_off32
    (cd "$OUT" && tar czf s58_b_runs.tgz s57-*.json s57-*.txt 2>/dev/null && rm -f s57-*.json s57-*.txt)
    stage_pack s58_b
}

# Whether the gtest log LOG passed whole: its PASSED line and no FAILED.
gtests_passed() {
    grep -q "^\[  PASSED  \]" "$1" && ! grep -q "FAILED" "$1"
}

# Session 59's MoE call (about 4-5 minutes warm after s58_b's build; any card, A/B in the call):
# session 58's trial FOURFOLD_MOE_L2_AHEAD=1|2 (moe_plan::l2_ahead: the one launch's gate/up
# stream asks L2 for the rows 1 or 2 steps ahead of the step its registers load; bf16's
# compiled-defaults instances only, the default's code byte-identical to before). Its bits test
# and the counters' test, memcheck over the bits test (small sizes), the timed block's phases at
# 0 / 1 / 2, then qwen3-30b-a3b native_fused default / 1 / 2 / default.
# Predicted (H200; session 51's phases: routing end to the down rows staged 75.5 MB in 21.9 µs,
# 3.45 TB/s, 82 % of copy): the gate/up stop (2) and the staged stop (3) -1 to -2 µs at T = 1,
# the whole block -1 to -2 µs; qwen3 +1 to +3 % at ctx 512. A loss is possible (sessions 29-34:
# four prefetches into latency-bound phases lost); this one deepens the stream's own window.
stage_s59_moe() {
    local t0=$SECONDS
    s25_gtests 'moe_cuda.the_l2_look_ahead*:moe_cuda.down_counters*:decode_native_cuda.*' \
        200 "$OUT/s59_moe_tests.txt"
    if ! gtests_passed "$OUT/s59_moe_tests.txt"; then
        echo "the gpu tests did not pass: the look-ahead not timed"
        stage_pack s59_moe
        return 0
    fi
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'moe_cuda.the_l2_look_ahead*' moe \
        "$OUT/s59_moe_memcheck.txt" 120
    local timed='moe_cuda.the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed'
    local v
    for v in 0 1 2; do
        FOURFOLD_MOE_L2_AHEAD=$v s25_gtests "$timed" 90 "$OUT/s59_timed_$v.txt"
        echo "[ahead $v]"
        grep -E "^moe block" "$OUT/s59_timed_$v.txt" | head -20
    done
    decode_ab qwen3-30b-a3b base a1:FOURFOLD_MOE_L2_AHEAD=1 a2:FOURFOLD_MOE_L2_AHEAD=2 base2
    echo "after $((SECONDS - t0)) s"
    stage_pack s59_moe
}

# Session 58's last device minutes (about 300 s left; the gpu tests' binary alone built): the pad's
# tail round (9b4e93a) under its gpu tests for the first time, the L2 look-ahead's bits test, and
# the timed block's phases at 0 / 1 / 2 (s59_moe's first part). Each result written as it comes.
stage_s58_mini() {
    s25_gtests 'native.pad*:moe_cuda.the_l2_look_ahead*' 90 "$OUT/s58_mini_tests.txt"
    local timed='moe_cuda.the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed'
    local v
    for v in 0 1 2 0; do
        FOURFOLD_MOE_L2_AHEAD=$v s25_gtests "$timed" 60 "$OUT/s58_mini_timed_$v.txt"
        echo "[ahead $v]"
        grep -E "^moe block" "$OUT/s58_mini_timed_$v.txt" | head -20
    done
}

# Session 59's second build (about 5-6 minutes with the build; the ffn A/B on any card, the
# claim row cap on an H200 only): the trial FOURFOLD_MOE_UNFUSED_COUNTERS=1 (the down counters,
# a block's count, in the one launch without the fused prologue: moe_ffn's, part=ffn of
# moe_decode), its bits test (against the down barrier, probes and fused launches between) and
# memcheck over it, then moe_decode ffn T = 1 and 8 base / trial / base / trial; then s52_b (the
# claimed kernel's row cap, never run on an H200).
# Predicted: ffn T = 1 32.4 -> about 31 µs (the counters took about 1 µs off the fused block at
# T = 1 on an H100, session 51-52), T = 8 -2 to -5 µs; the cap 0.99-1.03x (session 52).
s59_ffn() {
    local name=$1 t0=$SECONDS
    timeout 60 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn --dtype bf16 \
        --variants native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s59-ffn-$name --quiet >"$OUT/s59_ffn_$name.txt" 2>&1
    echo "[$name] exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode .*(graph|PASS|FAIL)" "$OUT/s59_ffn_$name.txt" | head -8
}
stage_s59_b() {
    local t0=$SECONDS
    s25_gtests 'moe_cuda.the_unfused_counters*:moe_cuda.down_counters*:moe_cuda.moe_decode_native*' \
        200 "$OUT/s59_b_tests.txt"
    if ! gtests_passed "$OUT/s59_b_tests.txt"; then
        echo "the gpu tests did not pass: the trial not timed"
    else
        FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'moe_cuda.the_unfused_counters*' \
            moe "$OUT/s59_b_memcheck.txt" 120
        s59_ffn base
        FOURFOLD_MOE_UNFUSED_COUNTERS=1 s59_ffn trial
        s59_ffn base2
        FOURFOLD_MOE_UNFUSED_COUNTERS=1 s59_ffn trial2
    fi
    # the pad's 32-bit plane offsets (498f223), on main since session 59 without a sanitizer
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'native.pad*' pad \
        "$OUT/s59_b_pad_memcheck.txt" 60
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize racecheck 'native.pad*' pad \
        "$OUT/s59_b_pad_racecheck.txt" 90
    if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
        stage_s52_b
    else
        echo "not an H200: the claim row cap (s52_b) not run"
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s59_b
}

# Session 60's look into the MoE block's down phase (about 2 minutes after a build; any card):
# session 59's phases (H200, T = 1) put 7.2 µs between the gate/up units' end and the down rows
# staged (25.2 MB at 3.51 TB/s) and 2.6 µs of dots after the last row lands. Nsight Compute's
# warp-state samples, per SASS line, of one qwen3 ctx 512 decode launch of the one launch: which
# waits hold the down phase (the counters' acquire spin, the intermediate's L2 loads, the
# cp.async wait, the shuffles) against the gate/up stream's.
s60_ncu_moe() { # TAG (the files' prefix), then ncu's arguments that pick the launch
    local tag=$1 t0=$SECONDS db=/tmp/$1-ncu-$$.db
    shift
    timeout 200 ncu --clock-control none "$@" --launch-count 1 --warp-sampling-interval 0 \
        --import-source no --section SourceCounters --section WarpStateStats \
        --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis \
        -o "$OUT/$tag" -f \
        $BIN decode --model qwen3-30b-a3b --variants native_fused --mode graph --ctx 512 \
        --tokens 4 --ledgers throughput --timeout 0.5 --device cuda --dtype bf16 --db "$db" \
        --quiet >"$OUT/${tag}_ncu.txt" 2>&1
    echo "ncu exit $? after $((SECONDS - t0)) s"
    tail -3 "$OUT/${tag}_ncu.txt"
    if [ -f "$OUT/$tag.ncu-rep" ]; then
        ncu -i "$OUT/$tag.ncu-rep" --page details >"$OUT/${tag}_details.txt" 2>&1
        grep -E "Duration|Stall|Issued Warp|No Eligible|Warp Cycles Per Issued|DRAM Throughput" \
            "$OUT/${tag}_details.txt" | head -30
        ncu -i "$OUT/$tag.ncu-rep" --page source --csv --print-source sass \
            >"$OUT/${tag}_sass.csv" 2>&1
        echo "sass page: $(wc -l <"$OUT/${tag}_sass.csv") lines"
    fi
    rm -f "$db"
    echo "after $((SECONDS - t0)) s"
}
stage_s60_moe_ncu() {
    s60_ncu_moe s60_moe --kernel-name regex:moe_one_launch --launch-skip 150
    stage_pack s60_moe_ncu
}

# Session 60's second call (about 5 minutes with the build; any card, the A/B within the call):
# the T = 8 instances' gate/up units with a unit's begin and count in one register (the general
# bf16 instance spilled its begin, 8 bytes, and the reload in every step queued behind the
# step's weight loads: 18 % of the warps' stall samples in s60_moe_ncu), and the unfused one
# launch's down counters as the default from 2 tokens. The MoE gpu tests and memcheck at the new
# defaults; moe_decode ffn T = 1, 2, 4, 8 at the defaults and with FOURFOLD_MOE_UNFUSED_COUNTERS=0;
# then main's moe.cu before the packing (build_variants/s60-nopack, the CLI alone rebuilt) the
# same way, then this tree's again.
s60_ffn() {
    local name=$1 t0=$SECONDS
    timeout 90 $BIN run --workload moe_decode --param tokens=1,2,4,8 --param part=ffn --dtype bf16 \
        --variants native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s60-ffn-$name --quiet >"$OUT/s60_ffn_$name.txt" 2>&1
    echo "[$name] exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode .*(graph|FAIL)" "$OUT/s60_ffn_$name.txt" | awk '{print $4, $7}' | paste -sd' '
    grep -cE "^moe_decode .*PASS" "$OUT/s60_ffn_$name.txt" | sed 's/^/PASS rows: /'
}
s60_moe_variant() { # the build_variants/ folder's moe.cu in the tree, or the tree's back (none)
    mkdir -p /tmp/s60_tree
    [ -f /tmp/s60_tree/moe.cu ] || cp src/fourfold/kernels/moe.cu /tmp/s60_tree/
    if [ -n "${1:-}" ]; then
        cp "build_variants/$1/moe.cu" src/fourfold/kernels/moe.cu
    else
        cp /tmp/s60_tree/moe.cu src/fourfold/kernels/moe.cu
    fi
    touch src/fourfold/kernels/moe.cu
    # (the gpu tests too: the kernels' library is static, and s61_round's timed block is a gpu
    # test; before session 62 the variant rounds' block rows ran the tree's kernel)
    FOURFOLD_NINJA_ARGS="fourfold fourfold_gpu_tests" stage_build
}
stage_s60_b() {
    local t0=$SECONDS
    s25_gtests 'moe_cuda.the_unfused_counters*:moe_cuda.down_counters*:moe_cuda.moe_decode_native*:moe_cuda.native_step*:moe_cuda.one_launch_takes*:moe_cuda.decoder_moe_layers*' \
        240 "$OUT/s60_b_tests.txt"
    if ! gtests_passed "$OUT/s60_b_tests.txt"; then
        echo "the gpu tests did not pass: not timed"
        stage_pack s60_b
        return 0
    fi
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'moe_cuda.the_unfused_counters*' \
        moe "$OUT/s60_b_memcheck.txt" 120
    s60_ffn pack
    FOURFOLD_MOE_UNFUSED_COUNTERS=0 s60_ffn pack-nocount
    if s60_moe_variant s60-nopack; then
        s60_ffn nopack
        FOURFOLD_MOE_UNFUSED_COUNTERS=0 s60_ffn nopack-nocount
    fi
    s60_moe_variant && {
        s60_ffn pack2
        FOURFOLD_MOE_UNFUSED_COUNTERS=0 s60_ffn pack2-nocount
    }
    echo "after $((SECONDS - t0)) s"
    stage_pack s60_b
}

# s60_b cut to what session 60's last device minutes allow (about 4 minutes with the build): the
# tests that cover the T = 8 general instance, memcheck, then the packed unit against main's
# moe.cu, each with and without the unfused counters.
stage_s60_c() {
    local t0=$SECONDS
    s60_ffn pack
    FOURFOLD_MOE_UNFUSED_COUNTERS=0 s60_ffn pack-nocount
    s25_gtests 'moe_cuda.the_unfused_counters*:moe_cuda.native_step_matches_float64_for_1_to_8*:moe_cuda.moe_decode_native*' \
        150 "$OUT/s60_c_tests.txt"
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'moe_cuda.the_unfused_counters*' \
        moe "$OUT/s60_c_memcheck.txt" 60
    if s60_moe_variant s60-nopack; then
        s60_ffn nopack
        FOURFOLD_MOE_UNFUSED_COUNTERS=0 s60_ffn nopack-nocount
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s60_c
}

# Session 61's first call (about 6 minutes with the build; any card, the A/B within the call):
# the packed gate/up unit at its own instance. moe_decode ffn takes fp32 logits (the T = 8
# instance that did not spill: s60_c found it the same with and without the packing, 187 µs on
# an H100); the spilled one is the general bf16-logits T = 8 instance, which the decoder's prefill
# runs (Nsight Compute's launch in s60_moe_ncu). qwen3-30b-a3b native and native_fused at ctx 512,
# its prefill ms and tokens/s, this tree / main's moe.cu before the packing / this tree; the MoE gpu
# tests with the bf16-logits one; racecheck over the unfused counters' test.
s61_qwen3() {
    local name=$1 t0=$SECONDS
    timeout 150 $BIN decode --model qwen3-30b-a3b --variants native,native_fused --mode graph \
        --ctx 512 --ledgers throughput --device cuda --dtype bf16 --db "$DB" --label s61-$name \
        --quiet >"$OUT/s61_qwen3_$name.txt" 2>&1
    echo "[$name] exit $? after $((SECONDS - t0)) s"
    grep -E "^decode " "$OUT/s61_qwen3_$name.txt" | awk '{print $2, "tok/s", $7, "prefill ms", $13}'
}
stage_s61_a() {
    local t0=$SECONDS
    s25_gtests 'moe_cuda.*bf16_logits*:moe_cuda.decoder_moe_layers*:moe_cuda.native_step_matches_float64_on_small*:moe_cuda.one_launch_takes*' \
        200 "$OUT/s61_a_tests.txt"
    # (the bf16-logits T = 8 instance, packed in session 60, has not run on a GPU before this)
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'moe_cuda.*bf16_logits*' \
        moe "$OUT/s61_a_memcheck.txt" 90
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize racecheck 'moe_cuda.the_unfused_counters*' \
        moe "$OUT/s61_a_racecheck.txt" 150
    s61_qwen3 pack
    if s60_moe_variant s60-nopack; then
        s61_qwen3 nopack
        s60_moe_variant && s61_qwen3 pack2
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s61_a
}

# s60_moe_ncu aimed at the decode's own launch: s60's --launch-skip 150 landed in the prefill (the
# T = 8 general instance). The compiled-defaults T = 1 instance by its demangled name (as ncu
# prints it), 20 launches of it in: a decode step's own launch, whatever the prefill runs.
stage_s61_moe_ncu() {
    s60_ncu_moe s61_moe --kernel-name-base demangled \
        --kernel-name 'regex:moe_one_launch<__nv_bfloat16, __nv_bfloat16, \(int\)1, \(bool\)1>' \
        --launch-skip 20
    stage_pack s61_moe_ncu
}

# Session 61's second build (about 8 minutes with the build; any card, the A/B within the call).
# Nsight Compute on the decode's own T = 1 launch (s61_moe_ncu, H100): 35 % of the warps' stall
# samples are no_inst, most where each warp runs code once (the first down item's 8 rows of copies
# unrolled, about 500 instructions, and the dots). The change: stage_item's rows in a loop, the
# dots' 8 warp_sums as one warp_sum_8 (the same bits), and at T = 1 the gate/up's and the dots'
# token row 0 known (no shared load ahead of each vector's h); every one-launch instance about
# 1,050 instructions shorter. The MoE gpu tests (the untimed ones), memcheck over the bits and
# counters tests, then this tree / main's moe.cu (build_variants/s61-base) / this tree: the timed
# block's phases, moe_decode ffn T = 1, 2, 4, 8 and qwen3-30b-a3b at ctx 512.
# Predicted (H100): the block T = 1 -0.5 to -1.5 µs, ffn T = 1 36.2 -> 35-35.7, T = 8 within 1 %;
# qwen3 native_fused 314.6 -> 317-321 tokens/s (+1 to +2 %).
s61_round() {
    local name=$1
    local timed='moe_cuda.the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed'
    s25_gtests "$timed" 90 "$OUT/s61_timed_$name.txt" >/dev/null
    echo "[$name] block"
    grep -E "^moe block" "$OUT/s61_timed_$name.txt" | head -20
    s60_ffn "$name"
    s61_qwen3 "$name"
}
stage_s61_b() {
    local t0=$SECONDS
    rm -rf /tmp/s60_tree # (s60_moe_variant's copy of the tree's moe.cu: this build's)
    s25_gtests 'moe_cuda.*-moe_cuda.*_printed' 240 "$OUT/s61_b_tests.txt"
    if ! gtests_passed "$OUT/s61_b_tests.txt"; then
        echo "the gpu tests did not pass: not timed"
        stage_pack s61_b
        return 0
    fi
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck \
        'moe_cuda.native_step_is_bitwise*:moe_cuda.the_unfused_counters*:moe_cuda.down_counters*' \
        moe "$OUT/s61_b_memcheck.txt" 120
    s61_round new
    if s60_moe_variant s61-base; then
        s61_round base
        s60_moe_variant && s61_round new2
    fi
    echo "after $((SECONDS - t0)) s"
    stage_pack s61_b
}

# Session 61's third call (about 4 minutes with the build; any card, the A/B within the call):
# racecheck over the bits and counters tests at 79532a9's dots (the block's sums now written by
# lanes 4 c), then the unfused counters at T = 1 again (FOURFOLD_MOE_UNFUSED_COUNTERS=1; session
# 60 measured them +2.5 % there, cause not isolated, with the 500-instruction unrolled copies the
# counters' path waits behind): moe_decode ffn default / =1 / default / =1.
# Predicted (H100): T = 1 with the counters within +-1 % of the barrier now (35.0 µs).
stage_s61_c() {
    local t0=$SECONDS
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize racecheck \
        'moe_cuda.native_step_is_bitwise*:moe_cuda.the_unfused_counters*' moe \
        "$OUT/s61_c_racecheck.txt" 150
    s60_ffn default
    FOURFOLD_MOE_UNFUSED_COUNTERS=1 s60_ffn counters
    s60_ffn default2
    FOURFOLD_MOE_UNFUSED_COUNTERS=1 s60_ffn counters2
    echo "after $((SECONDS - t0)) s"
    stage_pack s61_c
}

# Session 61's last device minutes (about 2.5 minutes with the build; on an H200 only: issue 15's
# targets are the H200's): qwen3-30b-a3b stock and native_fused at ctx 512, and moe_decode ffn
# T = 1 and 8, stock and native, at 79532a9's shorter down staging and sums.
# Predicted (H200; session 57-59: qwen3 362.4 tokens/s, ffn T = 1 32.4 µs, T = 8 169 µs): qwen3
# +0.5 to +1.5 %, ffn T = 1 about -1.3 µs (H100: -1.5), T = 8 within 1 %.
stage_s61_h200() {
    local t0=$SECONDS
    only_on_h200 s61_h200 || return 0
    timeout 120 $BIN decode --model qwen3-30b-a3b --variants stock,native_fused --mode graph \
        --ctx 512 --ledgers throughput,correctness --device cuda --dtype bf16 --db "$DB" \
        --label s61-h200 --quiet >"$OUT/s61_h200_qwen3.txt" 2>&1
    echo "qwen3: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode |copy bandwidth" "$OUT/s61_h200_qwen3.txt"
    timeout 90 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn --dtype bf16 \
        --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label s61-h200-ffn --quiet >"$OUT/s61_h200_ffn.txt" 2>&1
    echo "ffn: exit $? after $((SECONDS - t0)) s"
    grep -E "^moe_decode " "$OUT/s61_h200_ffn.txt"
    stage_pack s61_h200
}

# Every untimed MoE gpu test into $OUT/NAME_tests.txt; on a failure says so, packs NAME's logs
# and returns 1 (the caller times nothing then).
s62_moe_tests() {
    local name=$1
    rm -rf /tmp/s60_tree
    s25_gtests 'moe_cuda.*-moe_cuda.*_printed' 240 "$OUT/${name}_tests.txt"
    gtests_passed "$OUT/${name}_tests.txt" && return 0
    echo "the gpu tests did not pass: not timed"
    stage_pack "$name"
    return 1
}

# Session 62's first call (about 6 minutes with the build; any card; the A/B is s62_b's). Session
# 61's second change, not yet run on a GPU: a warp whose stage lies past the fused prologue's h in
# the stage area copies its first down item's rows as soon as its own gate/up units are done,
# before the block barrier and the block's count (at T = 1 warps 1-7; without the prologue every
# warp). Session 57 (H200) measured the down phase at 3.51 TB/s against the gate/up's 4.01, "its
# copies issued only once the block's own gate/up units are done: a ramp"; the H100 ran both at
# its copy bandwidth (session 61). The unfused counters (moe_decode ffn from T = 2) had their block
# barrier and count ahead of every copy; s61_c's guess for their T = 1 loss is that wait. The MoE
# gpu tests (with the compiled unfused trial's), memcheck and racecheck over the bits and counters
# tests, then the early round: the timed block, ffn, qwen3.
# Predicted: H100 block T = 1 -0 to -0.5 µs, ffn T = 2-8 -1 to -3 %, qwen3 +0 to +0.5 %;
# H200 block T = 1 -0.3 to -1 µs, qwen3 +0.5 to +1.5 %. Bits unchanged.
stage_s62_a() {
    local t0=$SECONDS
    s62_moe_tests s62_a || return 0
    local bits='moe_cuda.native_step_is_bitwise*:moe_cuda.the_unfused_counters*'
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck \
        "$bits:moe_cuda.down_counters*:moe_cuda.the_compiled_unfused*" moe "$OUT/s62_a_memcheck.txt" 150
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize racecheck "$bits:moe_cuda.the_compiled_unfused*" \
        moe "$OUT/s62_a_racecheck.txt" 180
    s61_round early
    echo "after $((SECONDS - t0)) s"
    stage_pack s62_a
}

# Session 62's second call (about 6 minutes on s62_a's warm machine; a fresh one needs `build`
# first): 79532a9's moe.cu (build_variants/s62-base) round, the tree's again, then the unfused
# counters at T = 1 with the early copies (FOURFOLD_MOE_UNFUSED_COUNTERS=1 against the barrier,
# twice). Predicted: within +-1 % of the barrier at T = 1 (s61_c: +2.5 % with the copies behind
# the block barrier).
# Then session 61's trial FOURFOLD_MOE_COMPILED_UNFUSED=1 (the unfused one launch's own
# instance, 5,504 instructions at T = 1 against the general's 8,120): ffn off / on / off / on.
# Predicted: T = 1 -0.5 to -1 µs (the fused path's compiled defaults: -1.05 at its block),
# T = 2-8 -0.5 to -1.5 %.
stage_s62_b() {
    local t0=$SECONDS
    rm -rf /tmp/s60_tree
    s60_moe_variant s62-base && s61_round base
    s60_moe_variant && s61_round early2
    s60_ffn default
    FOURFOLD_MOE_UNFUSED_COUNTERS=1 s60_ffn counters
    s60_ffn default2
    FOURFOLD_MOE_UNFUSED_COUNTERS=1 s60_ffn counters2
    local v
    for v in 0 1 0b 1b; do
        FOURFOLD_MOE_COMPILED_UNFUSED=${v%b} s60_ffn "unfused$v"
    done
    echo "after $((SECONDS - t0)) s"
    stage_pack s62_b
}

# Nsight Compute on the decode's T = 1 launch again after the early copies (s61_moe_ncu's: the
# 21st launch of the compiled-defaults instance), for the stall samples' split against s61's
# two (no_inst 34.9 % -> 22.6 %, long scoreboard 13.4 -> 23.0 %, the routing barrier 6.6 %).
stage_s62_moe_ncu() {
    s60_ncu_moe s62_moe --kernel-name-base demangled \
        --kernel-name 'regex:moe_one_launch<__nv_bfloat16, __nv_bfloat16, \(int\)1, \(bool\)1>' \
        --launch-skip 20
    stage_pack s62_moe_ncu
}

# Session 62's third call (about 5 minutes with the build; any card). s62_b (H100): the early
# down copies lost 1-1.5 % at T = 2-8 and gained nothing at T = 1 (reverted); the compiled
# unfused instance won T = 1 35.7 -> 35.1 µs, T = 2 64.4 -> 63.3 µs twice, now the default
# (FOURFOLD_MOE_COMPILED_UNFUSED=0: the general instance). Its bits test (the general instance at
# =0 now), every untimed MoE test at the new default, memcheck over the bits test; then ffn
# default / =0 / default / =0 and qwen3 native and native_fused at both (native's router logits
# are bf16: the same instance, so the same figure predicted); on an H200 the issues' figures.
# Predicted: H100 ffn T = 1 35.1 against 35.7 µs (the revert does not touch the T = 1 instance's
# path but for the early copies' order; T = 2-8 back to 63.5/110/190 at =0); H200 ffn T = 1
# about 31.5 µs (s57-59: 32.4), qwen3 native_fused 362-366 tokens/s.
stage_s62_c() {
    local t0=$SECONDS
    s62_moe_tests s62_c || return 0
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'moe_cuda.the_compiled_unfused*' \
        moe "$OUT/s62_c_memcheck.txt" 90
    # the unfused launch's phases (now the compiled instance; fp32 logits, as moe_decode ffn)
    s25_gtests 'moe_cuda.one_launch_and_two_kernels_agree_and_their_times_are_printed' 90 \
        "$OUT/s62_c_phases.txt" >/dev/null
    grep -E "^moe native T=(1|8) " "$OUT/s62_c_phases.txt"
    local v
    for v in 1 0 1b 0b; do
        FOURFOLD_MOE_COMPILED_UNFUSED=${v%b} s60_ffn "compiled$v"
    done
    s61_qwen3 default
    FOURFOLD_MOE_COMPILED_UNFUSED=0 s61_qwen3 general
    echo "after $((SECONDS - t0)) s"
    stage_pack s62_c
    stage_s62_h200
}

# Session 62 on an H200 (about 5 minutes with the build): the issues' figures at the head, the
# compiled unfused instance the default. s61_h200 (qwen3 stock / native_fused ctx 512, moe_decode
# ffn T = 1 and 8 stock / native) and llama3-8b stock / native_fused ctx 512 and 2048.
# Predicted (H200, sessions 57-59: qwen3 362.4, ffn T = 1 32.4 µs, llama3-8b 247.3 / 238.8): qwen3
# 364-368 tokens/s (sessions 60-62's H100 gains: +1.3 %), ffn T = 1 about 30.5 µs (H100: 36.5 ->
# 35.0), llama3-8b as before within 1 %.
stage_s62_h200() {
    local t0=$SECONDS
    only_on_h200 s62_h200 || return 0
    stage_s61_h200
    timeout 120 $BIN decode --model llama3-8b --variants stock,native_fused --mode graph \
        --ctx 512,2048 --ledgers throughput,correctness --device cuda --dtype bf16 --db "$DB" \
        --label s62-h200-llama --quiet >"$OUT/s62_h200_llama.txt" 2>&1
    echo "llama3-8b: exit $? after $((SECONDS - t0)) s"
    grep -E "^decode " "$OUT/s62_h200_llama.txt"
    stage_pack s62_h200
}

# Session 62's last call (about 7 minutes with the build, any card): every untimed gpu test at the
# head (the compiled unfused instance the default), within S62_ALL_LIMIT s (330); where it stops,
# the tests it reached. On an H200 first the issues' figures (s62_h200).
stage_s62_all() {
    local t0=$SECONDS
    stage_s62_h200
    s25_gtests '-*timed*:*printed*' "${S62_ALL_LIMIT:-330}" "$OUT/s62_all_tests.txt"
    grep -cE "^\[       OK \]" "$OUT/s62_all_tests.txt" | sed 's/^/tests OK: /'
    grep -E "^\[  FAILED  \]|^\[  SKIPPED \]" "$OUT/s62_all_tests.txt" | sort | uniq | head -20
    grep -E "^\[==========\]" "$OUT/s62_all_tests.txt" | tail -1
    echo "after $((SECONDS - t0)) s"
    stage_pack s62_all
}

# Session 63's first call (about 8 minutes with a fresh machine's build, any card): the untimed
# gpu tests s62_all did not reach (native: softmax, pad, GEMV; rmsnorm, rope/kv, SwiGLU, VAE), the
# MoE tests and the fixed tiny-presets decode test (8a47791: graph records by variant), then
# racecheck over the compiled unfused instance (the default since 4651155; not rerun after the
# early copies' revert). On an H200 then the issues' figures (s62_h200).
# Predicted: every test passes, racecheck 0 hazards (the instance's code is s62_a's, which had 0).
stage_s63_a() {
    local t0=$SECONDS
    s25_gtests 'native.*:rmsnorm_cuda.*:rope_kv_cuda.*:swiglu_cuda.*:vae_cuda.*:decode_cuda.tiny_presets*:moe_cuda.*-*timed*:*printed*' \
        "${S63_TESTS_LIMIT:-240}" "$OUT/s63_a_tests.txt"
    grep -cE "^\[       OK \]" "$OUT/s63_a_tests.txt" | sed 's/^/tests OK: /'
    grep -E "^\[  FAILED  \]|^\[  SKIPPED \]" "$OUT/s63_a_tests.txt" | sort | uniq | head -20
    grep -E "^\[==========\]" "$OUT/s63_a_tests.txt" | tail -1
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize racecheck 'moe_cuda.the_compiled_unfused*' \
        moe "$OUT/s63_a_racecheck.txt" 150
    echo "after $((SECONDS - t0)) s"
    stage_pack s63_a
    stage_s62_h200
}

# Session 63's trial: the next layer's RMSNorm and qkv GEMV in the MoE block's tail
# (FOURFOLD_MOE_NEXT_GEMV=1, the k_fused_next instance; 40 instances byte for byte as before).
# qwen3-30b-a3b native_fused at ctx 512, tokens/s (and with NAME's second word the correctness
# ledger too).
s63_qwen3() {
    local name=$1 ledgers=${2:-throughput} t0=$SECONDS
    timeout 150 $BIN decode --model qwen3-30b-a3b --variants native_fused --mode graph \
        --ctx 512 --ledgers "$ledgers" --device cuda --dtype bf16 --db "$DB" --label s63-$name \
        --quiet >"$OUT/s63_qwen3_$name.txt" 2>&1
    echo "[$name] exit $? after $((SECONDS - t0)) s"
    grep -E "^decode " "$OUT/s63_qwen3_$name.txt" | head -6
}
# The first call with it (about 8 minutes with a fresh machine's build): its gpu tests (the
# kernel's bits and float64, the decoder's logits and facts), the tiny presets' decode test
# (8a47791's counts by variant) and the down counters' bits, then qwen3 default / next /
# default / next. Predicted (H200; H100 in brackets): the qkv GEMV's 11.5 exposed µs a layer
# (H100 ~15) become 5.5-7 inside the block's tail, so +3 to +5 µs a layer: qwen3 ctx 512 362 ->
# 380-395 tokens/s (H100 312 -> 325-335). It can lose: the tail's y count is a grid barrier the
# block did not have, the copies may queue behind the last down dots, and the instance is 1,648
# instructions longer (9,160 against 7,512 at T = 1: instruction cache).
stage_s63_b() {
    local t0=$SECONDS
    s25_gtests 'moe_cuda.the_next_gemv*:decode_native_cuda.the_next_qkv*:decode_cuda.tiny_presets*:moe_cuda.down_counters*' \
        200 "$OUT/s63_b_tests.txt"
    grep -cE "^\[       OK \]" "$OUT/s63_b_tests.txt" | sed 's/^/tests OK: /'
    s63_qwen3 default
    FOURFOLD_MOE_NEXT_GEMV=1 s63_qwen3 next
    s63_qwen3 default2
    FOURFOLD_MOE_NEXT_GEMV=1 s63_qwen3 next2 throughput,correctness
    echo "after $((SECONDS - t0)) s"
    stage_pack s63_b
}
# The sanitizers over the next GEMV's test (small sizes), on a warm machine after s63_b.
stage_s63_c() {
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'moe_cuda.the_next_gemv*' moe \
        "$OUT/s63_c_memcheck.txt" 120
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize racecheck 'moe_cuda.the_next_gemv*' moe \
        "$OUT/s63_c_racecheck.txt" 150
    stage_pack s63_c
}

# Session 63's second trial call (about 8 minutes with a fresh machine's build): s63_b on an H100
# lost 11 % (qwen3 313.6 -> 278.3 tokens/s: +8.5 µs a layer where -5 was predicted) with a tail of
# 1,648 instructions (its loops unrolled 8 times over registers). Suspected: the instance (9,160
# instructions, 146 KB) no longer fits the SM's instruction cache (128 KB?; the defaults' 7,512
# are 117 KB) and every launch refetches its code. Now the tail's loops are not unrolled, the
# normalised y in the routing's shared memory (8,128 instructions, 127 KB). Its tests, qwen3
# default / next / default / next, then ncu over one MoE launch of each (stall reasons: "no
# instruction" is the instruction cache). Predicted: if the cache is it, next within -2 to +5 %
# of the default; ncu's no-instruction stalls far above the default's in s63_b's build (not rerun).
stage_s63_d() {
    local t0=$SECONDS
    s25_gtests 'moe_cuda.the_next_gemv*:decode_native_cuda.the_next_qkv*' 200 "$OUT/s63_d_tests.txt"
    grep -cE "^\[       OK \]" "$OUT/s63_d_tests.txt" | sed 's/^/tests OK: /'
    s63_qwen3 d-default
    FOURFOLD_MOE_NEXT_GEMV=1 s63_qwen3 d-next
    s63_qwen3 d-default2
    FOURFOLD_MOE_NEXT_GEMV=1 s63_qwen3 d-next2
    echo "after $((SECONDS - t0)) s"
    s60_ncu_moe s63_d_default --kernel-name regex:moe_one_launch --launch-skip 150
    FOURFOLD_MOE_NEXT_GEMV=1 s60_ncu_moe s63_d_next --kernel-name regex:moe_one_launch --launch-skip 150
    echo "after $((SECONDS - t0)) s"
    stage_pack s63_d
}

# Session 63's third trial call (about 7 minutes with a fresh machine's build): where s63_d's
# -6.4 % goes. FOURFOLD_MOE_NEXT_GEMV=count runs the tail's instance with its y count and norm but
# no rows (the decoder's own qkv GEMV runs): the tail's cost apart from the GEMV's work. Then the
# step's timeline at the default, with the tail and with its count alone. Predicted: count alone
# costs 1-2 µs a layer (the barrier); the tail's MoE launch about 8-10 µs longer than the
# default's (the GEMV's 13 exposed) if the loss is in the tail's own work. And
# FOURFOLD_MOE_NEXT_GEMV=prefetch: the tail only asks L2 for the next qkv rows as each warp's down
# dots end (one prefetch a lane a row, no count; the decoder's GEMV then reads L2): predicted +1 to
# +3 % (the DRAM idle through the last dots, the sums and the GEMV's launch), or a loss as the four
# earlier prefetches into latency-bound phases.
stage_s63_e() {
    local t0=$SECONDS
    s63_qwen3 e-default
    FOURFOLD_MOE_NEXT_GEMV=count s63_qwen3 e-count
    FOURFOLD_MOE_NEXT_GEMV=1 s63_qwen3 e-next
    FOURFOLD_MOE_NEXT_GEMV=prefetch s63_qwen3 e-prefetch
    s63_qwen3 e-default2
    timeline_cupti || { echo "no CUPTI: no timeline"; stage_pack s63_e; return 0; }
    s49_timeline_decode qwen3-30b-a3b s63_default
    FOURFOLD_MOE_NEXT_GEMV=1 s49_timeline_decode qwen3-30b-a3b s63_next
    FOURFOLD_MOE_NEXT_GEMV=count s49_timeline_decode qwen3-30b-a3b s63_count
    FOURFOLD_MOE_NEXT_GEMV=prefetch s49_timeline_decode qwen3-30b-a3b s63_prefetch
    echo "after $((SECONDS - t0)) s"
    s25_gtests 'moe_cuda.the_next_gemv*' 60 "$OUT/s63_e_tests.txt"
    stage_pack s63_e
}
# s63_e's decodes alone (the device budget's last minutes: `fourfold` built alone, no timeline).
stage_s63_f() {
    s63_qwen3 f-default
    FOURFOLD_MOE_NEXT_GEMV=count s63_qwen3 f-count
    FOURFOLD_MOE_NEXT_GEMV=prefetch s63_qwen3 f-prefetch
    FOURFOLD_MOE_NEXT_GEMV=1 s63_qwen3 f-next
    s63_qwen3 f-default2
    stage_pack s63_f
}

# Session 65's call (about 7 minutes with a fresh machine's build, any card): session 63's
# next-GEMV trial removed (`f5ded64`; the other 75 functions of moe.cu byte for byte as before):
# qwen3 native_fused twice, Nsight Compute over one of the decode's norm-fused qkv GEMVs
# (`gemv_balanced<bf16, 1, 1>`, 5120 x 2048: 13.0 µs exposed a layer on an H100, 21 MB of bytes
# 7 µs), then the MoE and native decode gpu tests within S65_TESTS_LIMIT s. On an H200 then the
# issues' figures (s62_h200). Predicted: qwen3 within 0.5 % of s63_e's default (314.8 / 314.9 on
# an H100); the GEMV alone about 12 µs, DRAM 55-65 %, its stalls long scoreboard (the loads) and
# the prologue's barrier; tests pass.
stage_s65_a() {
    local t0=$SECONDS
    s63_qwen3 a-default
    s63_qwen3 a-default2
    echo "after $((SECONDS - t0)) s"
    # (the one-token instance by its demangled name: a bare regex caught a prefill launch, s63_d)
    s60_ncu_moe s65_qkv --kernel-name-base demangled \
        --kernel-name 'regex:gemv_balanced<__nv_bfloat16, \(int\)1, \(int\)1>' --launch-skip 20
    echo "after $((SECONDS - t0)) s"
    s25_gtests 'moe_cuda.*:decode_native_cuda.*:decode_cuda.tiny_presets*-*timed*:*printed*' \
        "${S65_TESTS_LIMIT:-150}" "$OUT/s65_a_tests.txt"
    grep -cE "^\[       OK \]" "$OUT/s65_a_tests.txt" | sed 's/^/tests OK: /'
    grep -E "^\[  FAILED  \]|^\[  SKIPPED \]" "$OUT/s65_a_tests.txt" | sort | uniq | head -20
    grep -E "^\[==========\]" "$OUT/s65_a_tests.txt" | tail -1
    echo "after $((SECONDS - t0)) s"
    stage_pack s65_a
    stage_s62_h200
}

# s65_a's Nsight Compute alone (ncu names template arguments "(int)1"), warm after it.
stage_s65_b() {
    s60_ncu_moe s65_qkv --kernel-name-base demangled \
        --kernel-name 'regex:gemv_balanced<__nv_bfloat16, \(int\)1, \(int\)1>' --launch-skip 20
    stage_pack s65_b
}

# Session 65's A/B (about 4 minutes with a fresh machine's `fourfold` build; carry .deps and
# build_variants, `build_variants/s65_base/gemv_claim.cuh` from the parent commit): the norm
# prologue asks for the thread's first norm-weight vector with x's and keeps both (s65_b's ncu:
# 6 % of the qkv GEMV's stall samples on the norm weights' load, issued after the block sum).
# qwen3 native_fused with it (throughput and correctness), then the parent's prologue rebuilt in
# place, qwen3 again. Predicted: +0.6 to +1.2 % (0.4-0.8 µs a norm-fused GEMV, 49 a step).
s65_decode() { # NAME MODEL
    local t0=$SECONDS
    timeout 150 $BIN decode --model "$2" --variants native_fused --mode graph --ctx 512 \
        --ledgers throughput,correctness --device cuda --dtype bf16 --db "$DB" --label "s65-$1" \
        --quiet >"$OUT/s65_$1.txt" 2>&1
    echo "[$1] exit $? after $((SECONDS - t0)) s"
    grep -E "^decode " "$OUT/s65_$1.txt" | head -4
}
stage_s65_c() {
    local t0=$SECONDS f=src/fourfold/kernels/gemv_claim.cuh
    s65_decode early-qwen3 qwen3-30b-a3b
    echo "after $((SECONDS - t0)) s"
    cp "$f" /tmp/s65_gemv_claim.cuh
    cp build_variants/s65_base/gemv_claim.cuh "$f"
    FOURFOLD_NINJA_ARGS=fourfold stage_build || { cp /tmp/s65_gemv_claim.cuh "$f"; touch "$f"; return 1; }
    echo "after $((SECONDS - t0)) s"
    s65_decode base-qwen3 qwen3-30b-a3b
    cp /tmp/s65_gemv_claim.cuh "$f"
    touch "$f"
    echo "after $((SECONDS - t0)) s"
    stage_pack s65_c
}

# Session 66's first call (about 8 minutes with a fresh machine's build; any card; carry .deps and
# build_variants): session 65's two GEMV changes against their parent on one machine. Make the
# variants on the CPU machine first:
#   for v in base:c5ca1d2:c5ca1d2 norm:c5ca1d2:082e197; do IFS=: read n g c <<<"$v";
#     mkdir -p build_variants/s66_$n; git show $g:src/fourfold/kernels/gemv.cu >build_variants/s66_$n/gemv.cu;
#     git show $c:src/fourfold/kernels/gemv_claim.cuh >build_variants/s66_$n/gemv_claim.cuh; done
# head (both: the norm weights asked for with x, 082e197; one division for the run's first step,
# 5a71775), then norm only, then base, each rebuilt in place (`fourfold` alone), qwen3-30b-a3b and
# llama3-8b native_fused ctx 512 each (throughput and correctness), head again last; the tree's
# files back and touched. Then the GEMV's gpu tests and memcheck over them.
# Predicted (H100): norm over base +0.5 to +1.2 % on both models; head over norm +0.5 to +1.5 % on
# qwen3 (its qkv GEMV is gemv_balanced), under 0.3 % on llama3-8b (its GEMVs are column-stationary).
s66_variant() { # NAME (the build_variants/s66_NAME files; none: the tree)
    local name=$1 k=src/fourfold/kernels
    if [ -d "build_variants/s66_$name" ]; then
        mkdir -p /tmp/s66_tree
        [ -f /tmp/s66_tree/gemv.cu ] || cp $k/gemv.cu $k/gemv_claim.cuh /tmp/s66_tree/
        cp "build_variants/s66_$name/gemv.cu" "build_variants/s66_$name/gemv_claim.cuh" $k/
    elif [ -f /tmp/s66_tree/gemv.cu ]; then
        cp /tmp/s66_tree/gemv.cu /tmp/s66_tree/gemv_claim.cuh $k/
        touch $k/gemv.cu $k/gemv_claim.cuh
    fi
    FOURFOLD_NINJA_ARGS=fourfold stage_build || return 1
    s65_decode "$name-qwen3" qwen3-30b-a3b
    s65_decode "$name-llama" llama3-8b
}
stage_s66_a() {
    local t0=$SECONDS
    s66_variant head || return 0
    s66_variant norm || return 0
    s66_variant base || return 0
    s66_variant head2 || return 0
    echo "after $((SECONDS - t0)) s"
    FOURFOLD_NINJA_ARGS="fourfold_gpu_tests fourfold" stage_build || return 0
    s25_gtests 'native.gemv*:decode_native_cuda.norms*:gemv_fp8.claimed*:gemv_fp8.column_stationary*' \
        150 "$OUT/s66_a_tests.txt"
    grep -cE "^\[       OK \]" "$OUT/s66_a_tests.txt" | sed 's/^/tests OK: /'
    grep -E "^\[  FAILED  \]" "$OUT/s66_a_tests.txt" | sort | uniq | head
    FOURFOLD_NATIVE_TEST_SIZES=small s53_sanitize memcheck 'native.gemv*:gemv_fp8.claimed*' gemv \
        "$OUT/s66_a_memcheck.txt" 150
    echo "after $((SECONDS - t0)) s"
    stage_pack s66_a
}
