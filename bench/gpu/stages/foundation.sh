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
