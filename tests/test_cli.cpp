// Runs the real `fourfold` binary: bad input gets one line and exit code 2 and never touches the
// store; a good run writes records the JSON export shows with units, status, params and provenance.
#include "fourfold/core/json.hpp"
#include "test_helpers.hpp"

#include <cstdlib>
#include <gtest/gtest.h>

using fourfold::json;
using fourfold::testing::run_cli;
using fourfold::testing::temp_dir;

namespace {


int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

const char* k_quick = " --min-time 0.02 --timeout 0.3 --warmup 0.005 --quiet";

} // namespace

TEST(cli, a_good_run_stores_records_that_export_shows_with_their_provenance) {
    temp_dir dir;
    const auto db = (dir / "f.db");
    const auto r = run_cli("run --workload softmax --shape 2x1000 --dtype fp32,bf16 --label first --db " + db + k_quick, dir);
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("median [µs]"), std::string::npos);
    EXPECT_NE(r.out.find("PSNR [dB]"), std::string::npos);
    EXPECT_NE(r.out.find("driver [GiB]"), std::string::npos);
    EXPECT_NE(r.out.find("store: " + db), std::string::npos);
    const auto e = run_cli("export --format json --run first --db " + db, dir);
    ASSERT_EQ(e.code, 0) << e.err;
    const auto doc = json::parse(e.out);
    ASSERT_EQ(doc["runs"].size(), 1u);
    const auto& prov = doc["runs"][0]["provenance"];
    for (const char* k : {"fourfold", "libtorch", "host", "device", "settings", "bandwidth"})
        EXPECT_TRUE(prov.contains(k)) << k;
    EXPECT_TRUE(prov["fourfold"].contains("git_sha"));
    EXPECT_TRUE(prov["libtorch"].contains("show_config"));
    std::map<std::string, int> per_ledger;
    for (const auto& rec : doc["records"]) {
        ++per_ledger[rec["ledger"].get<std::string>()];
        EXPECT_EQ(rec["status"], "ok");
        EXPECT_EQ(rec["params"]["rows"], 2);
        EXPECT_EQ(rec["params"]["vocab"], 1000);
        EXPECT_FALSE(rec["unit"].get<std::string>().empty());
    }
    EXPECT_EQ(per_ledger["op_time"], 4); // 2 dtypes x 2 variants
    EXPECT_EQ(per_ledger["correctness"], 4);
    EXPECT_EQ(per_ledger["memory"], 4);
    const auto csv = run_cli("export --format csv --db " + db, dir);
    EXPECT_EQ(csv.code, 0);
    EXPECT_EQ(lines(csv.out), 13);
}

TEST(cli, ledgers_flag_runs_only_that_pass) {
    temp_dir dir;
    const auto db = (dir / "f.db");
    ASSERT_EQ(run_cli("run --workload linear_decode --shape 1x64x64 --ledgers correctness --db " + db + k_quick, dir).code, 0);
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    for (const auto& rec : doc["records"]) EXPECT_EQ(rec["ledger"], "correctness");
    EXPECT_EQ(doc["records"].size(), 2u);
}

TEST(cli, bad_input_is_one_line_exit_2_and_leaves_the_store_untouched) {
    temp_dir dir;
    const auto db = (dir / "f.db");
    ASSERT_EQ(run_cli("run --workload softmax --shape 1x100 --ledgers correctness --db " + db + k_quick, dir).code, 0);
    const auto before = fourfold::testing::read_file(db);
    const std::vector<std::pair<std::string, std::string>> cases{
        {"run --workload nosuch", "nosuch"},
        {"run --workload softmax --variants fastest", "fastest"},
        {"run --workload softmax --device gpu7", "gpu7"},
        {"run --workload softmax --device cuda:3", "cuda:3"},
        {"run --workload softmax --dtype fp33", "fp33"},
        {"run --workload softmax --dtype fp64", "fp64"},
        {"run --workload linear_decode --shape 1x0x5", "1x0x5"},
        {"run --workload linear_decode --shape abc", "abc"},
        {"run --workload linear_decode --shape -1x4x4", "-1"},
        {"run --workload linear_decode --shape 1x4x99999999999999999999999", "99999999999999999999999"},
        {"run --workload softmax --shape 1048576x2147483648", "needs at least"},
        {"run --workload softmax --param nosuch=1", "nosuch"},
        {"run --workload softmax --param rows=0", "rows=0"},
        {"run --workload softmax --timing graph", "graph"},
        {"run --workload softmax --ledgers speed", "speed"},
        {"run --suite nosuch", "nosuch"},
        {"run", "--suite"},
        {"run --workload softmax --min-time -1", "--min-time"},
        {"run --workload softmax --bogus-flag", "bogus"},
        {"export --format xml", "xml"},
        {"export --format json --run 999", "999"},
    };
    for (const auto& [args, needle] : cases) {
        const auto r = run_cli(args + " --db " + db, dir);
        EXPECT_EQ(r.code, 2) << args << ": " << r.err;
        EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
        EXPECT_EQ(fourfold::testing::read_file(db), before) << args << " changed the store";
    }
}

TEST(cli, a_dtype_the_device_cannot_hold_is_bad_input) {
    temp_dir dir;
    // float8 exists only from libtorch 2.1; where it exists the CPU holds it, so skip there
    const auto r = run_cli("run --workload softmax --dtype fp8_e4m3fn --db " + (dir / "f.db"), dir);
    if (r.err.find("not supported on device cpu") == std::string::npos &&
        r.err.find("no dtype") != std::string::npos) {
        EXPECT_EQ(r.code, 2); // softmax itself has no fp8
        return;
    }
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_FALSE(fourfold::path_exists(dir / "f.db"));
}

TEST(cli, corrupt_and_unwritable_stores_are_refused_without_writing) {
    temp_dir dir;
    const auto bad = dir / "corrupt.db";
    const std::string garbage = "this is not a database, it is a text file\n";
    fourfold::testing::write_file(bad, garbage);
    const auto r = run_cli("run --workload softmax --shape 1x10 --db " + bad + k_quick, dir);
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("corrupt.db"), std::string::npos);
    EXPECT_EQ(fourfold::testing::read_file(bad), garbage);
    const auto w = run_cli("run --workload softmax --shape 1x10 --db /nonexistent/dir/x.db" + std::string(k_quick), dir);
    EXPECT_EQ(w.code, 2);
    EXPECT_NE(w.err.find("/nonexistent/dir/x.db"), std::string::npos);
    const auto x = run_cli("export --format json --db " + (dir / "missing.db"), dir);
    EXPECT_EQ(x.code, 2);
    EXPECT_FALSE(fourfold::path_exists(dir / "missing.db"));
}

TEST(cli, env_and_list_describe_the_build_in_json) {
    temp_dir dir;
    const auto env = run_cli("env --json --device cpu", dir);
    ASSERT_EQ(env.code, 0) << env.err;
    const auto e = json::parse(env.out);
    EXPECT_TRUE(e["fourfold"].contains("compiler"));
    EXPECT_TRUE(e["fourfold"].contains("build_type"));
    EXPECT_TRUE(e["host"].contains("cpu_model"));
    EXPECT_EQ(e["devices"][0]["kind"], "cpu");
    const auto list = run_cli("list --json", dir);
    ASSERT_EQ(list.code, 0);
    const auto l = json::parse(list.out);
    std::set<std::string> names;
    for (const auto& w : l["workloads"]) {
        names.insert(w["name"]);
        for (const auto& v : w["variants"]) EXPECT_NE(v["name"], "nan_one"); // test-only variants stay in tests
    }
    EXPECT_TRUE(names.count("softmax") && names.count("linear_decode"));
    EXPECT_EQ(l["ledgers"].size(), 4u);
    EXPECT_EQ(run_cli("--help", dir).code, 0);
}
