// Reliability through the real binary: isolated job groups turn a segfault, an abort, a hang and
// an allocation larger than the machine into failed records with their reasons while every other
// job is measured; a run killed by SIGKILL and then resumed holds exactly the records of a clean
// run; two runs writing one store while a reader exports it lose nothing and never read a torn
// record; a store locked past the bounded wait gives one clear line.
#include "fourfold/core/json.hpp"
#include "fourfold/store/result_store.hpp"
#include "test_helpers.hpp"

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sqlite3.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using fourfold::json;
using namespace fourfold::testing;

namespace {

const char* k_quick = " --min-time 0.02 --timeout 0.3 --warmup 0.005 --min-samples 3 --quiet";
const char* k_faults = "FOURFOLD_TEST_FAULTS=1 exec";

// The real binary in the background, stdout and stderr into files named after `tag`.
pid_t spawn(const std::vector<std::string>& args, const temp_dir& dir, const std::string& tag) {
    std::vector<std::string> all{FOURFOLD_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(all.size() + 1);
    for (auto& a : all)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    const auto out = dir / (tag + ".out");
    const auto err = dir / (tag + ".err");
    const pid_t pid = fork();
    if (pid == 0) {
        const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, STDOUT_FILENO);
        dup2(e, STDERR_FILENO);
        execv(argv[0], argv.data());
        _exit(127);
    }
    return pid;
}

int wait_exit(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

json export_json(const std::string& db, const temp_dir& dir, const std::string& run = "") {
    const auto r =
        run_cli("export --format json --db " + db + (run.empty() ? "" : " --run " + run), dir);
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out);
}

// (ledger, workload, variant, dtype, params, status) of each record of the run: what a clean
// run and a resumed one must agree on.
std::multiset<std::string> identities(const json& doc) {
    std::multiset<std::string> out;
    for (const auto& r : doc["records"])
        out.insert(r["ledger"].get<std::string>() + " " + r["key"].get<std::string>() + " " +
                   r["variant"].get<std::string>() + " " + r["params"].dump() + " " +
                   r["status"].get<std::string>());
    return out;
}

std::size_t stored_records(const std::string& db) {
    if (!fourfold::path_exists(db))
        return 0;
    try {
        const auto s =
            fourfold::store::result_store::open(db, fourfold::store::open_mode::read_only);
        const auto runs = s.runs();
        return runs.empty() ? 0 : s.records(runs.back().id, false).size();
    } catch (const std::exception&) {
        return 0;
    }
}

std::size_t run_count(const std::string& db) {
    if (!fourfold::path_exists(db))
        return 0;
    try {
        return fourfold::store::result_store::open(db, fourfold::store::open_mode::read_only)
            .runs()
            .size();
    } catch (const std::exception&) {
        return 0;
    }
}

} // namespace

// Faulting jobs between normal ones: each fault is a failed record with its own reason, the
// normal variant of the same group and every fault=none job are ok, and the run completes.
TEST(isolation, faults_are_failed_records_and_the_run_goes_on) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const auto r =
        run_cli_in(k_faults,
                   "run --workload fault --param fault=none,segfault,abort,hang_hard,huge_alloc "
                   "--ledgers correctness,op_time,memory --isolate --watchdog-margin 1 --db " +
                       db + k_quick,
                   dir);
    EXPECT_EQ(r.code, 3) << "failed records make exit 3\n" << r.err;
    const auto doc = export_json(db, dir);
    ASSERT_EQ(doc["runs"].size(), 1u);
    EXPECT_EQ(doc["runs"][0]["status"], "complete") << r.err;
    EXPECT_EQ(doc["runs"][0]["provenance"]["request"]["isolate"], true);
    const std::map<std::string, std::vector<std::string>> reason_of{
        {"segfault", {"SIGSEGV", "correctness pass of variant stock"}},
        {"abort", {"SIGABRT", "variant stock"}},
        {"hang_hard", {"watchdog", "SIGKILL"}},
        {"huge_alloc", {"out of memory: requested 140737488355328 bytes", "bytes free"}}};
    std::map<std::string, int> failed, ok;
    ASSERT_EQ(doc["records"].size(), 30u) << doc.dump(1);
    for (const auto& rec : doc["records"]) {
        const auto fault = rec["params"]["fault"].get<std::string>();
        const auto variant = rec["variant"].get<std::string>();
        const auto status = rec["status"].get<std::string>();
        if (variant == "stock" && fault != "none") {
            EXPECT_EQ(status, "failed") << rec.dump();
            const auto reason = rec.value("reason", std::string());
            for (const auto& word : reason_of.at(fault))
                EXPECT_NE(reason.find(word), std::string::npos) << fault << ": " << reason;
            ++failed[fault];
        } else {
            EXPECT_EQ(status, "ok") << rec.dump();
            ++ok[fault];
        }
    }
    for (const auto& [fault, words] : reason_of) {
        EXPECT_EQ(failed[fault], 3) << fault << ": each ledger of the faulting job";
        EXPECT_EQ(ok[fault], 3) << fault << ": the group's normal variant, in a fresh process";
    }
    EXPECT_EQ(ok["none"], 6);
}

// The memory pass keeps what it saw before the process died (the baseline at least), and a
// process that stops at SIGTERM is not killed.
TEST(isolation, a_hang_stops_at_sigterm_and_the_reason_says_so) {
    temp_dir dir;
    const auto db = dir / "h.db";
    const auto r = run_cli_in(k_faults,
                              "run --workload fault --param fault=hang --variants stock "
                              "--ledgers correctness --isolate --watchdog-margin 0.5 --db " +
                                  db + k_quick,
                              dir);
    EXPECT_EQ(r.code, 3) << r.err;
    const auto doc = export_json(db, dir);
    ASSERT_EQ(doc["records"].size(), 1u);
    const auto reason = doc["records"][0].value("reason", std::string());
    EXPECT_NE(reason.find("stopped by SIGTERM"), std::string::npos) << reason;
    EXPECT_EQ(doc["records"][0]["figures"]["isolation"]["cause"], "watchdog");
}

// Off by default on the CPU: the same normal jobs in-process, the provenance says which.
TEST(isolation, off_by_default_on_the_cpu_and_the_records_match) {
    temp_dir dir;
    const auto db = dir / "n.db";
    const auto args =
        std::string("run --workload softmax --shape 1x1000 --dtype fp32 --db ") + db + k_quick;
    ASSERT_EQ(run_cli(args + " --label inproc", dir).code, 0);
    ASSERT_EQ(run_cli(args + " --label isolated --isolate", dir).code, 0);
    const auto a = export_json(db, dir, "inproc");
    const auto b = export_json(db, dir, "isolated");
    EXPECT_EQ(a["runs"][0]["provenance"]["request"]["isolate"], false);
    EXPECT_EQ(b["runs"][0]["provenance"]["request"]["isolate"], true);
    EXPECT_EQ(identities(a), identities(b));
    // an isolated record carries the same ledgers' figures as one measured in-process
    for (const auto& rec : b["records"]) {
        if (rec["ledger"] == "correctness" && rec["status"] == "ok") {
            EXPECT_EQ(rec["figures"]["verdict"], "PASS") << rec.dump();
        }
    }
}

// SIGKILL in the middle of a run, then --resume: exactly the records of a clean run, the run
// complete with a note that it was resumed.
TEST(resume, sigkill_then_resume_has_the_records_of_a_clean_run) {
    temp_dir dir;
    const auto db = dir / "r.db";
    const std::vector<std::string> request{
        "run",     "--workload", "softmax",    "--shape", "1x1000,1x2000,1x3000,1x4000",
        "--dtype", "fp32",       "--min-time", "0.2",     "--timeout",
        "1",       "--quiet",    "--db",       db};
    auto with_label = [&](const std::string& label) {
        auto a = request;
        a.insert(a.end(), {"--label", label});
        return a;
    };
    ASSERT_EQ(wait_exit(spawn(with_label("clean"), dir, "clean")), 0)
        << read_file(dir / "clean.err");
    const pid_t pid = spawn(with_label("cut"), dir, "cut");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    // two runs in the store: wait for the cut run's first record
    auto cut_records = [&] {
        try {
            const auto s =
                fourfold::store::result_store::open(db, fourfold::store::open_mode::read_only);
            const auto runs = s.runs();
            return runs.size() < 2 ? std::size_t{0} : s.records(runs.back().id, false).size();
        } catch (const std::exception&) {
            return std::size_t{0};
        }
    };
    while (cut_records() == 0 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(pid, SIGKILL);
    EXPECT_EQ(wait_exit(pid), 128 + SIGKILL);
    const auto before = export_json(db, dir, "cut");
    ASSERT_LT(before["records"].size(), export_json(db, dir, "clean")["records"].size())
        << "the kill came after the run had finished";
    const auto runs = run_cli("runs --db " + db, dir);
    EXPECT_NE(runs.out.find("ended unfinished"), std::string::npos) << runs.out;

    const auto r = run_cli("run --resume cut --quiet --db " + db, dir);
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("resumed run 2"), std::string::npos) << r.out;
    const auto clean = export_json(db, dir, "clean");
    const auto resumed = export_json(db, dir, "cut");
    EXPECT_EQ(identities(resumed), identities(clean));
    EXPECT_EQ(resumed["runs"][0]["status"], "complete");
    ASSERT_TRUE(resumed["runs"][0]["provenance"]["request"].contains("resumed"));
    EXPECT_EQ(resumed["runs"][0]["provenance"]["request"]["resumed"].size(), 1u);
    const auto listing = run_cli("runs --db " + db, dir);
    EXPECT_NE(listing.out.find("resumed at"), std::string::npos) << listing.out;
    // a complete run has nothing to resume: bad input, the store untouched
    const auto again = run_cli("run --resume cut --db " + db, dir);
    EXPECT_EQ(again.code, 2) << again.err;
    EXPECT_NE(again.err.find("is complete"), std::string::npos) << again.err;
}

// An isolated run killed, then resumed isolated: the same holds through job processes.
TEST(resume, an_isolated_run_resumes_isolated) {
    temp_dir dir;
    const auto db = dir / "ri.db";
    const auto base = std::string("run --workload softmax --shape 1x1000,1x2000 --dtype fp32 "
                                  "--isolate --db ") +
                      db + k_quick;
    ASSERT_EQ(run_cli(base + " --label clean", dir).code, 0);
    // an interrupted run: the first group only (SIGINT after its first record)
    const pid_t pid = spawn({"run", "--workload", "softmax", "--shape", "1x1000,1x2000", "--dtype",
                             "fp32", "--isolate", "--min-time", "0.3", "--timeout", "1", "--warmup",
                             "0.005", "--quiet", "--label", "cut", "--db", db},
                            dir, "cut");
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (run_count(db) < 2 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (stored_records(db) == 0 && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill(pid, SIGINT);
    const int code = wait_exit(pid);
    EXPECT_TRUE(code == 130 || code == 0) << code << read_file(dir / "cut.err");
    const auto r = run_cli("run --resume cut --quiet --db " + db, dir);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto clean = export_json(db, dir, "clean");
    const auto resumed = export_json(db, dir, "cut");
    EXPECT_EQ(resumed["runs"][0]["status"], "complete");
    // the ok records agree; timing figures differ, the identities do not
    EXPECT_EQ(identities(resumed), identities(clean));
}

// Two runs writing one new store at once and a reader exporting it meanwhile: both runs keep
// every record they planned, every export parses and holds only whole records. CI runs this 20
// times in a row (tests/CMakeLists.txt: concurrency_20_times).
TEST(concurrency, two_writers_and_a_reader_lose_nothing) {
    temp_dir dir;
    const auto db = dir / "c.db";
    auto writer = [&](const std::string& label) {
        return spawn({"run",     "--workload", "softmax",    "--shape",       "1x256,1x512,1x768",
                      "--dtype", "fp32",       "--min-time", "0.01",          "--timeout",
                      "0.2",     "--warmup",   "0.002",      "--min-samples", "3",
                      "--quiet", "--label",    label,        "--db",          db},
                     dir, label);
    };
    const pid_t a = writer("wa");
    const pid_t b = writer("wb");
    std::atomic<bool> stop{false};
    std::atomic<int> reads{0}, bad_reads{0};
    std::string last_error;
    std::thread reader([&] {
        while (!stop) {
            if (!fourfold::path_exists(db)) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                continue;
            }
            const auto out = dir / "reader.out";
            const int status =
                std::system((std::string(FOURFOLD_BINARY) + " export --format json --db " + db +
                             " >" + out + " 2>" + dir / "reader.err")
                                .c_str());
            const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            const auto text = read_file(out);
            const auto err = read_file(dir / "reader.err");
            if (code == 2 && (err.find("is empty") != std::string::npos ||
                              err.find("not a fourfold store") != std::string::npos))
                continue; // caught between the file's creation and its schema
            const auto doc = json::parse(text, nullptr, false);
            bool whole = code == 0 && !doc.is_discarded();
            if (whole)
                for (const auto& rec : doc["records"])
                    if (!rec.contains("figures") || !rec["figures"].is_object() ||
                        !rec.contains("status"))
                        whole = false;
            ++reads;
            if (!whole) {
                ++bad_reads;
                last_error = err + text.substr(0, 200);
            }
        }
    });
    const int ca = wait_exit(a);
    const int cb = wait_exit(b);
    stop = true;
    reader.join();
    EXPECT_EQ(ca, 0) << read_file(dir / "wa.err");
    EXPECT_EQ(cb, 0) << read_file(dir / "wb.err");
    EXPECT_EQ(bad_reads.load(), 0) << last_error;
    EXPECT_GT(reads.load(), 0);
    const auto doc = export_json(db, dir);
    ASSERT_EQ(doc["runs"].size(), 2u);
    std::map<std::int64_t, std::size_t> per_run;
    for (const auto& rec : doc["records"])
        ++per_run[rec["run"].get<std::int64_t>()];
    for (const auto& run : doc["runs"]) {
        EXPECT_EQ(run["status"], "complete");
        EXPECT_EQ(per_run[run["id"].get<std::int64_t>()],
                  run["provenance"]["request"]["records"].get<std::size_t>())
            << run["label"];
    }
}

// A lock held past the bounded wait: one line saying so, exit 3, and the store as it was.
TEST(concurrency, a_store_locked_past_the_bounded_wait_says_so) {
    temp_dir dir;
    const auto db = dir / "l.db";
    ASSERT_EQ(run_cli(std::string("run --workload softmax --shape 1x256 --dtype fp32 --db ") + db +
                          k_quick,
                      dir)
                  .code,
              0);
    sqlite3* holder = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_cli_in("FOURFOLD_STORE_BUSY_S=0.5 exec",
                              std::string("run --workload softmax --shape 1x256 --dtype fp32 "
                                          "--db ") +
                                  db + k_quick,
                              dir);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(holder);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("locked by another process"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("0.5 s"), std::string::npos) << r.err;
    EXPECT_LT(s, 30) << "the wait is bounded";
    const auto doc = export_json(db, dir);
    EXPECT_EQ(doc["runs"].size(), 1u) << "nothing of the refused run was written";
}
