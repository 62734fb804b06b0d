// `fourfold compare` and `fourfold report` as a user runs them: real runs compared A vs A, an
// fp32 run refused against a bf16 run until the difference is declared, the formats, and the
// exit codes (1 for a regression with --fail-on-regression, 2 for bad input or a refusal).
#include "compare_fixtures.hpp"
#include "test_helpers.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

using fourfold::json;
using namespace fourfold::testing;

namespace {

const char* k_quick = " --min-time 0.05 --timeout 0.5 --warmup 0.005 --quiet";

// Two runs of the same job with the same build: an A vs A comparison.
struct a_vs_a {
    temp_dir dir;
    std::string db = (dir / "f.db");
    a_vs_a() {
        for (const char* label : {"a1", "a2"}) {
            const auto r = run_cli(fmt::format("run --workload softmax --shape 1x1000 --dtype fp32 "
                                               "--label {} --db {}{}",
                                               label, db, k_quick),
                                   dir);
            EXPECT_EQ(r.code, 0) << r.err;
        }
    }
};

} // namespace

TEST(compare_cli, a_vs_a_prints_every_measured_ledger_with_no_treatment) {
    a_vs_a fx;
    const auto r = run_cli("compare a1 a2 --db " + fx.db, fx.dir);
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* needle :
         {"A (baseline): run 1 'a1'", "B (treated):  run 2 'a2'",
          "none: A and B have the same provenance", "op_time: microseconds per call",
          "correctness: against the float64 CPU reference", "memory: peaks in GiB",
          "verdict from the 95 % bootstrap CI", "never multiplied or chained"})
        EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
    const auto j = run_cli("compare a1 a2 --format json --db " + fx.db, fx.dir);
    ASSERT_EQ(j.code, 0) << j.err;
    const auto doc = json::parse(j.out);
    EXPECT_TRUE(doc["treatment"]["provenance"].empty());
    EXPECT_FALSE(
        doc["treatment"]["never_treatment"].empty()); // timestamps differ, and are set aside
    ASSERT_EQ(doc["op_time"].size(), 2u);             // stock and generic
    for (const auto& row : doc["op_time"]) {
        EXPECT_EQ(row["unit"], "µs");
        const auto v = row["verdict"].get<std::string>();
        EXPECT_TRUE(v == "FASTER" || v == "SLOWER" || v == "SAME" || v == "UNCLEAR") << v;
        EXPECT_TRUE(row["ratio_b_over_a"]["ci95_low"].is_number());
        EXPECT_TRUE(row["mann_whitney"]["p_two_sided"].is_number());
    }
    EXPECT_EQ(doc["correctness"].size(), 2u);
    EXPECT_EQ(doc["memory"].size(), 2u);
    const auto csv = run_cli("compare a1 a2 --format csv --db " + fx.db, fx.dir);
    ASSERT_EQ(csv.code, 0);
    EXPECT_EQ(csv.out.substr(0, csv.out.find(',')), "ledger");
    const auto md = run_cli("compare a1 a2 --format md --db " + fx.db, fx.dir);
    EXPECT_NE(md.out.find("### op_time"), std::string::npos);
    // the variants of one run, stock as the baseline
    const auto v = run_cli("compare a1 --baseline-variant stock --db " + fx.db, fx.dir);
    ASSERT_EQ(v.code, 0) << v.err;
    EXPECT_NE(v.out.find("stock -> generic"), std::string::npos);
    // a report of both runs in each format
    for (const char* file : {"r.html", "r.md", "r.csv"}) {
        const auto out = (fx.dir / file);
        const auto rep = run_cli("report a1 a2 -o " + out + " --db " + fx.db, fx.dir);
        ASSERT_EQ(rep.code, 0) << rep.err;
        EXPECT_GT(read_file(out).size(), 500u) << file;
    }
    EXPECT_NE(read_file(fx.dir / "r.html").find("<svg"), std::string::npos);
}

TEST(compare_cli, an_fp32_run_against_a_bf16_run_is_refused_unless_declared) {
    temp_dir dir;
    const auto db = (dir / "f.db");
    for (const char* t : {"fp32", "bf16"})
        ASSERT_EQ(run_cli(fmt::format("run --workload softmax --shape 1x1000 --dtype {} --label {} "
                                      "--ledgers op_time,correctness --db {}{}",
                                      t, t, db, k_quick),
                          dir)
                      .code,
                  0);
    const auto r = run_cli("compare fp32 bf16 --db " + db, dir);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(line_count(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("refused"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--allow-diff dtype"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("device_model"), std::string::npos) << r.err; // the names are listed
    EXPECT_TRUE(r.out.empty());
    const auto ok = run_cli("compare fp32 bf16 --allow-diff dtype --db " + db, dir);
    ASSERT_EQ(ok.code, 0) << ok.err;
    EXPECT_NE(ok.out.find("fp32 -> bf16"), std::string::npos);
    EXPECT_NE(ok.out.find("(declared: --allow-diff dtype)"), std::string::npos);
}

TEST(compare_cli, fail_on_regression_exits_1_on_slower_or_pass_to_fail_only) {
    temp_dir dir;
    auto s =
        fourfold::store::result_store::open(dir / "s.db", fourfold::store::open_mode::read_write);
    const auto j = job_of("softmax", "stock", "fp32", json{{"rows", 1}, {"vocab", 1000}});
    write_run(s, "base", provenance(),
              {op_time_record(j, lognormal_samples(10, 0.02, 50, 1)),
               correctness_record(j, "PASS", 1e-7)});
    write_run(s, "slower", provenance(),
              {op_time_record(j, lognormal_samples(13, 0.02, 50, 2)),
               correctness_record(j, "PASS", 1e-7)});
    write_run(s, "broken", provenance(),
              {op_time_record(j, lognormal_samples(10, 0.02, 50, 3)),
               correctness_record(j, "FAIL", 0.3)});
    write_run(s, "same", provenance(),
              {op_time_record(j, lognormal_samples(10, 0.02, 50, 4)),
               correctness_record(j, "PASS", 1e-7)});
    const auto db = " --db " + (dir / "s.db");
    EXPECT_EQ(run_cli("compare base slower" + db, dir).code, 0);
    const auto slower = run_cli("compare base slower --fail-on-regression" + db, dir);
    EXPECT_EQ(slower.code, 1);
    EXPECT_NE(slower.out.find("SLOWER"), std::string::npos);
    const auto broken = run_cli("compare base broken --fail-on-regression" + db, dir);
    EXPECT_EQ(broken.code, 1);
    EXPECT_NE(broken.out.find("PASS->FAIL"), std::string::npos);
    EXPECT_EQ(run_cli("compare base same --fail-on-regression" + db, dir).code, 0);
    // a regression smaller than the threshold is not one
    EXPECT_EQ(run_cli("compare base slower --fail-on-regression --threshold 50%" + db, dir).code,
              0);
}

TEST(compare_cli, bad_input_is_one_line_and_exit_2) {
    a_vs_a fx;
    const std::vector<std::pair<std::string, std::string>> cases{
        {"compare a1 a2 --threshold 2", "--threshold"},
        {"compare a1 a2 --allow-diff bogus", "bogus"},
        {"compare a1 a2 --format xml", "xml"},
        {"compare a1 nosuch", "nosuch"},
        {"compare a1", "--baseline-variant"},
        {"compare a1 a2 a1", "one or two runs"},
        {"compare a1 --baseline-variant fastest", "fastest"},
        {"compare a1 a2 --baseline-variant stock", "--baseline-variant"},
        {"report a1 -o r.pdf", ".pdf"},
        {"report a1 --format docx", "docx"},
        {"report nosuch", "nosuch"},
    };
    for (const auto& [args, needle] : cases) {
        const auto r = run_cli(args + " --db " + fx.db, fx.dir);
        EXPECT_EQ(r.code, 2) << args << ": " << r.err;
        EXPECT_EQ(line_count(r.err), 1) << args << ": " << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
    }
    const auto help = run_cli("compare --help", fx.dir);
    EXPECT_EQ(help.code, 0);
    for (const char* needle :
         {"device_model", "--allow-diff", "FASTER when the whole CI", "--fail-on-regression"})
        EXPECT_NE(help.out.find(needle), std::string::npos) << needle;
}
