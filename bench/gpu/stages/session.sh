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
