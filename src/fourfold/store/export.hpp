#pragma once
// `fourfold export`: the store as JSON ({"schema", "runs", "records"}) or CSV (one row per record,
// figures flattened to dotted columns).
#include "fourfold/store/result_store.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace fourfold::store {

enum class export_format { json, csv };

struct export_request {
    std::vector<std::string> runs; // ids or labels; empty: every run
    export_format format = export_format::json;
    bool with_samples = false;
};

void export_store(const result_store& store, const export_request& request, std::ostream& out);

// Flattens a JSON object into dotted keys ("stats.median"); arrays stay JSON text.
void flatten(const json& value, const std::string& prefix,
             std::vector<std::pair<std::string, json>>& out);
// One CSV cell: quoted where it holds a comma, quote or line break; a cell a spreadsheet would
// run as a formula (it begins with = + - @, tab or CR and is not a number) gets a leading '.
std::string csv_escape(const std::string& field);

} // namespace fourfold::store
