# Stages for the decode workload (issue 6): fourfold decode of llama3-8b and qwen3-30b-a3b at ctx
# 512 and 2048, eager and graph, then Hugging Face transformers on the same configurations in the
# same call, so the two figures are measured side by side. Variables from h200.sh: BIN, DB, OUT.
# Outputs: $OUT/decode.md (fourfold's tables) and $OUT/hf_decode.jsonl (one line per model and ctx).
# Expected wall time on an H200: about 3 minutes for stage_decode (both models, both tools).

DECODE_TOKENS=${DECODE_TOKENS:-32}

# One model through fourfold: all three ledgers, both modes, every variant (the MoE one has stock
# and generic; generic is skipped in graph mode with its reason).
decode_fourfold() {
    local model=$1
    echo "### fourfold decode --model $model" >>"$OUT/decode.md"
    $BIN decode --model "$model" --ctx 512,2048 --tokens "$DECODE_TOKENS" --device cuda --dtype bf16 \
        --mode eager,graph --label "decode-$model" --db "$DB" --quiet --format md 2>&1 \
        | tee -a "$OUT/decode.md" | grep -E "^\| decode|^records|error" | head -40
    return "${PIPESTATUS[0]}"
}

# The same configuration through transformers (model built on the GPU from fourfold's own
# config.json, random init, bf16, sdpa attention, DynamicCache).
decode_hf() {
    local model=$1 config=/tmp/fourfold-$1.config.json
    $BIN decode --model "$model" --print-config >"$config" || return 1
    python3 bench/hf_decode.py --config "$config" --ctx 512,2048 --tokens "$DECODE_TOKENS" \
        | tee -a "$OUT/hf_decode.jsonl"
}

stage_decode_llama() { decode_fourfold llama3-8b && decode_hf llama3-8b; }
stage_decode_moe() { decode_fourfold qwen3-30b-a3b && decode_hf qwen3-30b-a3b; }
stage_decode() {
    stage_decode_llama
    stage_decode_moe
}

# The decode workload's GPU tests alone (tiny models, both modes, both MoE paths), for a quick
# check after a build without the whole ctest run.
stage_decode_test() {
    $BUILD/tests/fourfold_gpu_tests --gtest_filter='decode_cuda.*' 2>&1 | tail -25
}

# Issue 15 item 3: fourfold's native decode step (kernels/rmsnorm, rope_kv, decode_attention,
# swiglu, argmax and the GEMV for every projection) beside stock, graph mode, one run per model,
# then the ratios with their intervals. Expected wall time on an H200: about 3.5 minutes (the
# weights are made once a model; 4 jobs of 2 variants each with three ledgers).
decode_native_model() {
    local model=$1 label=decode-native-$1-$$
    echo "### fourfold decode --model $model --variants stock,native --mode graph" >>"$OUT/decode_native.md"
    $BIN decode --model "$model" --variants stock,native --mode graph --ctx 512,2048 \
        --tokens "$DECODE_TOKENS" --device cuda --dtype bf16 --label "$label" --db "$DB" \
        --quiet --format md 2>&1 | tee -a "$OUT/decode_native.md" | grep -E "^\| decode|^records|error" | head -40
    local rc=${PIPESTATUS[0]}
    $BIN compare "$label" --baseline-variant stock --db "$DB" 2>&1 | tee -a "$OUT/decode_native.md" \
        | grep -E "decode|tokens/s|FASTER|SLOWER|SAME|refused|error" | head -30
    # the native step's kernels and launches, from the throughput records
    $BIN export --format json --run "$label" --db "$DB" >"/tmp/decode_native_$model.json" 2>/dev/null &&
        python3 - "/tmp/decode_native_$model.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["records"]:
    f = r.get("figures", {})
    if r["ledger"] == "throughput" and r["variant"] == "native" and "native_step" in f:
        s = f["native_step"]
        print(f"native step ctx {f.get('ctx')}: {f.get('tokens_per_s', 0):.1f} tokens/s, "
              f"{s['launches_per_step']} launches/step ({s['launches_counted']})")
        for k, v in s["kernels"].items():
            print(f"  {k}: {v['launches']} x  {' | '.join(v['plans'])[:150]}")
        break
PY
    return "$rc"
}
stage_decode_native() {
    : >"$OUT/decode_native.md"
    decode_native_model llama3-8b
    decode_native_model qwen3-30b-a3b
}

# One graph-replayed native step of llama3-8b under Nsight Compute (clocks as they are): the
# eager warm-up step before the capture, then the replays; the first ~2 steps' kernels are
# profiled (--launch-count: one step of llama3-8b is ~300 of them), so the summary gives the
# kernels a step launches and the µs of each. Only fourfold's kernels are named (the prefill is
# libtorch's). About 2-3 minutes.
stage_decode_profile() {
    local db=/tmp/decode-profile-$$.db
    timeout 180 ncu --clock-control none --target-processes all --section SpeedOfLight \
        --kernel-name regex:"rmsnorm|rope_kv|attention_kernel|combine_kernel|swiglu|argmax|gemv" \
        --launch-count ${PROFILE_LAUNCHES:-320} --print-summary per-kernel \
        $BIN decode --model llama3-8b --variants native --mode graph --ctx 512 --tokens 2 \
        --ledgers throughput --timeout 0.5 --device cuda --dtype bf16 --db "$db" --quiet \
        >"$OUT/decode_profile.txt" 2>&1
    echo "ncu exit $?"
    grep -E "^  [a-zA-Z_].*\(|Duration|Memory Throughput|DRAM Throughput|invocations|Invocations" \
        "$OUT/decode_profile.txt" | head -120
    rm -f "$db"
}

# The native kernels' GPU tests and the native decode's (tiny presets), quick after a build.
stage_decode_native_test() {
    timeout 150 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='rmsnorm_cuda.*:rope_kv_cuda.*:decode_attention_cuda.*:argmax_cuda.*:swiglu_cuda.*:decode_native_cuda.*:moe_cuda.*' \
        >"$OUT/decode_native_tests.txt" 2>&1
    local rc=$?
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK|Failure|Expected|Which is|error|rel L2" \
        "$OUT/decode_native_tests.txt" | head -80
    return $rc
}

# compute-sanitizer memcheck and racecheck over the decode kernels' gpu tests (fourfold's kernels
# only, kns: a substring of the mangled name), $OUT/decode_sanitizer.txt. About 2-4 minutes.
stage_decode_sanitizer() {
    local tool rc=0
    : >"$OUT/decode_sanitizer.txt"
    for tool in ${SANITIZER_TOOLS:-memcheck racecheck}; do
        timeout "${SANITIZER_LIMIT_S:-110}" compute-sanitizer --tool $tool --error-exitcode 9 \
            --kernel-name kns=fourfold $BUILD/tests/fourfold_gpu_tests \
            --gtest_filter='rmsnorm_cuda.*:rope_kv_cuda.*:decode_attention_cuda.*:argmax_cuda.*:swiglu_cuda.*' \
            >>"$OUT/decode_sanitizer.txt" 2>&1
        local r=$?
        echo "compute-sanitizer $tool: exit $r"
        [ $r -eq 0 ] || rc=$r
    done
    grep -E "ERROR SUMMARY|Invalid|Race|========= [A-Z]|FAILED" "$OUT/decode_sanitizer.txt" | sort | uniq -c | head -20
    return $rc
}
