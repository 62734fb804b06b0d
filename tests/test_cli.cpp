// Runs the real `fourfold` binary: bad input gets one line and exit code 2 and never touches the
// store; a good run writes records the JSON export shows with units, status, params and provenance.
#include "fourfold/core/json.hpp"
#include "fourfold/store/result_store.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "test_helpers.hpp"

#include <ATen/ATen.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using fourfold::json;
using fourfold::testing::run_cli;
using fourfold::testing::temp_dir;

namespace {

int lines(const std::string& s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

const char* k_quick = " --min-time 0.02 --timeout 0.3 --warmup 0.005 --quiet";

// The real binary in the background, its output into files in `dir`; returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args, const temp_dir& dir) {
    std::vector<std::string> all{FOURFOLD_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(all.size() + 1);
    for (auto& a : all)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const auto out = dir / "spawned.out";
    const auto err = dir / "spawned.err";
    const pid_t pid = fork();
    if (pid == 0) { // only async-signal-safe calls until exec
        const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, STDOUT_FILENO);
        dup2(e, STDERR_FILENO);
        execv(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

// Records the store holds for its latest run; 0 while there is no store or run yet.
std::size_t stored_records(const std::string& db) {
    if (!fourfold::path_exists(db))
        return 0;
    try {
        const auto s =
            fourfold::store::result_store::open(db, fourfold::store::open_mode::read_only);
        const auto runs = s.runs();
        return runs.empty() ? 0 : s.records(runs.back().id, false).size();
    } catch (const std::exception&) {
        return 0; // the store is being created
    }
}

// Starts a run of 36 records (several seconds), waits for its first record, then sends `signal`;
// returns the exit status waitpid saw.
int cut_a_run(int signal, const std::string& db, const temp_dir& dir) {
    const pid_t pid = spawn_cli({"run", "--workload", "softmax", "--shape",
                                 "1x1000,1x2000,1x3000,1x4000,1x5000,1x6000", "--dtype", "fp32",
                                 "--min-time", "0.3", "--quiet", "--label", "cut", "--db", db},
                                dir);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (stored_records(db) == 0 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(pid, signal);
    int status = 0;
    waitpid(pid, &status, 0); // reaped: no zombie keeps the pid alive
    return status;
}

// What both cut runs must show: some but not all records kept, the export agrees with the store
// and names the run's status, compare says what became of the run, and the store takes the next
// run.
void expect_cut_run_kept(const std::string& db, const temp_dir& dir, const char* status,
                         const std::string& compare_says) {
    const auto kept = stored_records(db);
    EXPECT_GE(kept, 1u);
    EXPECT_LT(kept, 36u);
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    EXPECT_EQ(doc["runs"][0]["status"], status);
    EXPECT_EQ(doc["records"].size(), kept);
    const auto c = run_cli("compare cut cut --db " + db, dir);
    EXPECT_EQ(c.code, 0) << c.err;
    EXPECT_NE(c.out.find(compare_says), std::string::npos) << c.out;
    EXPECT_EQ(
        run_cli("run --workload softmax --shape 1x100 --variants stock,generic --label next --db " +
                    db + k_quick,
                dir)
            .code,
        0);
}

} // namespace

TEST(cli, a_good_run_stores_records_that_export_shows_with_their_provenance) {
    temp_dir dir;
    const auto db = (dir / "f.db");
    const auto r = run_cli("run --workload softmax --shape 2x1000 --dtype fp32,bf16 --variants "
                           "stock,generic --label first --db " +
                               db + k_quick,
                           dir);
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
    ASSERT_EQ(run_cli("run --workload linear_decode --shape 1x64x64 --variants stock,generic "
                      "--ledgers correctness --db " +
                          db + k_quick,
                      dir)
                  .code,
              0);
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    for (const auto& rec : doc["records"])
        EXPECT_EQ(rec["ledger"], "correctness");
    EXPECT_EQ(doc["records"].size(), 2u);
}

TEST(cli, bad_input_is_one_line_exit_2_and_leaves_the_store_untouched) {
    temp_dir dir;
    const auto db = (dir / "f.db");
    ASSERT_EQ(
        run_cli("run --workload softmax --shape 1x100 --ledgers correctness --db " + db + k_quick,
                dir)
            .code,
        0);
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
        {"run --workload linear_decode --shape 1x4x99999999999999999999999",
         "99999999999999999999999"},
        {"run --workload softmax --shape 1048576x2147483648", "needs at least"},
        {"run --workload softmax --param nosuch=1", "nosuch"},
        {"run --workload softmax --param rows=0", "rows=0"},
        {"run --workload softmax --ledgers speed", "speed"},
        {"run --suite nosuch", "nosuch"},
        {"run --suite article --workload nosuch", "nosuch"},
        {"run --suite smoke --workload softmax --shape 1x8", "--shape"},
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

// Ctrl-C stops a run between passes: exit 130, the run closed as interrupted, every record
// stored before it kept, and the store takes the next run.
TEST(cli, an_interrupted_run_keeps_its_records_and_says_so) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const int status = cut_a_run(SIGINT, db, dir);
    ASSERT_TRUE(WIFEXITED(status)) << fourfold::testing::read_file(dir / "spawned.err");
    EXPECT_EQ(WEXITSTATUS(status), 130) << fourfold::testing::read_file(dir / "spawned.err");
    expect_cut_run_kept(db, dir, "interrupted", "(run interrupted: stopped by SIGINT");
}

// A run whose process dies (a crashing kernel, kill -9) cannot close itself: its records stand,
// the store opens and takes the next run, and compare says the run ended unfinished.
TEST(cli, a_killed_run_keeps_its_records_and_reads_as_ended_unfinished) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const int status = cut_a_run(SIGKILL, db, dir);
    ASSERT_TRUE(WIFSIGNALED(status));
    expect_cut_run_kept(db, dir, "running", "(run ended unfinished: its process");
    EXPECT_EQ(stored_records(db), 6u); // the next run's, beside the cut run's intact ones
    const auto report = run_cli("report cut --format md -o " + (dir / "r.md") + " --db " + db, dir);
    EXPECT_EQ(report.code, 0) << report.err;
    EXPECT_NE(fourfold::testing::read_file(dir / "r.md").find("ended unfinished"),
              std::string::npos);
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
    const auto w = run_cli("run --workload softmax --shape 1x10 --db /nonexistent/dir/x.db" +
                               std::string(k_quick),
                           dir);
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
        for (const auto& v : w["variants"])
            EXPECT_NE(v["name"], "nan_one"); // test-only variants stay in tests
    }
    EXPECT_TRUE(names.count("softmax") && names.count("linear_decode"));
    EXPECT_EQ(l["ledgers"].size(), 4u);
    EXPECT_EQ(run_cli("--help", dir).code, 0);
}

// --- fourfold decode
// ------------------------------------------------------------------------------

namespace {

const char* k_decode_quick = " --min-time 0.01 --timeout 1 --quiet --dtype fp32";

json export_all(const std::string& db, const temp_dir& dir) {
    const auto e = run_cli("export --format json --db " + db, dir);
    EXPECT_EQ(e.code, 0) << e.err;
    return json::parse(e.out);
}

const json* find_ok(const json& doc, const std::string& ledger, const std::string& variant) {
    for (const auto& rec : doc["records"])
        if (rec["ledger"] == ledger && rec["variant"] == variant && rec["status"] == "ok")
            return &rec;
    return nullptr;
}

// A checkpoint of the weights the preset gets from init_seed 1, written by this test.
void write_preset_checkpoint(const std::string& preset, const std::filesystem::path& dir) {
    using namespace fourfold::workloads::models;
    const auto config = *find_preset(preset);
    const auto w = random_weights(config, at::kFloat, c10::Device(c10::DeviceType::CPU),
                                  random_weights_seed(1));
    write_sharded_checkpoint(dir, hf_tensors(w), std::int64_t{48} * 1024);
    std::ofstream(dir / "config.json") << config.to_hf_config().dump(2);
}

} // namespace

TEST(cli_decode, tiny_models_fill_three_ledgers_at_each_context) {
    temp_dir dir;
    const auto db = (dir / "d.db");
    const auto r = run_cli(
        "decode --model tiny-qwen3-moe --ctx 16,40 --tokens 4 --db " + db + k_decode_quick, dir);
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("tokens/s"), std::string::npos);
    EXPECT_NE(r.out.find("bw limit [tokens/s]"), std::string::npos);
    const auto doc = export_all(db, dir);
    std::map<std::string, int> ok;
    std::set<std::int64_t> contexts;
    for (const auto& rec : doc["records"]) {
        EXPECT_EQ(rec["workload"], "decode");
        EXPECT_NE(rec["status"], "failed") << rec.dump();
        if (rec["status"] != "ok")
            continue;
        ++ok[rec["ledger"].get<std::string>()];
        if (rec["ledger"] == "throughput") {
            EXPECT_EQ(rec["unit"], "tokens/s");
            EXPECT_EQ(rec["figures"]["ctx"], rec["params"]["ctx"]);
            EXPECT_GT(rec["figures"]["tokens_per_s"].get<double>(), 0);
            contexts.insert(rec["figures"]["ctx"].get<std::int64_t>());
        }
    }
    EXPECT_EQ(contexts, (std::set<std::int64_t>{16, 40}));
    EXPECT_GE(ok["throughput"], 2);
    EXPECT_EQ(ok["correctness"], ok["throughput"]);
    EXPECT_EQ(ok["memory"], ok["throughput"]);
}

TEST(cli_decode, a_checkpoint_on_disk_decodes_to_the_same_logits_as_the_weights_set_directly) {
    for (const std::string preset : {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe"}) {
        temp_dir dir;
        const auto ckpt = dir / "ckpt";
        fourfold::make_directory(ckpt);
        write_preset_checkpoint(preset, ckpt);
        const std::string common =
            " --ctx 20 --tokens 5 --ledgers correctness,throughput" + std::string(k_decode_quick);
        const auto a =
            run_cli("decode --model " + preset + common + " --db " + (dir / "a.db"), dir);
        ASSERT_EQ(a.code, 0) << a.err << a.out;
        const auto b = run_cli("decode --model " + ckpt + common + " --db " + (dir / "b.db"), dir);
        ASSERT_EQ(b.code, 0) << b.err << b.out;
        const auto da = export_all((dir / "a.db"), dir);
        const auto db = export_all((dir / "b.db"), dir);
        int compared = 0;
        for (const char* variant : {"stock", "generic"}) {
            const auto* ca = find_ok(da, "correctness", variant);
            const auto* cb = find_ok(db, "correctness", variant);
            if (!ca || !cb)
                continue;
            ++compared;
            const auto& ma = (*ca)["figures"]["metrics"];
            const auto& mb = (*cb)["figures"]["metrics"];
            EXPECT_EQ(ma["logits_fnv1a64"], mb["logits_fnv1a64"]) << preset << " " << variant;
            EXPECT_EQ(ma["max_abs"], mb["max_abs"]) << preset;
            EXPECT_EQ(ma["kl_max"], mb["kl_max"]) << preset;
            EXPECT_EQ((*cb)["figures"]["verdict"], "PASS") << preset;
            const auto* ta = find_ok(da, "throughput", variant);
            const auto* tb = find_ok(db, "throughput", variant);
            ASSERT_TRUE(ta && tb);
            EXPECT_EQ((*ta)["figures"]["generated_tokens"], (*tb)["figures"]["generated_tokens"])
                << preset;
            EXPECT_NE((*tb)["figures"]["facts"]["weights"].get<std::string>().find("checkpoint"),
                      std::string::npos);
        }
        EXPECT_GE(compared, 1) << preset;
    }
}

TEST(cli_decode, malformed_checkpoints_are_one_line_exit_2_and_leave_no_store) {
    temp_dir dir;
    const auto cfg = run_cli("decode --model tiny-llama --print-config", dir);
    ASSERT_EQ(cfg.code, 0) << cfg.err;
    EXPECT_EQ(json::parse(cfg.out)["model_type"], "llama");
    auto raw = [](const std::string& header, const std::string& data,
                  std::optional<std::uint64_t> given = {}) {
        const auto length = given.value_or(header.size());
        std::string out;
        for (int i = 0; i < 8; ++i)
            out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
        return out + header + data;
    };
    // a whole, valid checkpoint, truncated by one byte
    temp_dir whole;
    write_preset_checkpoint("tiny-llama", whole.path());
    const auto shard = fourfold::testing::read_file(whole / "model-00001-of-00002.safetensors");
    const std::vector<std::pair<std::string, std::string>> cases{
        {shard.substr(0, shard.size() - 1), "truncated"},
        {raw("{}", "", 4096), "runs past the end"},
        {raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
             std::string(12, '\0')),
         "overlap"},
        {raw(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')),
         "wrong dtype size"},
    };
    for (const auto& [bytes, needle] : cases) {
        temp_dir model;
        fourfold::testing::write_file(model / "config.json", cfg.out);
        fourfold::testing::write_file(model / "model.safetensors", bytes);
        const auto db = dir / "never.db";
        const auto r =
            run_cli("decode --model " + model.path() + " --db " + db + k_decode_quick, dir);
        EXPECT_EQ(r.code, 2) << needle << ": " << r.err;
        EXPECT_EQ(lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("model.safetensors"), std::string::npos) << r.err;
        EXPECT_FALSE(fourfold::path_exists(db));
    }
}

TEST(cli_decode, bad_requests_are_one_line_exit_2) {
    temp_dir dir;
    const auto db = (dir / "never.db");
    const std::vector<std::pair<std::string, std::string>> cases{
        {"decode --model nosuch", "tiny-llama"},
        {"decode --ctx 512", "--model"},
        {"decode --model tiny-llama --ctx 0", "ctx=0"},
        {"decode --model tiny-llama --mode fast", "fast"},
        {"decode --model tiny-llama --ctx 5000", "max_position_embeddings"},
        {"decode --model tiny-llama --tokens 0", "--tokens"},
        {"decode --model tiny-llama --dtype fp8_e4m3fn", "fp8_e4m3fn"},
        {"decode --model tiny-llama --device cuda:7", "cuda:7"},
        {"decode --model tiny-llama --weights int4", "int4"},
    };
    for (const auto& [args, needle] : cases) {
        const auto r = run_cli(args + " --db " + db, dir);
        EXPECT_EQ(r.code, 2) << args << ": " << r.err;
        EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
        EXPECT_FALSE(fourfold::path_exists(db)) << args;
    }
}

TEST(cli_decode, weights_fp8_row_reaches_the_decode_workload_and_its_records) {
    temp_dir dir;
    const auto db = (dir / "f.db");
    const auto r = run_cli("decode --model tiny-llama --weights fp8_row --ctx 8 --tokens 2 "
                           "--ledgers throughput --db " +
                               db + k_decode_quick,
                           dir);
    // exit 4 where nothing could be measured (a libtorch without float8 types: every record a
    // skip), else 0
    ASSERT_TRUE(r.code == 0 || r.code == 4) << r.code << ": " << r.err << r.out;
    const auto doc = export_all(db, dir);
    ASSERT_FALSE(doc["records"].empty());
    for (const auto& rec : doc["records"]) {
        EXPECT_EQ(rec["params"].value("weights", ""), "fp8_row") << rec.dump();
        if (r.code == 4) {
            EXPECT_EQ(rec["status"], "skipped") << rec.dump();
        }
        // an fp8 model on a libtorch without float8 types is a skip that says why, else measured
        if (rec["status"] == "skipped") {
            EXPECT_NE(rec["reason"].get<std::string>().find("float8"), std::string::npos)
                << rec.dump();
        } else {
            EXPECT_EQ(rec["status"], "ok") << rec.dump();
        }
    }
}

// --- what a user of llama-bench or nvbench expects -----------------------------------------------

TEST(cli_user, runs_lists_every_run_with_its_state_and_records_done_of_planned) {
    temp_dir dir;
    const auto db = dir / "f.db";
    ASSERT_EQ(
        run_cli("run --workload softmax --shape 1x100,1x200 --variants stock,generic --ledgers "
                "correctness --label real --db " +
                    db + k_quick,
                dir)
            .code,
        0);
    {
        // a run whose process is gone without closing it: a pid no process has, on this host
        auto s = fourfold::store::result_store::open(db, fourfold::store::open_mode::read_write);
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        s.begin_run("died", "cpu", "fourfold run",
                    json{{"pid", 2147483646}, {"host", {{"hostname", host}}}});
    }
    const auto r = run_cli("runs --db " + db, dir);
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* needle : {"id", "label", "status", "started", "device", "build", "records",
                               "real", "complete", "4/4", "died", "ended unfinished", "0/?"})
        EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
    const auto j = run_cli("runs --json --db " + db, dir);
    ASSERT_EQ(j.code, 0) << j.err;
    const auto doc = json::parse(j.out);
    ASSERT_EQ(doc.size(), 2u);
    EXPECT_EQ(doc[0]["records"], 4);
    EXPECT_EQ(doc[0]["records_planned"], 4);
    EXPECT_EQ(doc[0]["status"], "complete");
    EXPECT_FALSE(doc[0]["build"].get<std::string>().empty());
    EXPECT_EQ(doc[1]["status"], "ended unfinished");
    EXPECT_TRUE(doc[1]["records_planned"].is_null());
}

TEST(cli_user, threads_sets_the_cpu_threads_and_the_provenance_records_them) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const auto r = run_cli("run --workload softmax --shape 1x100 --ledgers correctness --threads 1 "
                           "--db " +
                               db + k_quick,
                           dir);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("1 CPU thread(s)"), std::string::npos) << r.out;
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    EXPECT_EQ(doc["runs"][0]["provenance"]["libtorch"]["num_threads"], 1);
    EXPECT_EQ(doc["runs"][0]["provenance"]["settings"]["threads"], 1);
    const auto help = run_cli("run --help", dir);
    EXPECT_NE(help.out.find("--threads"), std::string::npos);
    EXPECT_NE(help.out.find("on this machine"), std::string::npos) << help.out;
}

TEST(cli_user, run_prints_its_records_as_json_or_csv_on_stdout) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const auto j =
        run_cli("run --workload softmax --shape 1x100 --variants stock,generic --ledgers "
                "correctness,op_time --format json --db " +
                    db + k_quick,
                dir);
    ASSERT_EQ(j.code, 0) << j.err;
    const auto doc = json::parse(j.out); // stdout holds the JSON alone
    EXPECT_EQ(doc["runs"].size(), 1u);
    EXPECT_EQ(doc["records"].size(), 4u);
    EXPECT_NE(j.err.find("records: 4 ok"), std::string::npos) << j.err;
    const auto c = run_cli(
        "run --workload softmax --shape 1x100 --variants stock,generic --ledgers correctness "
        "--format csv --db " +
            db + k_quick,
        dir);
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_EQ(c.out.substr(0, c.out.find(',')), "run");
    EXPECT_EQ(lines(c.out), 3); // the header and two records, of this run only
    const auto md =
        run_cli("run --workload softmax --shape 1x100 --ledgers correctness --format md "
                "--db " +
                    db + k_quick,
                dir);
    EXPECT_NE(md.out.find("### correctness"), std::string::npos) << md.out;
}

// Tables fit a terminal: what every row shares is said once above the rows, and the params
// column holds what varies; the JSON keeps every parameter. Rows keep one order in every table.
TEST(cli_user, tables_show_the_varying_params_and_keep_one_row_order) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const auto r = run_cli("run --workload moe_decode --param part=gate_up --shape "
                           "1x16x2x64x32,2x16x2x64x32 --dtype fp32 --ledgers op_time,correctness "
                           "--db " +
                               db + k_quick,
                           dir);
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("every row: experts=16 hidden=64 part=gate_up top_k=2 width=32"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("experts=16 hidden=64 part=gate_up tokens=1"), std::string::npos) << r.out;
    // the same (case, variant) order in the op_time and the correctness table
    const auto op = fourfold::testing::table_identities(r.out, "op_time:", "moe_decode");
    const auto cor = fourfold::testing::table_identities(r.out, "correctness:", "moe_decode");
    ASSERT_EQ(op.size(), 2u); // generic at two shapes (stock is a skip on libtorch 1.13)
    EXPECT_EQ(op, cor);
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    EXPECT_EQ(doc["records"][0]["params"].size(), 6u);
}

TEST(cli_user, a_timing_mode_the_device_lacks_skips_op_time_and_measures_the_rest) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const auto r = run_cli(
        "run --workload softmax --shape 1x100 --variants stock,generic --timing graph --db " + db +
            k_quick,
        dir);
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    std::map<std::string, std::set<std::string>> status;
    for (const auto& rec : doc["records"]) {
        status[rec["ledger"].get<std::string>()].insert(rec["status"].get<std::string>());
        if (rec["ledger"] == "op_time") {
            EXPECT_NE(rec["reason"].get<std::string>().find("graph"), std::string::npos);
        }
    }
    EXPECT_EQ(status["op_time"], std::set<std::string>{"skipped"});
    EXPECT_EQ(status["correctness"], std::set<std::string>{"ok"});
    EXPECT_EQ(status["memory"], std::set<std::string>{"ok"});
}

TEST(cli_user, decode_prints_its_statistics_as_the_op_table_does) {
    temp_dir dir;
    const auto r =
        run_cli("decode --model tiny-llama --ctx 16 --tokens 3 --ledgers throughput --db " +
                    (dir / "d.db") + k_decode_quick,
                dir);
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    for (const char* needle : {"95% CI [ms]", " n ", "stop", "weights: random"})
        EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
    const auto doc = json::parse(run_cli("export --format json --db " + (dir / "d.db"), dir).out);
    const auto stop = doc["records"][0]["figures"]["stop"].get<std::string>();
    // the shared stopping rule's classes, as op_time's stop column says them
    EXPECT_TRUE(stop == "converged" || stop == "timed_out" || stop == "sample_cap") << stop;
}

TEST(cli_user, help_shows_examples_and_the_exit_codes) {
    temp_dir dir;
    const auto r = run_cli("--help", dir);
    ASSERT_EQ(r.code, 0);
    for (const char* needle : {"Examples:", "fourfold runs", "Exit codes:", "2    bad input",
                               "4    nothing was measured", "130  interrupted"})
        EXPECT_NE(r.out.find(needle), std::string::npos) << needle << "\n" << r.out;
}
