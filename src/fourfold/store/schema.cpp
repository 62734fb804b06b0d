#include "fourfold/store/schema.hpp"

#include "fourfold/core/text.hpp"

#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace fourfold::store {
namespace {

const std::vector<headline_column> k_op_time{
    {"mode", "TEXT", "/mode"},
    {"cache", "TEXT", "/cache"},
    {"median_us", "REAL", "/stats/median"},
    {"ci95_low_us", "REAL", "/stats/ci95_low"},
    {"ci95_high_us", "REAL", "/stats/ci95_high"},
    {"n", "INTEGER", "/stats/n"},
    {"gb_per_s", "REAL", "/gb_per_s"},
    {"pct_of_bandwidth", "REAL", "/pct_of_bandwidth"},
    {"stop", "TEXT", "/stop"},
};
const std::vector<headline_column> k_correctness{
    {"verdict", "TEXT", "/verdict"},          {"rel_l2", "REAL", "/metrics/rel_l2"},
    {"max_abs", "REAL", "/metrics/max_abs"},  {"psnr_db", "REAL", "/metrics/psnr_db"},
    {"max_ulp", "REAL", "/metrics/max_ulp"},  {"nan_count", "INTEGER", "/metrics/nan"},
    {"inf_count", "INTEGER", "/metrics/inf"},
};
const std::vector<headline_column> k_memory{
    {"driver_peak_bytes", "INTEGER", "/driver_peak_bytes"},
    {"reserved_peak_bytes", "INTEGER", "/reserved_peak_bytes"},
    {"allocated_peak_bytes", "INTEGER", "/allocated_peak_bytes"},
    {"outside_allocator_bytes", "INTEGER", "/outside_allocator_bytes"},
    {"sampler_hz", "REAL", "/sampler/achieved_hz"},
};
const std::vector<headline_column> k_throughput{
    {"ctx", "INTEGER", "/ctx"},
    {"mode", "TEXT", "/mode"},
    {"tokens_per_s", "REAL", "/tokens_per_s"},
    {"ms_per_token_median", "REAL", "/ms_per_token/median"},
    {"prefill_ms", "REAL", "/prefill_ms"},
};

std::string ledger_table_sql(ledger l) {
    std::string cols;
    for (const auto& c : headline_columns(l))
        cols += fmt::format("  {} {},\n", c.name, c.sql_type);
    return fmt::format("CREATE TABLE {0} (\n"
                       "  id INTEGER PRIMARY KEY,\n"
                       "  run_id INTEGER NOT NULL REFERENCES runs(id),\n"
                       "  job_id INTEGER NOT NULL REFERENCES jobs(id),\n"
                       "  status TEXT NOT NULL CHECK (status IN ('ok','skipped','failed')),\n"
                       "  reason TEXT,\n"
                       "  unit TEXT NOT NULL,\n"
                       "{1}"
                       "  figures TEXT NOT NULL,\n"
                       "  recorded_at TEXT NOT NULL\n"
                       ");\n"
                       "CREATE INDEX {0}_run ON {0}(run_id);\n",
                       table_of(l), cols);
}

std::string schema_v1() {
    std::string sql = R"(
CREATE TABLE fourfold_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  label TEXT,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  status TEXT NOT NULL,
  device TEXT,
  command TEXT,
  provenance TEXT NOT NULL
);
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  key TEXT NOT NULL,
  case_key TEXT NOT NULL,
  workload TEXT NOT NULL,
  variant TEXT NOT NULL,
  device TEXT NOT NULL,
  dtype TEXT NOT NULL,
  params TEXT NOT NULL,
  seed INTEGER NOT NULL,
  UNIQUE (run_id, key)
);
CREATE TABLE samples (
  ledger TEXT NOT NULL,
  record_id INTEGER NOT NULL,
  unit TEXT NOT NULL,
  n INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (ledger, record_id)
);
)";
    for (const auto l : k_all_ledgers)
        sql += ledger_table_sql(l);
    return sql;
}

bool has_table(database& db, std::string_view name) {
    auto st = db.prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?");
    st.bind(1, name);
    return st.step();
}

int count_tables(database& db) {
    auto st = db.prepare("SELECT count(*) FROM sqlite_master WHERE type='table'");
    st.step();
    return static_cast<int>(st.int64(0));
}

} // namespace

std::string_view table_of(ledger l) {
    return to_string(l);
}

const std::vector<headline_column>& headline_columns(ledger l) {
    switch (l) {
    case ledger::op_time:
        return k_op_time;
    case ledger::correctness:
        return k_correctness;
    case ledger::memory:
        return k_memory;
    case ledger::throughput:
        return k_throughput;
    }
    return k_op_time;
}

int read_schema_version(database& db) {
    auto st = db.prepare("SELECT value FROM fourfold_meta WHERE key='schema_version'");
    if (!st.step())
        throw std::runtime_error("it has no schema version");
    std::uint64_t version = 0;
    if (!parse_uint(st.text(0), version) || version > 1000000)
        throw std::runtime_error(
            fmt::format("its schema version '{}' is not a number", st.text(0)));
    return static_cast<int>(version);
}

void ensure_schema(database& db, bool writable) {
    // Reading sqlite_master is the first access: a file that is not SQLite fails here.
    const int tables = count_tables(db);
    if (tables == 0) {
        if (!writable)
            throw std::runtime_error("it is empty (no fourfold runs)");
        transaction tx(db);
        // another process may have created it while this one waited for the lock
        if (count_tables(db) != 0) {
            tx.commit();
            return ensure_schema(db, writable);
        }
        db.exec(schema_v1());
        auto st = db.prepare("INSERT INTO fourfold_meta(key, value) VALUES (?, ?)");
        st.bind(1, "schema_version").bind(2, std::to_string(k_schema_version)).step();
        st.reset();
        st.bind(1, "created_by").bind(2, "fourfold").step();
        tx.commit();
        return;
    }
    if (!has_table(db, "fourfold_meta"))
        throw std::runtime_error("it is an SQLite database but not a fourfold store");
    const int version = read_schema_version(db);
    if (version > k_schema_version)
        throw std::runtime_error(
            fmt::format("its schema version {} is newer than this build reads ({})", version,
                        k_schema_version));
    // Migrations from older versions go here, one transaction each, when version 2 exists.
}

} // namespace fourfold::store
