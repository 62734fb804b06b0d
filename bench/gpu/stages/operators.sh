# Stages for the operator ledger (issue 3). Variables from h200.sh: BIN, DB, OUT, BUILD.
# Files they add to $OUT: article.txt (the suite's tables and speed-up lines) and
# performance_table.md (the figures docs/performance.md records, beside the baseline ones).

# The article suite on the GPU: every operator experiment, default timing (CUDA graph over
# rotated inputs, cold cache). Budget: under 10 minutes (about 4 expected).
# ARTICLE_MIN_TIME (seconds) shortens every job's minimum time to fit one device call;
# ARTICLE_LIMIT_S interrupts the run (SIGINT: its records are kept, the run reads unfinished).
stage_article() {
    local t0=$SECONDS rc
    local min_time=()
    [ -n "${ARTICLE_MIN_TIME:-}" ] && min_time=(--min-time "$ARTICLE_MIN_TIME")
    # ARTICLE_WORKLOADS narrows the suite to some of its workloads (a run cut short, resumed)
    [ -n "${ARTICLE_WORKLOADS:-}" ] && min_time+=(--workload "$ARTICLE_WORKLOADS")
    timeout -s INT "${ARTICLE_LIMIT_S:-590}" $BIN run --suite article --device cuda \
        --label article-h200 --db "$DB" --quiet "${min_time[@]}" >"$OUT/article.txt" 2>&1
    rc=$?
    echo "article suite: exit $rc after $((SECONDS - t0)) s"
    grep -E "^records:|^device" "$OUT/article.txt"
    sed -n '/^speed-up of/,/^$/p' "$OUT/article.txt"
    return $rc
}

# The native kernels' rows of the article run beside stock (bench/gpu/native_table.py) and the
# run's compare against its stock variant.
stage_article_native() {
    $BIN export --format json --run article-h200 --db "$DB" >/tmp/article-h200.json
    python3 bench/gpu/native_table.py /tmp/article-h200.json | tee "$OUT/native_table.md" | tail -16
    $BIN compare article-h200 --baseline-variant stock --db "$DB" >"$OUT/compare.txt" 2>&1
    echo "compare article-h200 --baseline-variant stock: exit $?"
}

# The same key figures in the other timing modes of the baseline's kernel-time table: graph
# over one input set (hot: weights may sit in L2) and per-call events with an L2 flush.
# About a minute.
stage_operator_modes() {
    local mode cache label
    for mode_cache in graph:hot event:cold; do
        mode=${mode_cache%%:*}
        cache=${mode_cache##*:}
        label=ops-$mode-$cache
        $BIN run --workload softmax --shape 1x128256 --dtype fp32 --device cuda --timing $mode \
            --cache $cache --ledgers op_time --label $label --db "$DB" --quiet >/dev/null
        $BIN run --workload linear_decode --shape 1x4096x4096,1x1024x4096,1x14336x4096,1x128256x4096,1x768x2048 \
            --dtype bf16 --device cuda --timing $mode --cache $cache --ledgers op_time --label $label \
            --db "$DB" --quiet >/dev/null
        $BIN run --workload moe_decode --param part=gate_up --param tokens=1,8 --dtype bf16 --device cuda --timing $mode \
            --cache $cache --ledgers op_time --label $label --db "$DB" --quiet >/dev/null
        $BIN run --workload pad --shape 1x128x3x64x64,1x96x5x130x130 --dtype bf16 --device cuda \
            --timing $mode --cache $cache --ledgers op_time --label $label --db "$DB" --quiet >/dev/null
        echo "$label done"
    done
}

# The table for docs/performance.md, from the runs above (run stage_article first).
stage_performance_table() {
    $BIN export --format json --db "$DB" | python3 bench/gpu/performance_table.py >"$OUT/performance_table.md"
    sed -n '/^speed-up of/,/^$/p' "$OUT/article.txt" >>"$OUT/performance_table.md"
    cat "$OUT/performance_table.md"
}
