// Nothing lost, nothing silently wrong (issue 11), through the real binary: an output path that is
// the store, a write that fails half-way, a damaged store, empty values, read-only stores, stored
// values that do not parse, a model directory without weights, the moe_decode default job; then
// the rules for "cannot" (bad input, skipped, nothing measured, no pairs) and the CSV a
// spreadsheet opens.
#include "compare_fixtures.hpp"
#include "fourfold/store/sqlite.hpp"
#include "test_helpers.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

using fourfold::json;
using namespace fourfold::testing;

namespace {

constexpr auto npos = std::string::npos;

// A store with two complete runs, "a" and "b", of two softmax cases and both variants: op_time
// (with samples), correctness and memory, 12 records each.
std::string seeded_store(const temp_dir& dir, const std::string& name = "f.db",
                         const std::string& label_a = "a") {
    auto db = dir / name;
    auto s = fourfold::store::result_store::open(db, fourfold::store::open_mode::read_write);
    for (const auto& label : {label_a, std::string("b")}) {
        std::vector<fourfold::record> recs;
        for (const int vocab : {1000, 2000})
            for (const char* variant : {"stock", "generic"}) {
                const auto job =
                    job_of("softmax", variant, "fp32", json{{"rows", 1}, {"vocab", vocab}});
                recs.push_back(
                    op_time_record(job, lognormal_samples(10.0 + vocab / 1000.0, 0.01, 30, vocab)));
                recs.push_back(correctness_record(job, "PASS", 1e-6));
                recs.push_back(memory_record(job, 3e6, 2e6, 1e6));
            }
        write_run(s, label, provenance(), recs);
    }
    return db;
}

std::vector<std::string> listing(const std::string& dir) {
    auto names = fourfold::list_directory(dir);
    names.erase(
        std::remove_if(names.begin(), names.end(),
                       [](const std::string& n) { return n == "stdout.txt" || n == "stderr.txt"; }),
        names.end());
    std::sort(names.begin(), names.end());
    return names;
}

std::size_t exported_records(const std::string& db, const temp_dir& dir) {
    const auto e = run_cli("export --format json --db " + db, dir);
    EXPECT_EQ(e.code, 0) << e.err;
    return e.code == 0 ? json::parse(e.out)["records"].size() : 0;
}

void execute_sql(const std::string& db, const std::string& sql) {
    fourfold::store::database d(db, SQLITE_OPEN_READWRITE);
    d.exec(sql);
}

// As a user without write permission: root (the CI's user) writes any file whatever its mode,
// so the binary runs as nobody there.
std::string as_unprivileged() {
    return geteuid() == 0 ? "exec setpriv --reuid=65534 --regid=65534 --clear-groups" : "exec";
}

} // namespace

// Defect 1: `-o` naming the store replaced the SQLite file and lost every record.
TEST(cli_safety, an_output_path_that_is_the_store_is_refused_and_every_record_stays) {
    temp_dir dir;
    const auto db = seeded_store(dir);
    fourfold::make_directory(dir / "sub");
    ASSERT_EQ(symlink(db.c_str(), (dir / "link.db").c_str()), 0);
    ASSERT_EQ(link(db.c_str(), (dir / "hard.db").c_str()), 0);
    const auto before = read_file(db);
    const auto files = listing(dir.path());
    for (const auto& output :
         {db, dir / "sub/../f.db", dir / "link.db", dir / "hard.db", db + "-wal", db + "-shm"})
        for (const char* command :
             {"export --format json", "compare a b", "report a b --format html"}) {
            const auto r = run_cli(fmt::format("{} -o {} --db {}", command, output, db), dir);
            EXPECT_EQ(r.code, 2) << command << " -o " << output << ": " << r.err;
            EXPECT_EQ(line_count(r.err), 1) << r.err;
            EXPECT_NE(r.err.find("is the"), npos) << r.err;
            EXPECT_NE(r.err.find("give -o another file"), npos) << r.err;
            EXPECT_EQ(read_file(db), before) << command << " -o " << output;
            EXPECT_EQ(listing(dir.path()), files) << command << " -o " << output;
        }
    EXPECT_EQ(exported_records(db, dir), 24u);
}

// Defect 2: on a full disk `report` said "written" over a truncated file and `export` left an
// empty one. A file-size limit makes the write fail as a full disk does (EFBIG for ENOSPC).
TEST(cli_safety, a_write_that_fails_is_exit_3_with_the_errno_text_and_leaves_no_file) {
    temp_dir dir;
    const auto db = seeded_store(dir);
    // a store that readers need no -shm file for, so that only the output meets the limit
    execute_sql(db, "PRAGMA journal_mode = DELETE");
    const auto files = listing(dir.path());
    const std::string limited = "trap '' XFSZ; ulimit -f 16; exec"; // 8 KiB at most
    for (const auto& [command, file] : std::vector<std::pair<std::string, std::string>>{
             {"report a b", "r.html"},
             {"export --format json --samples", "e.json"},
             {"compare a b --format json", "c.json"}}) {
        const auto out = dir / file;
        const auto r = run_cli_in(limited, fmt::format("{} -o {} --db {}", command, out, db), dir);
        EXPECT_EQ(r.code, 3) << command << ": " << r.err;
        EXPECT_EQ(line_count(r.err), 1) << r.err;
        EXPECT_NE(r.err.find("File too large"), npos) << r.err;
        EXPECT_EQ(r.err.find("written to"), npos) << r.err;
        EXPECT_FALSE(fourfold::path_exists(out)) << command;
        EXPECT_EQ(listing(dir.path()), files) << command << ": a temporary file stayed";
    }
    // a file the failed write would have replaced is left whole
    write_file(dir / "old.json", "{}\n");
    const auto r = run_cli_in(
        limited, "export --format json --samples -o " + (dir / "old.json") + " --db " + db, dir);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_EQ(read_file(dir / "old.json"), "{}\n");
    // standard output that cannot be written is the same failure
    const auto full = run_cli_in("exec >/dev/full;", "export --format json --db " + db, dir);
    EXPECT_EQ(full.code, 3) << full.err;
    EXPECT_NE(full.err.find("No space left on device"), npos) << full.err;
    // and the store is whole
    EXPECT_EQ(exported_records(db, dir), 24u);
}

// Defect 3: `run` inserted a run row into a store with damaged pages.
TEST(cli_safety, a_damaged_store_is_refused_for_writing_and_left_byte_for_byte) {
    temp_dir dir;
    const auto db = seeded_store(dir);
    std::int64_t page = 0, page_size = 0;
    {
        // immutable: a plain read-only connection would leave -wal and -shm files behind
        fourfold::store::database d("file:" + db + "?immutable=1",
                                    SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
        auto st = d.prepare("SELECT rootpage FROM sqlite_master WHERE name = 'memory_run'");
        ASSERT_TRUE(st.step());
        page = st.int64(0);
        auto ps = d.prepare("PRAGMA page_size");
        ASSERT_TRUE(ps.step());
        page_size = ps.int64(0);
    }
    // the index page's b-tree type byte set to a value no page has: the runs table stays readable
    auto bytes = read_file(db);
    bytes[static_cast<std::size_t>((page - 1) * page_size)] = '\x42';
    write_file(db, bytes);
    const auto files = listing(dir.path());
    const auto r = run_cli("run --workload softmax --shape 1x100 --ledgers correctness --quiet "
                           "--db " +
                               db,
                           dir);
    EXPECT_EQ(r.code, 2) << r.err << r.out;
    EXPECT_EQ(line_count(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("damaged"), npos) << r.err;
    EXPECT_NE(r.err.find(".recover"), npos) << r.err;
    EXPECT_EQ(read_file(db), bytes);
    EXPECT_EQ(listing(dir.path()), files);
}

// Defect 4: `--db ""` stored into a temporary database that vanished; empty values of any
// option, and empty items of a list, are bad input.
TEST(cli_safety, empty_values_and_empty_list_items_are_bad_input) {
    temp_dir dir;
    const auto db = dir / "f.db";
    const std::vector<std::pair<std::string, std::string>> cases{
        {"run --workload softmax --quiet --db ''", "--db"},
        {"run --workload softmax --quiet --shape '' --db " + db, "--shape"},
        {"run --workload softmax --quiet --dtype '' --db " + db, "--dtype"},
        {"run --workload softmax --quiet --variants '' --db " + db, "--variants"},
        {"run --workload softmax --quiet --label '' --db " + db, "--label"},
        {"run --workload softmax --quiet --param rows=1,,2 --db " + db, "rows=1,,2"},
        {"run --workload softmax --quiet --param rows= --db " + db, "rows="},
        {"run --workload softmax --quiet --shape 1x100, --db " + db, "1x100,"},
        {"run --workload softmax --quiet --dtype fp32, --db " + db, "fp32,"},
        {"export --format json --db ''", "--db"},
        {"decode --model '' --db " + db, "--model"},
        {"decode --model tiny-llama --ctx 16,,32 --db " + db, "16,,32"},
    };
    for (const auto& [args, needle] : cases) {
        const auto r = run_cli(args, dir);
        EXPECT_EQ(r.code, 2) << args << ": " << r.err << r.out;
        EXPECT_EQ(line_count(r.err), 1) << args << ": " << r.err;
        EXPECT_NE(r.err.find(needle), npos) << args << ": " << r.err;
        EXPECT_FALSE(fourfold::path_exists(db)) << args;
    }
}

// Defect 5, first half: reading a store wrote -wal and -shm files beside it and left them there;
// a store the user may not write was exit 3 with SQLite's own words.
TEST(cli_safety, reading_a_store_writes_nothing_and_a_read_only_store_is_read_not_written) {
    temp_dir dir;
    const auto db = seeded_store(dir);
    const auto before = read_file(db);
    const auto files = listing(dir.path());
    for (const char* command : {"export --format json", "export --format csv", "compare a b",
                                "report a b --format md", "runs"}) {
        const auto r = run_cli(fmt::format("{} --db {}", command, db), dir);
        EXPECT_EQ(r.code, 0) << command << ": " << r.err;
        EXPECT_EQ(listing(dir.path()), files) << command;
        EXPECT_EQ(read_file(db), before) << command;
    }
    // a read-only directory holding a read-only store, read by a user who may not write either
    ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
    const auto ro = dir / "ro";
    fourfold::make_directory(ro);
    const auto ro_db = ro + "/f.db";
    write_file(ro_db, before);
    ASSERT_EQ(chmod(ro_db.c_str(), 0444), 0);
    ASSERT_EQ(chmod(ro.c_str(), 0555), 0);
    const auto user = as_unprivileged();
    for (const char* command :
         {"export --format json", "compare a b", "report a b --format csv", "runs"}) {
        const auto r = run_cli_in(user, fmt::format("{} --db {}", command, ro_db), dir);
        EXPECT_EQ(r.code, 0) << command << ": " << r.err;
        EXPECT_FALSE(r.out.empty()) << command;
        EXPECT_EQ(fourfold::list_directory(ro), std::vector<std::string>{"f.db"}) << command;
    }
    const auto w = run_cli_in(
        user, "run --workload softmax --shape 1x100 --ledgers correctness --quiet --db " + ro_db,
        dir);
    EXPECT_EQ(w.code, 2) << w.err;
    EXPECT_EQ(line_count(w.err), 1) << w.err;
    EXPECT_NE(w.err.find("read-only"), npos) << w.err;
    EXPECT_EQ(fourfold::list_directory(ro), std::vector<std::string>{"f.db"});
    EXPECT_EQ(read_file(ro_db), before);
    ASSERT_EQ(chmod(ro.c_str(), 0755), 0); // so that the temporary directory can be removed
}

// Defect 5, second half: a stored value that does not parse names its run and record.
TEST(cli_safety, a_stored_value_that_does_not_parse_names_its_run_and_record) {
    const std::vector<std::tuple<std::string, std::string, std::string>> damage{
        {"UPDATE correctness SET figures = '{\"verdict\": ' WHERE id = 2", "correctness record 2",
         "figures"},
        {"UPDATE jobs SET params = '[1,' WHERE id = 1", "record 1", "params"},
        {"UPDATE samples SET data = substr(data, 1, 5) WHERE record_id = 3", "op_time record 3",
         "samples"},
    };
    for (const auto& [sql, where, what] : damage) {
        temp_dir dir;
        const auto db = seeded_store(dir);
        execute_sql(db, sql);
        const auto r = run_cli("export --format json --samples --db " + db, dir);
        EXPECT_EQ(r.code, 2) << sql << ": " << r.err;
        EXPECT_EQ(line_count(r.err), 1) << r.err;
        EXPECT_NE(r.err.find("run 1"), npos) << r.err;
        EXPECT_NE(r.err.find(where), npos) << r.err;
        EXPECT_NE(r.err.find(what), npos) << r.err;
        EXPECT_EQ(r.err.find("json.exception"), npos) << r.err;
    }
}

// Defect 6: a model directory with config.json alone measured random weights and said nothing.
TEST(cli_safety, random_weights_are_asked_for_by_name_and_every_table_says_so) {
    temp_dir dir;
    const auto cfg = run_cli("decode --model tiny-llama --print-config", dir);
    ASSERT_EQ(cfg.code, 0) << cfg.err;
    const auto model = dir / "model";
    fourfold::make_directory(model);
    write_file(model + "/config.json", cfg.out);
    const auto db = dir / "d.db";
    const std::string quick = " --ctx 16 --tokens 2 --dtype fp32 --min-time 0.01 --timeout 0.5 "
                              "--quiet --ledgers throughput,correctness --db " +
                              db;
    const auto r = run_cli("decode --model " + model + quick, dir);
    EXPECT_EQ(r.code, 2) << r.err << r.out;
    EXPECT_EQ(line_count(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(model), npos) << r.err;
    EXPECT_NE(r.err.find("--random-weights"), npos) << r.err;
    EXPECT_FALSE(fourfold::path_exists(db));
    const auto asked = run_cli("decode --random-weights --model " + model + quick, dir);
    ASSERT_EQ(asked.code, 0) << asked.err << asked.out;
    EXPECT_NE(asked.out.find("weights: random"), npos) << asked.out;
    const auto preset = run_cli("decode --model tiny-llama --label preset" + quick, dir);
    ASSERT_EQ(preset.code, 0) << preset.err << preset.out;
    EXPECT_NE(preset.out.find("weights: random"), npos) << preset.out;
    const auto md = run_cli("report preset --format md --db " + db, dir);
    ASSERT_EQ(md.code, 0) << md.err;
    EXPECT_NE(md.out.find("weights: random"), npos);
    const auto html = run_cli("report preset --db " + db, dir);
    ASSERT_EQ(html.code, 0) << html.err;
    EXPECT_NE(html.out.find("weights: random"), npos);
}

// Defect 7: moe_decode's default job on the CPU (generic, bf16, 8 tokens) FAILed correctness.
TEST(cli_safety, moe_decode_default_job_passes_correctness_on_the_cpu) {
    temp_dir dir;
    const auto db = dir / "m.db";
    const auto r =
        run_cli("run --workload moe_decode --ledgers correctness --quiet --db " + db, dir);
    EXPECT_EQ(r.code, 0) << r.err << r.out;
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    int checked = 0;
    for (const auto& rec : doc["records"]) {
        if (rec["status"] != "ok")
            continue;
        ++checked;
        EXPECT_EQ(rec["figures"]["verdict"], "PASS") << rec["figures"].dump();
        EXPECT_EQ(rec["params"]["tokens"], 8);
        EXPECT_EQ(rec["dtype"], "bf16");
    }
    EXPECT_GE(checked, 1);
}

// One rule for "cannot": what this device cannot do is a skipped record, and a run that
// measured nothing is not a success.
TEST(cli_rules, a_run_that_measured_nothing_exits_4_with_the_reason) {
    temp_dir dir;
    const auto db = dir / "n.db";
    // graph capture is a CUDA feature: on the CPU every record of a graph decode is a skip
    const auto graph = run_cli("decode --model tiny-llama --mode graph --ctx 16 --tokens 2 "
                               "--quiet --label graph --db " +
                                   db,
                               dir);
    EXPECT_EQ(graph.code, 4) << graph.err << graph.out;
    EXPECT_NE(graph.err.find("nothing was measured"), npos) << graph.err;
    EXPECT_NE(graph.err.find("graph"), npos) << graph.err;
    // a case larger than this device's memory (8 TiB), which a larger device could hold
    const auto big = run_cli("run --workload softmax --shape 1048576x1048576 --ledgers correctness "
                             "--quiet --label big --db " +
                                 db,
                             dir);
    EXPECT_EQ(big.code, 4) << big.err << big.out;
    EXPECT_NE(big.err.find("nothing was measured"), npos) << big.err;
    const auto doc = json::parse(run_cli("export --format json --db " + db, dir).out);
    std::map<std::string, int> skipped;
    for (const auto& rec : doc["records"]) {
        EXPECT_EQ(rec["status"], "skipped") << rec.dump();
        ++skipped[rec["workload"].get<std::string>()];
        if (rec["workload"] == "softmax") {
            EXPECT_NE(rec["reason"].get<std::string>().find("needs at least"), npos);
        }
    }
    EXPECT_EQ(skipped["decode"], 3);  // stock x three ledgers
    EXPECT_EQ(skipped["softmax"], 3); // three variants (stock, generic, native) x correctness
}

TEST(cli_rules, a_ledger_the_workload_never_measures_is_bad_input) {
    temp_dir dir;
    const auto db = dir / "n.db";
    const auto r = run_cli("run --workload softmax --shape 1x100 --ledgers throughput --quiet "
                           "--db " +
                               db,
                           dir);
    EXPECT_EQ(r.code, 2) << r.err << r.out;
    EXPECT_EQ(line_count(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("softmax measures"), npos) << r.err;
    EXPECT_FALSE(fourfold::path_exists(db));
}

TEST(cli_rules, fail_on_regression_with_no_pairs_exits_1) {
    temp_dir dir;
    const auto db = dir / "f.db";
    {
        auto s = fourfold::store::result_store::open(db, fourfold::store::open_mode::read_write);
        write_run(s, "x", provenance(),
                  {op_time_record(job_of("softmax", "stock", "fp32", json{{"rows", 1}}),
                                  lognormal_samples(10, 0.01, 30, 1))});
        write_run(s, "y", provenance(),
                  {op_time_record(job_of("pad", "stock", "fp32", json{{"rows", 1}}),
                                  lognormal_samples(10, 0.01, 30, 2))});
    }
    const auto plain = run_cli("compare x y --db " + db, dir);
    EXPECT_EQ(plain.code, 0) << plain.err;
    const auto strict = run_cli("compare x y --fail-on-regression --db " + db, dir);
    EXPECT_EQ(strict.code, 1) << strict.err << strict.out;
    EXPECT_NE(strict.err.find("no pair"), npos) << strict.err;
}

// OWASP's CSV injection: a cell a spreadsheet would run as a formula is made text; numbers stay.
TEST(cli_rules, csv_cells_that_a_spreadsheet_would_run_are_neutralised) {
    temp_dir dir;
    const auto db = seeded_store(dir, "f.db", "=HYPERLINK(\"http://x\",\"y\")");
    const auto csv = run_cli("export --format csv --db " + db, dir);
    ASSERT_EQ(csv.code, 0) << csv.err;
    EXPECT_NE(csv.out.find("\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""), npos) << csv.out;
    EXPECT_EQ(csv.out.find(",=HYPERLINK"), npos);
    EXPECT_EQ(csv.out.find(",\"=HYPERLINK"), npos);
    const auto report = run_cli("report 1 b --format csv --db " + db, dir);
    ASSERT_EQ(report.code, 0) << report.err;
    EXPECT_EQ(report.out.find(",=HYPERLINK"), npos);
    EXPECT_EQ(report.out.find(",\"=HYPERLINK"), npos);
}
