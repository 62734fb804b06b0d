# Stages for issue 16 on the GPU. Variables from h200.sh: BIN, DB, OUT, BUILD.
#
#   faults_in_suite   the article suite's softmax and pad jobs with the two GPU faults between
#                     them (FOURFOLD_TEST_FAULTS=1: a sticky illegal address, a cudaMalloc larger
#                     than the card), isolated: the faults are failed records with their reasons,
#                     every other job is measured; then the same jobs without the faults, once
#                     isolated and once not, for what isolation costs per job group (the suite's
#                     bound: at most 10 % of its time). About 4 minutes.

stage_faults_in_suite() {
    local t0=$SECONDS
    FOURFOLD_TEST_FAULTS=1 timeout 150 $BIN run --suite article --workload softmax,fault,pad \
        --device cuda --db "$DB" --label s16-faults --quiet >"$OUT/faults_in_suite.txt" 2>&1
    echo "article softmax,fault,pad with faults, isolated: exit $? after $((SECONDS - t0)) s"
    grep -E "^fault |^records|failed" "$OUT/faults_in_suite.txt" | head -12
    local t1=$SECONDS
    timeout 120 $BIN run --suite article --workload softmax,pad --device cuda --isolate \
        --db "$DB" --label s16-isolated --quiet >>"$OUT/faults_in_suite.txt" 2>&1
    local isolated=$((SECONDS - t1))
    local t2=$SECONDS
    timeout 120 $BIN run --suite article --workload softmax,pad --device cuda --no-isolate \
        --db "$DB" --label s16-in-process --quiet >>"$OUT/faults_in_suite.txt" 2>&1
    local in_process=$((SECONDS - t2))
    local groups
    groups=$($BIN export --format json --run s16-isolated --db "$DB" 2>/dev/null | python3 -c \
        'import json,sys; r=json.load(sys.stdin)["records"]; print(len({(x["workload"], x["case_key"]) for x in r}))')
    echo "softmax,pad: isolated ${isolated} s, in-process ${in_process} s, ${groups} job groups"
}
