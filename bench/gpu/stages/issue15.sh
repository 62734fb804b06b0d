# Issue 15 in one device call (after a build): the gpu tests of the new kernels, the op-level
# native variants of moe_decode and fp8_linear beside stock, and the native decode of llama3-8b
# and qwen3-30b-a3b beside stock at ctx 512, graph mode, with their compare. Every step has its
# own time limit so that the whole fits one call (about 6 minutes). Variables from h200.sh.

stage_issue15() {
    local t0=$SECONDS
    timeout 60 $BUILD/tests/fourfold_gpu_tests \
        --gtest_filter='argmax_cuda.*:decode_attention_cuda.*:decode_native_cuda.*:gemv_fp8*:moe_cuda.*:rmsnorm_cuda.*:rope_kv_cuda.*:swiglu_cuda.*' \
        >"$OUT/i15_tests.txt" 2>&1
    echo "gpu tests: exit $? after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure$" "$OUT/i15_tests.txt" | head -20
    : >"$OUT/i15.txt"
    timeout 30 $BIN run --workload moe_decode --param tokens=1,8 --param part=ffn,gate_up --dtype bf16 \
        --variants stock,native --device cuda --ledgers op_time,correctness --min-time 0.1 \
        --db "$DB" --label i15-moe --quiet >>"$OUT/i15.txt" 2>&1
    echo "moe_decode: exit $? after $((SECONDS - t0)) s"
    timeout 30 $BIN run --workload fp8_linear --shape 1x4096x4096,1x14336x4096,1x4096x14336,1x128256x4096,8x4096x4096 \
        --dtype bf16 --variants bf16,native_bf16,native_fp8_tensor,native_fp8_row --device cuda \
        --ledgers op_time,correctness --min-time 0.1 --db "$DB" --label i15-fp8 --quiet >>"$OUT/i15.txt" 2>&1
    echo "fp8_linear: exit $? after $((SECONDS - t0)) s"
    grep -E "^(moe_decode|fp8_linear) .*(graph|event|PASS|FAIL)" "$OUT/i15.txt" | head -60
    local m
    for m in llama3-8b qwen3-30b-a3b; do
        local limit=90
        [ $m = qwen3-30b-a3b ] && limit=80
        timeout $limit $BIN decode --model $m --variants stock,native --mode graph --ctx 512 --tokens 32 \
            --device cuda --dtype bf16 --ledgers throughput,correctness --db "$DB" --label i15-$m \
            --quiet >>"$OUT/i15.txt" 2>&1
        echo "decode $m: exit $? after $((SECONDS - t0)) s"
        $BIN compare i15-$m --baseline-variant stock --db "$DB" >>"$OUT/i15.txt" 2>&1
    done
    grep -E "^decode|tokens/s|FASTER|SLOWER|SAME" "$OUT/i15.txt" | head -40
}
