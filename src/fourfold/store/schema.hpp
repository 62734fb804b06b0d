#pragma once
// The store's schema: runs, jobs, one table per ledger, raw samples. Each ledger table keeps its
// headline figures as typed columns (for SQL users) and the full figures as JSON.
#include "fourfold/core/ledger.hpp"
#include "fourfold/store/sqlite.hpp"

#include <string_view>
#include <vector>

namespace fourfold::store {

inline constexpr int k_schema_version = 1;

struct headline_column {
    std::string_view name;     // column name
    std::string_view sql_type; // REAL, INTEGER, TEXT
    std::string_view pointer;  // JSON pointer into the record's figures
};

std::string_view table_of(ledger l);
const std::vector<headline_column>& headline_columns(ledger l);

// Creates the schema on an empty database, or checks that an existing one is a fourfold store
// of a version this build can read (migrating older versions). Throws sqlite_error or
// std::runtime_error describing what is wrong.
void ensure_schema(database& db, bool writable);
int read_schema_version(database& db);

} // namespace fourfold::store
