#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/result_store.hpp"
#include "fourfold/store/run_state.hpp"
#include "fourfold/store/schema.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace fourfold;
using namespace fourfold::store;
using fourfold::testing::temp_dir;

namespace {

record sample_record(ledger l, const std::string& variant) {
    job_id job{"softmax", variant, "cpu", "fp32", json{{"rows", 1}, {"vocab", 8}}, 42};
    auto r = record::make(l, job);
    if (l == ledger::op_time) {
        r.figures =
            json{{"mode", "host"}, {"cache", "hot"}, {"stats", {{"median", 1.5}, {"n", 3}}}};
        r.samples = {1.0, 1.5, 2.0};
    } else if (l == ledger::correctness) {
        r.figures = json{{"verdict", "PASS"}, {"metrics", {{"rel_l2", 1e-7}}}};
    } else if (l == ledger::memory) {
        r.figures = json{{"driver_peak_bytes", 1000}, {"reserved_peak_bytes", nullptr}};
    }
    return r;
}

} // namespace

TEST(store, round_trip_keeps_records_samples_and_provenance) {
    temp_dir dir;
    auto s = result_store::open(dir / "a.db", open_mode::read_write);
    const json prov{{"fourfold", {{"git_sha", "abc"}}}};
    const auto run = s.begin_run("first", "cpu", "fourfold run ...", prov);
    const auto a = sample_record(ledger::op_time, "stock");
    const auto b = sample_record(ledger::correctness, "stock");
    const auto c = sample_record(ledger::memory, "generic");
    s.add_record(run, a);
    s.add_record(run, b);
    s.add_record(run, c);
    s.finish_run(run, "complete");

    const auto r = result_store::open(dir / "a.db", open_mode::read_only);
    const auto found = r.find_run("first");
    EXPECT_EQ(found.id, run);
    EXPECT_EQ(found.status, "complete");
    EXPECT_EQ(found.provenance, prov);
    const auto recs = r.records(run, true);
    ASSERT_EQ(recs.size(), 3u);
    for (const auto& sr : recs) {
        const auto& orig = sr.rec.which == ledger::op_time       ? a
                           : sr.rec.which == ledger::correctness ? b
                                                                 : c;
        EXPECT_EQ(sr.rec.figures, orig.figures);
        EXPECT_EQ(sr.rec.job.key(), orig.job.key());
        EXPECT_EQ(sr.rec.job.seed, 42u);
        EXPECT_EQ(sr.rec.unit, std::string(unit_of(sr.rec.which)));
        EXPECT_EQ(sr.rec.samples, orig.samples);
    }
    // one job row per key: op_time and correctness of 'stock' share it
    EXPECT_EQ(recs[0].job_row, recs[1].job_row);
}

TEST(store, headline_columns_are_filled_for_sql_users) {
    temp_dir dir;
    {
        auto s = result_store::open(dir / "a.db", open_mode::read_write);
        const auto run = s.begin_run("", "cpu", "", json::object());
        s.add_record(run, sample_record(ledger::op_time, "stock"));
        s.add_record(run, sample_record(ledger::memory, "stock"));
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "a.db").c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT median_us, mode FROM op_time", -1, &st, nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_DOUBLE_EQ(sqlite3_column_double(st, 0), 1.5);
    sqlite3_finalize(st);
    sqlite3_prepare_v2(db, "SELECT driver_peak_bytes, reserved_peak_bytes FROM memory", -1, &st,
                       nullptr);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int64(st, 0), 1000);
    EXPECT_EQ(sqlite3_column_type(st, 1), SQLITE_NULL); // unavailable stays NULL, never 0
    sqlite3_finalize(st);
    sqlite3_close(db);
}

TEST(store, an_unfinished_run_keeps_every_record_already_added) {
    temp_dir dir;
    std::int64_t run = 0;
    {
        auto s = result_store::open(dir / "a.db", open_mode::read_write);
        run = s.begin_run("cut", "cpu", "", json::object());
        s.add_record(run, sample_record(ledger::op_time, "stock"));
        s.add_record(run, sample_record(ledger::op_time, "generic"));
        // no finish_run: the process "dies" here
    }
    const auto r = result_store::open(dir / "a.db", open_mode::read_only);
    EXPECT_EQ(r.find_run("cut").status, "running");
    EXPECT_EQ(r.records(run, false).size(), 2u);
}

TEST(store, a_run_left_running_reads_as_alive_or_ended_by_its_process) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    run_row r;
    r.status = "running";
    r.provenance =
        json{{"host", {{"hostname", host}}}, {"pid", static_cast<std::int64_t>(getpid())}};
    EXPECT_EQ(state_of(r).word, "running"); // this test binary is a fourfold process
    // a process that has ended (reaped, so not even a zombie holds its id)
    const pid_t child = fork();
    if (child == 0)
        _exit(0);
    ASSERT_GT(child, 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    r.provenance["pid"] = static_cast<std::int64_t>(child);
    const auto ended = state_of(r);
    EXPECT_EQ(ended.word, "ended unfinished");
    EXPECT_NE(ended.why.find(std::to_string(child)), std::string::npos) << ended.why;
    EXPECT_NE(ended.why.find("records it stored stand"), std::string::npos) << ended.why;
    // made elsewhere, or by a build that kept no pid: this host cannot tell
    r.provenance["host"]["hostname"] = std::string(host) + "-elsewhere";
    EXPECT_EQ(state_of(r).word, "not finished");
    r.provenance = json{{"host", {{"hostname", host}}}};
    EXPECT_EQ(state_of(r).word, "not finished");
    for (const char* closed : {"complete", "interrupted", "failed"}) {
        r.status = closed;
        EXPECT_EQ(state_of(r).word, closed);
        EXPECT_EQ(state_of(r).why.empty(), r.status == "complete") << closed;
    }
}

TEST(store, a_file_that_is_not_sqlite_is_refused_and_left_untouched) {
    temp_dir dir;
    const auto path = dir / "bad.db";
    const std::string garbage(4096, 'x');
    fourfold::testing::write_file(path, garbage);
    try {
        result_store::open(path, open_mode::read_write);
        FAIL() << "expected bad_input";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("not an SQLite database"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(fourfold::testing::read_file(path), garbage);
}

TEST(store, an_sqlite_file_of_another_program_is_refused) {
    temp_dir dir;
    const auto path = dir / "other.db";
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    EXPECT_THROW(result_store::open(path, open_mode::read_write), bad_input);
}

TEST(store, a_newer_schema_is_refused) {
    temp_dir dir;
    const auto path = dir / "new.db";
    { result_store::open(path, open_mode::read_write); }
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db, "UPDATE fourfold_meta SET value='99' WHERE key='schema_version'", nullptr,
                 nullptr, nullptr);
    sqlite3_close(db);
    try {
        result_store::open(path, open_mode::read_write);
        FAIL();
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos);
    }
}

TEST(store, unwritable_and_missing_paths_are_bad_input) {
    temp_dir dir;
    EXPECT_THROW(result_store::open(dir / "no/such/dir/x.db", open_mode::read_write), bad_input);
    EXPECT_THROW(result_store::open(dir / "missing.db", open_mode::read_only), bad_input);
    EXPECT_THROW(result_store::open(dir.path(), open_mode::read_write), bad_input);
    if (geteuid() != 0) { // root ignores permissions
        fourfold::make_directory(dir / "ro");
        chmod((dir / "ro").c_str(), 0555);
        EXPECT_THROW(result_store::open(dir / "ro/x.db", open_mode::read_write), bad_input);
    }
}

TEST(store, unknown_run_lists_the_runs_there) {
    temp_dir dir;
    auto s = result_store::open(dir / "a.db", open_mode::read_write);
    s.begin_run("alpha", "cpu", "", json::object());
    try {
        s.find_run("beta");
        FAIL();
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("alpha"), std::string::npos);
    }
}

TEST(store, export_json_and_csv_carry_identity_units_and_status) {
    temp_dir dir;
    auto s = result_store::open(dir / "a.db", open_mode::read_write);
    const auto run = s.begin_run("x", "cpu", "", json{{"k", 1}});
    s.add_record(run, sample_record(ledger::op_time, "stock"));
    s.add_record(run, record::skipped(ledger::memory, sample_record(ledger::memory, "stock").job,
                                      "no probe"));
    std::ostringstream js;
    export_store(s, {{}, export_format::json, false}, js);
    const auto doc = json::parse(js.str());
    EXPECT_EQ(doc["schema"], k_schema_version);
    ASSERT_EQ(doc["records"].size(), 2u);
    for (const auto& r : doc["records"]) {
        for (const char* key : {"run", "ledger", "workload", "variant", "device", "dtype", "params",
                                "key", "unit", "status", "figures"})
            EXPECT_TRUE(r.contains(key)) << key;
        if (r["status"] == "skipped") {
            EXPECT_EQ(r["reason"], "no probe");
        }
    }
    EXPECT_EQ(doc["runs"][0]["provenance"]["k"], 1);
    std::ostringstream csv;
    export_store(s, {{}, export_format::csv, false}, csv);
    const auto text = csv.str();
    EXPECT_NE(text.find("stats.median"), std::string::npos);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
}

// OWASP's CSV injection advice: a cell a spreadsheet would run becomes text; numbers stay numbers.
TEST(store, csv_cells_that_would_run_as_formulas_get_a_leading_quote) {
    EXPECT_EQ(csv_escape("=1+2"), "\"'=1+2\"");
    EXPECT_EQ(csv_escape("@SUM(A1)"), "\"'@SUM(A1)\"");
    EXPECT_EQ(csv_escape("+cmd"), "\"'+cmd\"");
    EXPECT_EQ(csv_escape("-2+3"), "\"'-2+3\"");
    EXPECT_EQ(csv_escape("\tx"), "\"'\tx\"");
    EXPECT_EQ(csv_escape("-1.5e-06"), "-1.5e-06");
    EXPECT_EQ(csv_escape("+3"), "+3");
    EXPECT_EQ(csv_escape("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_escape("plain"), "plain");
}

TEST(store, a_label_with_control_characters_or_digits_only_is_refused) {
    EXPECT_THROW(check_label("a\nb"), bad_input);
    EXPECT_THROW(check_label("a\x1b[31m"), bad_input);
    EXPECT_THROW(check_label("12"), bad_input);
    EXPECT_NO_THROW(check_label(""));
    EXPECT_NO_THROW(check_label("run-12"));
    EXPECT_NO_THROW(check_label("après 2"));
    temp_dir dir;
    auto s = result_store::open(dir / "a.db", open_mode::read_write);
    EXPECT_THROW(s.begin_run("7", "cpu", "", json::object()), bad_input);
    EXPECT_TRUE(s.runs().empty());
}

TEST(store, an_output_that_is_the_store_is_refused_by_identity_not_spelling) {
    temp_dir dir;
    const auto db = dir / "a.db";
    { auto s = result_store::open(db, open_mode::read_write); }
    ASSERT_EQ(symlink(db.c_str(), (dir / "link").c_str()), 0);
    ASSERT_EQ(link(db.c_str(), (dir / "hard").c_str()), 0);
    make_directory(dir / "sub");
    for (const auto& same : {db, dir / "link", dir / "hard", dir / "sub/../a.db", db + "-wal",
                             db + "-shm", db + "-journal"})
        EXPECT_THROW(refuse_store_as_output(same, db), bad_input) << same;
    // the store named through the link is the same store too
    EXPECT_THROW(refuse_store_as_output(db, dir / "link"), bad_input);
    EXPECT_NO_THROW(refuse_store_as_output(dir / "a.db.json", db));
    EXPECT_NO_THROW(refuse_store_as_output(dir / "sub/a.db", db));
}

// Reading writes nothing beside the store; with a live writer's -wal there, its records are read.
TEST(store, reading_leaves_no_file_and_sees_what_a_live_writer_committed) {
    temp_dir dir;
    const auto db = dir / "a.db";
    {
        auto s = result_store::open(db, open_mode::read_write);
        const auto run = s.begin_run("a", "cpu", "", json::object());
        s.add_record(run, sample_record(ledger::op_time, "stock"));
        s.finish_run(run, "complete");
    }
    ASSERT_EQ(list_directory(dir.path()), std::vector<std::string>{"a.db"});
    {
        const auto r = result_store::open(db, open_mode::read_only);
        EXPECT_EQ(r.records(r.runs().at(0).id, true).size(), 1u);
    }
    EXPECT_EQ(list_directory(dir.path()), std::vector<std::string>{"a.db"});
    auto writer = result_store::open(db, open_mode::read_write);
    const auto run = writer.begin_run("b", "cpu", "", json::object());
    writer.add_record(run, sample_record(ledger::correctness, "stock"));
    ASSERT_TRUE(path_exists(db + "-wal")); // committed, not yet in the file itself
    const auto r = result_store::open(db, open_mode::read_only);
    EXPECT_EQ(r.runs().size(), 2u);
    EXPECT_EQ(r.records(run, false).size(), 1u);
    EXPECT_EQ(r.record_counts().at(run), 1);
}

TEST(store, text_that_is_not_utf8_reads_back_as_replacement_characters_and_exports) {
    // found by fuzz_store_bytes (its 10-minute run): a forged byte 0x90 in a stored text made
    // export's JSON serialiser throw
    temp_dir dir;
    {
        auto s = result_store::open(dir / "u.db", open_mode::read_write);
        const auto run = s.begin_run("u", "cpu", "fourfold run ...", json::object());
        s.add_record(run, sample_record(ledger::op_time, "stock"));
        s.finish_run(run, "complete");
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "u.db").c_str(), &db), SQLITE_OK);
    // the lone byte 0x90 (not char(144), which SQLite writes as valid UTF-8)
    ASSERT_EQ(sqlite3_exec(db, "UPDATE jobs SET variant = CAST(X'73749063' AS TEXT)", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    const auto r = result_store::open(dir / "u.db", open_mode::read_only);
    const auto recs = r.records(r.find_run("u").id, false);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].rec.job.variant, "st\xEF\xBF\xBD"
                                       "c");
    std::ostringstream out;
    export_request req;
    EXPECT_NO_THROW(export_store(r, req, out));
    EXPECT_NE(out.str().find("st\xEF\xBF\xBD"
                             "c"),
              std::string::npos);
}

TEST(store, valid_utf8_keeps_every_well_formed_sequence) {
    EXPECT_EQ(valid_utf8("plain"), "plain");
    EXPECT_EQ(valid_utf8("\xC2\xB5s \xE2\x80\x94 \xF0\x9F\x98\x80"),
              "\xC2\xB5s \xE2\x80\x94 \xF0\x9F\x98\x80");
    EXPECT_EQ(valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                 // overlong
    EXPECT_EQ(valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"); // surrogate
    EXPECT_EQ(valid_utf8("a\xE2\x80"), "a\xEF\xBF\xBD\xEF\xBF\xBD");               // cut short
}
