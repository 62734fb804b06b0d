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
