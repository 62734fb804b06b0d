// Every kind of bad input the CLI can receive, as a table: shapes, dtypes, devices, parameters,
// settings, paths, labels, run ids, model directories. Each is one line on stderr that names the
// value and says what would be valid, exit 2, and a store that is byte for byte what it was
// (no -wal or -shm left beside it either).
#include "compare_fixtures.hpp"
#include "test_helpers.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <gtest/gtest.h>

using fourfold::json;
using namespace fourfold::testing;

namespace {

struct bad_case {
    std::string args;  // {db}: the store, {dir}: the temporary directory
    std::string value; // the stderr line names this value...
    std::string valid; // ...and says this about what would be valid
};

// One store with two runs, "a" and "b", and the files the model-directory cases read.
class bad_input_table : public ::testing::Test {
  protected:
    void SetUp() override {
        m_db = m_dir / "f.db";
        auto s = fourfold::store::result_store::open(m_db, fourfold::store::open_mode::read_write);
        for (const char* label : {"a", "b"}) {
            const auto job = job_of("softmax", "stock", "fp32", json{{"rows", 1}, {"vocab", 1000}});
            write_run(s, label, provenance(),
                      {op_time_record(job, lognormal_samples(10, 0.01, 30, 1)),
                       correctness_record(job, "PASS", 1e-6)});
        }
        write_file(m_dir / "text.db", "this is not a database\n");
        fourfold::make_directory(m_dir / "empty_model");
        fourfold::make_directory(m_dir / "bad_json");
        write_file(m_dir / "bad_json/config.json", "{\"model_type\": ");
        fourfold::make_directory(m_dir / "no_fields");
        write_file(m_dir / "no_fields/config.json", "{\"model_type\": \"llama\"}");
        fourfold::make_directory(m_dir / "config_only");
        write_file(m_dir / "config_only/config.json",
                   run_cli("decode --model tiny-llama --print-config", m_dir).out);
    }

    void check(const std::vector<bad_case>& cases) {
        const auto before = read_file(m_db);
        const auto files = listing();
        for (const auto& c : cases) {
            auto args = c.args;
            for (const auto& [key, value] :
                 {std::pair<std::string, std::string>{"{db}", m_db}, {"{dir}", m_dir.path()}})
                for (auto at = args.find(key); at != std::string::npos; at = args.find(key))
                    args.replace(at, key.size(), value);
            const auto r = run_cli(args, m_dir);
            EXPECT_EQ(r.code, 2) << args << "\n" << r.err << r.out;
            EXPECT_EQ(line_count(r.err), 1) << args << "\n" << r.err;
            EXPECT_NE(r.err.find(c.value), std::string::npos) << args << "\n" << r.err;
            EXPECT_NE(r.err.find(c.valid), std::string::npos) << args << "\n" << r.err;
            EXPECT_EQ(r.err.find("fourfold: error: "), 0u) << args << "\n" << r.err;
            EXPECT_EQ(read_file(m_db), before) << args << " changed the store";
            EXPECT_EQ(listing(), files) << args << " left a file behind";
        }
    }

  protected:
    std::vector<std::string> listing() const {
        auto names = fourfold::list_directory(m_dir.path());
        names.erase(std::remove_if(names.begin(), names.end(),
                                   [](const std::string& n) {
                                       return n == "stdout.txt" || n == "stderr.txt";
                                   }),
                    names.end());
        std::sort(names.begin(), names.end());
        return names;
    }

    temp_dir m_dir;
    std::string m_db;
};

} // namespace

TEST_F(bad_input_table, shapes) {
    check({
        {"run --workload linear_decode --shape 1x0x5 --db {db}", "1x0x5", "must be >= 1"},
        {"run --workload linear_decode --shape abc --db {db}", "abc", "takes 3"},
        {"run --workload linear_decode --shape 1x2x3x4 --db {db}", "1x2x3x4", "takes 3"},
        {"run --workload linear_decode --shape -1x4x4 --db {db}", "-1", "each dimension >= 1"},
        {"run --workload linear_decode --shape 1x4x99999999999999999999999 --db {db}",
         "99999999999999999999999", "each dimension >= 1"},
        {"run --workload linear_decode --shape 1x4x4x --db {db}", "1x4x4x", "takes 3"},
        {"run --workload softmax --shape 1048576x2147483648 --db {db}", "needs at least",
         "choose a smaller shape"},
        {"run --workload softmax --shape 1x100 --param vocab=5 --db {db}", "vocab", "give it once"},
        {"run --workload softmax --shape 1x100,,1x200 --db {db}", "1x100,,1x200", "none empty"},
        {"run --workload pad --shape 1x2 --suite smoke --db {db}", "--shape",
         "a suite fixes its own"},
        {"run --suite smoke --workload nosuch --db {db}", "'nosuch'", "its workloads"},
    });
}

TEST_F(bad_input_table, dtypes_and_devices) {
    check({
        {"run --workload softmax --dtype fp33 --db {db}", "fp33", "valid:"},
        {"run --workload softmax --dtype fp64 --db {db}", "fp64", "valid: fp32"},
        {"run --workload softmax --dtype fp32,,bf16 --db {db}", "fp32,,bf16", "none empty"},
        {"run --suite smoke --dtype fp32 --db {db}", "--dtype", "--workload"},
        {"run --workload softmax --device gpu7 --db {db}", "gpu7", "valid:"},
        {"run --workload softmax --device cuda:3 --db {db}", "cuda:3", "valid"},
        {"run --workload softmax --device cuda:x --db {db}", "cuda:x", "valid:"},
        {"decode --model tiny-llama --device cuda:7 --db {db}", "cuda:7", "valid"},
        {"decode --model tiny-llama --dtype fp8_e4m3fn --db {db}", "fp8_e4m3fn", "valid:"},
        {"env --device nosuch", "nosuch", "valid:"},
    });
}

TEST_F(bad_input_table, workloads_variants_and_parameters) {
    check({
        {"run --workload nosuch --db {db}", "nosuch", "valid:"},
        {"run --workload softmax --variants fastest --db {db}", "fastest", "valid: stock"},
        {"run --workload softmax --variants stock,,generic --db {db}", "stock,,generic",
         "none empty"},
        {"run --workload softmax --param nosuch=1 --db {db}", "nosuch", "valid: rows"},
        {"run --workload softmax --param rows=0 --db {db}", "rows=0", "valid: 1.."},
        {"run --workload softmax --param rows=abc --db {db}", "rows=abc", "valid: 1.."},
        {"run --workload softmax --param rows=5..1 --db {db}", "rows=5..1", "ascending"},
        {"run --workload softmax --param rows --db {db}", "rows", "NAME=VALUE"},
        {"run --workload softmax --param rows=1 --param rows=2 --db {db}", "rows", "one list"},
        {"run --workload softmax --param rows=1,,2 --db {db}", "rows=1,,2", "none empty"},
        {"run --workload linear_decode --param bias=maybe --db {db}", "bias=maybe",
         "valid: true, false"},
        {"run --workload moe_decode --param part=all --db {db}", "part=all", "valid: ffn"},
        {"run --workload moe_decode --param experts=8 --param top_k=9 --db {db}", "top_k=9",
         "valid: top_k in 1..8"},
        {"run --workload softmax --ledgers speed --db {db}", "speed", "valid:"},
        {"run --workload softmax --ledgers throughput --db {db}", "throughput",
         "softmax measures op_time"},
        {"run --suite nosuch --db {db}", "nosuch", "valid:"},
        {"run --db {db}", "--suite", "--workload"},
    });
}

TEST_F(bad_input_table, commands) {
    check({
        {"runn --workload softmax --db {db}", "command 'runn' is unknown",
         "valid: env, list, run, runs, export, compare, report, decode"},
        {"--db {db}", "'--db' is not an option of 'fourfold'", "give a command first (env, list"},
        {"--db {db} runs", "' come before the command",
         "options go after it: 'fourfold runs --db "},
        // (one of them no option of that command either: that one is named)
        {"--frob --db {db} runs", "'--frob' is not an option of 'fourfold runs'",
         "see 'fourfold runs --help'"},
        {"", "a command is needed", "see 'fourfold --help'"},
        // (the words CLI11 did not expect, in the command line's order)
        {"runs --limit -3 --db {db}",
         "'--limit -3' are not options or arguments of 'fourfold runs'",
         "see 'fourfold runs --help'"},
    });
}

TEST_F(bad_input_table, settings) {
    check({
        {"run --workload softmax --timing fast --db {db}", "fast", "valid: host"},
        {"run --workload softmax --cache warm --db {db}", "warm", "valid: hot, cold"},
        {"run --workload softmax --min-time -1 --db {db}", "-1", "(0, 86400]"},
        {"run --workload softmax --min-time abc --db {db}", "abc", "(0, 86400]"},
        {"run --workload softmax --timeout 0 --db {db}", "--timeout", "(0, 86400]"},
        {"run --workload softmax --min-time 5 --timeout 1 --db {db}", "--min-time 5",
         "--min-time <= --timeout"},
        {"run --workload softmax --warmup x --db {db}", "--warmup 'x'", "(0, 86400]"},
        {"run --workload softmax --max-rel-stdev 2 --db {db}", "--max-rel-stdev '2'", "(0, 1)"},
        {"run --workload softmax --min-samples 0 --db {db}", "--min-samples '0'", "1..1000000"},
        {"run --workload softmax --seed -1 --db {db}", "-1", "0..18446744073709551615"},
        {"run --workload softmax --seed 18446744073709551616 --db {db}", "18446744073709551616",
         "0..18446744073709551615"},
        {"run --workload softmax --threads 0 --db {db}", "--threads '0'", "1..4096"},
        {"run --workload softmax --threads many --db {db}", "many", "1..4096"},
        {"run --workload softmax --format xml --db {db}", "xml", "valid: text, md, csv, json"},
        {"run --workload softmax --label x --label y --db {db}", "--label", "give it once"},
        {"run --workload softmax --db {db} --db {dir}/other.db", "--db", "give it once"},
        {"run --workload softmax --bogus-flag --db {db}", "--bogus-flag", "--help"},
        {"run --workload softmax --db {db} --shape", "--shape", "--help"},
        {"decode --model tiny-llama --init-seed -5 --db {db}", "-5", "valid: 0.."},
        {"decode --model tiny-llama --init-seed abc --db {db}", "abc", "valid: 0.."},
        {"decode --model tiny-llama --min-time 3 --timeout 1 --db {db}", "--min-time 3",
         "--min-time <= --timeout"},
        {"compare a b --threshold abc --db {db}", "abc", "like 2%"},
        {"compare a b --allow-diff nosuch --db {db}", "nosuch", "valid:"},
        {"compare a b --allow-diff dtype,,device --db {db}", "dtype,,device", "none empty"},
        {"compare a b --format yaml --db {db}", "yaml", "valid: text"},
        {"compare a b --fail-on-regression --fail-on-regression --db {db}", "--fail-on-regression",
         "give it once"},
    });
}

TEST_F(bad_input_table, labels) {
    check({
        {"run --workload softmax --label \"$(printf 'a\\nb')\" --db {db}", "--label",
         "printable characters on one line"},
        {"run --workload softmax --label \"$(printf 'a\\tb')\" --db {db}", "0x09",
         "printable characters on one line"},
        {"run --workload softmax --label \"$(printf 'a\\033[31mb')\" --db {db}", "0x1b",
         "printable characters on one line"},
        {"run --workload softmax --label 42 --db {db}", "'42'", "a label with a letter"},
        {"run --workload softmax --label '' --db {db}", "--label", "give a value"},
        {"decode --model tiny-llama --label 7 --db {db}", "'7'", "a label with a letter"},
    });
}

TEST_F(bad_input_table, paths) {
    check({
        {"run --workload softmax --db /nonexistent/dir/x.db", "/nonexistent/dir/x.db",
         "give --db a writable path"},
        {"run --workload softmax --db {dir}", "is a directory", "give --db a file path"},
        {"run --workload softmax --shape 1x10 --db {dir}/text.db", "text.db",
         "give --db a writable path"},
        {"run --workload softmax --db ''", "--db", "give a value"},
        {"export --format json --db {dir}/missing.db", "missing.db", "written by 'fourfold run'"},
        {"export --format json --db {dir}/text.db", "text.db", "give --db"},
        {"export --format xml --db {db}", "xml", "valid: json, csv"},
        {"export --format json -o /nonexistent/x.json --db {db}", "/nonexistent/x.json",
         "writable directory"},
        {"export --format json -o {dir} --db {db}", "is a directory", "give a file path"},
        {"export --format json -o {db} --db {db}", "f.db", "give -o another file"},
        {"export --format json -o '' --db {db}", "-o", "give a value"},
        {"compare a b -o /nonexistent/c.txt --db {db}", "/nonexistent/c.txt", "writable directory"},
        {"report a b -o {dir}/r.txt --db {db}", ".txt", "--format html|md|csv"},
        {"report a b -o /nonexistent/r.html --db {db}", "/nonexistent/r.html",
         "writable directory"},
        {"report a b --format pdf --db {db}", "pdf", "valid: html, md, csv"},
        {"runs --db {dir}/missing.db", "missing.db", "written by 'fourfold run'"},
    });
}

TEST_F(bad_input_table, run_ids) {
    check({
        {"export --format json --run 999 --db {db}", "999", "runs there: 1 (a), 2 (b)"},
        {"export --format json --run nosuch --db {db}", "nosuch", "runs there:"},
        {"compare a nosuch --db {db}", "nosuch", "runs there:"},
        {"compare a b a --db {db}", "got 3", "one or two runs"},
        {"compare --db {db}", "compare", "A [B]"},
        {"compare a --db {db}", "--baseline-variant", "--baseline-variant"},
        {"report nosuch --db {db}", "nosuch", "runs there:"},
        {"report --db {db}", "report", "run ids or labels"},
        {"runs --run 5 --db {db}", "--run", "--help"},
    });
}

TEST_F(bad_input_table, model_directories) {
    check({
        {"decode --model nosuch --db {db}", "nosuch", "valid presets: "},
        {"decode --model {dir}/empty_model --db {db}", "empty_model", "config.json"},
        {"decode --model {dir}/bad_json --db {db}", "bad_json", "not valid JSON"},
        {"decode --model {dir}/no_fields --db {db}", "no_fields", "config.json"},
        {"decode --model {dir}/config_only --db {db}", "config_only", "--random-weights"},
        {"decode --model tiny-llama,,tiny-qwen3 --db {db}", "tiny-llama,,tiny-qwen3", "none empty"},
        {"decode --db {db}", "--model", "a preset"},
        {"decode --model tiny-llama --ctx 0 --db {db}", "ctx=0", "valid: 1.."},
        {"decode --model tiny-llama --ctx 5000 --db {db}", "5000", "ctx + tokens <="},
        {"decode --model tiny-llama --tokens 0 --db {db}", "--tokens", "valid: 1"},
        {"decode --model tiny-llama --mode fast --db {db}", "fast", "valid: eager, graph"},
        {"run --workload decode --param model=random:{dir}/empty_model --db {db}", "empty_model",
         "config.json"},
    });
}

// issue 16: --resume of a run that does not exist, is complete, was made by another build or
// holds a request that does not read; --resume beside a request; --isolate with --no-isolate;
// a watchdog margin out of range.
TEST_F(bad_input_table, resume_and_isolation) {
    {
        auto s = fourfold::store::result_store::open(m_db, fourfold::store::open_mode::read_write);
        auto prov = provenance();
        prov["request"]["options"] = json{{"workload", "softmax"},
                                          {"shapes", {"1x1000"}},
                                          {"dtypes", {"fp32"}},
                                          {"device", "cpu"}};
        const auto old = s.begin_run("old", "cpu", "test", prov);
        s.finish_run(old, "interrupted");
        prov["request"]["options"] = "not an object";
        const auto broken = s.begin_run("broken", "cpu", "test", prov);
        s.finish_run(broken, "interrupted");
    }
    check({
        {"run --resume 999 --db {db}", "999", "runs there:"},
        {"run --resume a --db {db}", "run 1 is complete", "nothing to resume"},
        {"run --resume old --db {db}", "build (git sha): run has \"abc123\"",
         "resume it with the build"},
        {"run --resume broken --db {db}", "stored request", "cannot be resumed"},
        {"run --resume a --db {dir}/missing.db", "missing.db", "give --db the store"},
        {"run --resume a --workload softmax --db {db}", "--workload",
         "--resume takes the request and settings"},
        {"run --resume a --min-time 1 --db {db}", "--min-time",
         "--resume takes the request and settings"},
        {"run --workload softmax --isolate --no-isolate --db {db}", "--isolate and --no-isolate",
         "give one"},
        {"run --workload softmax --isolate --watchdog-margin 0 --db {db}", "--watchdog-margin '0'",
         "(0, 86400]"},
        {"run --workload softmax --isolate --watchdog-margin 1e9 --db {db}",
         "--watchdog-margin '1e9'", "(0, 86400]"},
    });
}
