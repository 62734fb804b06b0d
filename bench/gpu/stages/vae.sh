# Stages for the VAE workloads (issue 14). Variables from h200.sh: BIN, DB, OUT, BUILD.
#
#   vae_tests      the gpu tests of the VAE workloads (tests/test_vae_cuda.cpp), with their time
#   vae_roundtrip  E6 on the H200: the wan2.1 round trip in fp32 with TF32 off and on, and bf16,
#                  every pad variant, correctness + op_time + memory
#   vae_decode_bf16 E5's bf16 decode, every pad variant, throughput (at least 3 whole decodes)

stage_vae_tests() {
    local t0=$SECONDS
    timeout 300 $BUILD/tests/fourfold_gpu_tests --gtest_filter='vae_cuda.*' >"$OUT/vae_tests.txt" 2>&1
    local rc=$?
    echo "vae gpu tests: exit $rc after $((SECONDS - t0)) s"
    grep -E "^\[  (PASSED|FAILED) |^\[       OK|vae_roundtrip cuda|Failure|Expected|Which is" "$OUT/vae_tests.txt" | head -30
    return $rc
}

stage_vae_roundtrip() {
    local t0=$SECONDS
    timeout -s INT 240 $BIN run --workload vae_roundtrip --dtype fp32 --param tf32=0,1 --device cuda \
        --min-time 0.1 --label vae-roundtrip --db "$DB" --quiet >"$OUT/vae_roundtrip.txt" 2>&1
    timeout -s INT 120 $BIN run --workload vae_roundtrip --dtype bf16 --device cuda \
        --min-time 0.1 --label vae-roundtrip-bf16 --db "$DB" --quiet >>"$OUT/vae_roundtrip.txt" 2>&1
    echo "vae roundtrip: exit $? after $((SECONDS - t0)) s"
    grep -E "^vae_roundtrip|^records" "$OUT/vae_roundtrip.txt" | head -60
}

stage_vae_decode_bf16() {
    local t0=$SECONDS
    timeout -s INT 240 $BIN run --workload vae_decode --dtype bf16 --device cuda --ledgers throughput \
        --label vae-decode-bf16 --db "$DB" --quiet >"$OUT/vae_decode.txt" 2>&1
    echo "vae decode bf16: exit $? after $((SECONDS - t0)) s"
    grep -E "^vae_decode|^records|frames/s" "$OUT/vae_decode.txt" | head -30
}
