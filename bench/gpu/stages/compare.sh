# Stages for compare and report (issue 5). Variables from h200.sh: BIN, DB, OUT, BUILD.
#
#   aa_1, aa_2     A vs A: the same suite run twice with the same build, labelled aa-1 and aa-2
#                  (the `article` suite where this build has it, else a CUDA sweep of linear
#                  shapes); compare_runs = both. They write $AA_DB (default build-gpu/aa.db: the
#                  build tree stays on the machine between calls, $OUT does not), so the two runs
#                  can go in separate calls when one call cannot hold both
#   compare        compares two labelled runs in $AA_DB (COMPARE_A, COMPARE_B; default aa-1 aa-2)
#                  and prints every ledger table and the FASTER/SLOWER share of timed records
#   compare_refuse a cuda run against a cpu run, and fp32 against bf16: both must be refused
#                  (exit 2) until --allow-diff names the differences
#   report         the HTML report of the A vs A runs, $OUT/report.html
AA_DB=${AA_DB:-$BUILD/aa.db}

aa_run() {
    local label=$1
    local suite_args
    if $BIN list --json | python3 -c 'import json,sys; sys.exit(0 if any(s["name"]=="article" for s in json.load(sys.stdin)["suites"]) else 1)'; then
        suite_args=(--suite article)
    else
        echo "no article suite in this build: A vs A over linear_decode bf16 shapes instead"
        suite_args=(--workload linear_decode --shape 1x768x2048,1x1024x4096,1x4096x4096,1x14336x4096,1x4096x14336,1x128256x4096
                    --dtype bf16)
    fi
    # The device call ends at 10 minutes; an article run takes about 9 min 20 s on an H200. Past
    # AA_LIMIT_S it is interrupted (SIGINT: exit 130, the run marked interrupted, every record
    # measured so far kept) rather than killed with the call.
    timeout -s INT "${AA_LIMIT_S:-580}" \
        $BIN run "${suite_args[@]}" --device cuda --label "$label" --db "$AA_DB" --quiet >"$OUT/run-$label.txt" 2>&1
    echo "run $label: exit $? ($(tail -2 "$OUT/run-$label.txt" | head -1))"
}
stage_aa_1() { aa_run aa-1; }
stage_aa_2() { aa_run aa-2; }
stage_compare_runs() { aa_run aa-1 && aa_run aa-2; }

stage_compare() {
    local a=${COMPARE_A:-aa-1} b=${COMPARE_B:-aa-2}
    $BIN compare "$a" "$b" --db "$AA_DB" >"$OUT/compare.txt" 2>&1
    echo "compare $a $b: exit $?"
    $BIN compare "$a" "$b" --db "$AA_DB" --format json >"$OUT/compare.json" 2>>"$OUT/compare.txt"
    grep -E "^(throughput|op_time|correctness|memory):|^  (throughput|op_time|correctness):" "$OUT/compare.txt"
    python3 - "$OUT/compare.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
timed = doc["op_time"] + doc["throughput"]
called = [r for r in timed if r["verdict"] in ("FASTER", "SLOWER")]
by = {v: sum(1 for r in timed if r["verdict"] == v) for v in ("FASTER", "SLOWER", "SAME", "UNCLEAR")}
share = 100.0 * len(called) / len(timed) if timed else float("nan")
print(f"timed records: {len(timed)}; {by}; FASTER or SLOWER: {len(called)} = {share:.1f} % "
      f"(done when < 5 % for A vs A); treatment fields: {len(doc['treatment']['provenance'])}")
for r in called[:20]:
    print("  ", r["verdict"], r["a"]["workload"], r["a"]["variant"], r["a"]["dtype"],
          json.dumps(r["a"]["params"]), "ratio", round(r["ratio_b_over_a"]["value"], 4),
          [round(x, 4) for x in (r["ratio_b_over_a"]["ci95_low"], r["ratio_b_over_a"]["ci95_high"])])
PY
}

stage_compare_refuse() {
    $BIN run --workload softmax --shape 1x128256 --dtype fp32 --device cuda --ledgers op_time \
        --label refuse-cuda-fp32 --db "$DB" --quiet >/dev/null 2>&1
    $BIN run --workload softmax --shape 1x128256 --dtype bf16 --device cuda --ledgers op_time \
        --label refuse-cuda-bf16 --db "$DB" --quiet >/dev/null 2>&1
    $BIN run --workload softmax --shape 1x128256 --dtype fp32 --device cpu --ledgers op_time \
        --label refuse-cpu-fp32 --db "$DB" --quiet --min-time 0.2 >/dev/null 2>&1
    local pair
    for pair in "refuse-cuda-fp32 refuse-cuda-bf16" "refuse-cpu-fp32 refuse-cuda-fp32"; do
        # shellcheck disable=SC2086
        $BIN compare $pair --db "$DB" >/dev/null 2>"$OUT/refuse.err"
        echo "compare $pair: exit $? (2 = refused): $(cat "$OUT/refuse.err")"
    done
    $BIN compare refuse-cuda-fp32 refuse-cuda-bf16 --allow-diff dtype --db "$DB" >/dev/null 2>&1
    echo "with --allow-diff dtype: exit $? (0 expected)"
    $BIN compare refuse-cpu-fp32 refuse-cuda-fp32 --db "$DB" \
        --allow-diff device,device_model,device_instance,device_config,driver,cuda,threads,timing \
        >/dev/null 2>"$OUT/refuse.err"
    echo "cpu vs cuda with the differences declared: exit $? $(cat "$OUT/refuse.err")"
}

stage_report() {
    local a=${COMPARE_A:-aa-1} b=${COMPARE_B:-aa-2}
    $BIN report "$a" "$b" --db "$AA_DB" -o "$OUT/report.html" && ls -la "$OUT/report.html"
}

# Between-process drift of the records an A vs A pair called: the MoE expert step (its generic
# variant syncs with the host) and the small GEMVs, each run three times in three processes
# (labels drift-moe-1..3 and drift-linear-1..3, op_time only), then compared 1 vs 2 and 1 vs 3
# with the host round trip measured beside every job. Prints each pair's verdicts and the round
# trips.
stage_drift() {
    local i pair
    for i in 1 2 3; do
        $BIN run --workload moe_decode --param part=gate_up,ffn --param tokens=1,8 --dtype bf16 --device cuda \
            --ledgers op_time --label drift-moe-$i --db "$AA_DB" --quiet >/dev/null
        echo "drift-moe-$i: $?"
        $BIN run --workload linear_decode --shape 1x1152x6912,1x2048x2560,1x2560x2048,1x5760x2880,1x4096x4096 \
            --dtype bf16 --device cuda --ledgers op_time --label drift-linear-$i --db "$AA_DB" --quiet >/dev/null
        echo "drift-linear-$i: $?"
    done
    for pair in "drift-moe-1 drift-moe-2" "drift-moe-1 drift-moe-3" "drift-linear-1 drift-linear-2" \
        "drift-linear-1 drift-linear-3"; do
        # shellcheck disable=SC2086
        $BIN compare $pair --db "$AA_DB" --format json >"$OUT/drift.json" 2>&1
        echo "compare $pair: exit $?"
        python3 - "$OUT/drift.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["op_time"]:
    rt = r.get("host_round_trip_us", {})
    print(f'  {r["verdict"]:8s} {r["a"]["workload"]:13s} {r["a"]["variant"]:8s} '
          f'{json.dumps(r["a"]["params"], separators=(",", ":")):70s} ratio {r["ratio_b_over_a"]["value"]:.3f} '
          f'noise {100 * r["noise_a"]:.1f}/{100 * r["noise_b"]:.1f} % rt {rt.get("a", 0):.1f}/{rt.get("b", 0):.1f} us')
PY
    done
}
