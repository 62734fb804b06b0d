#include "fourfold/store/export.hpp"

#include "fourfold/store/schema.hpp"

#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

namespace fourfold::store {
namespace {

std::vector<run_row> selected_runs(const result_store& store, const export_request& request) {
    if (request.runs.empty())
        return store.runs();
    std::vector<run_row> out;
    for (const auto& r : request.runs)
        out.push_back(store.find_run(r));
    return out;
}

std::string scalar_text(const json& v) {
    if (v.is_null())
        return {};
    if (v.is_string())
        return v.get<std::string>();
    return v.dump();
}

} // namespace

void flatten(const json& value, const std::string& prefix,
             std::vector<std::pair<std::string, json>>& out) {
    if (value.is_object()) {
        for (auto it = value.begin(); it != value.end(); ++it)
            flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
        return;
    }
    out.emplace_back(prefix, value.is_array() ? json(value.dump()) : value);
}

namespace {

// A number as this CSV writes it ("-1.5e-06", "+3"): what a spreadsheet reads as a number, never
// as a formula.
bool plain_number(const std::string& field) {
    if (field.find_first_not_of("0123456789+-.eE") != std::string::npos)
        return false;
    char* end = nullptr;
    std::strtod(field.c_str(), &end);
    return end == field.c_str() + field.size();
}

} // namespace

std::string csv_escape(const std::string& field) {
    // A spreadsheet runs a cell that begins with = + - @ (or a tab or carriage return before
    // one) as a formula: OWASP's CSV injection advice is a leading ' that makes it text.
    std::string text = field;
    if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string::npos &&
        !plain_number(text))
        text.insert(0, 1, '\'');
    if (text.find_first_of(",\"\n\r") == std::string::npos && text.size() == field.size())
        return text;
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

void export_store(const result_store& store, const export_request& request, std::ostream& out) {
    const auto runs = selected_runs(store, request);
    if (request.format == export_format::json) {
        json doc{{"schema", store.schema_version()},
                 {"runs", json::array()},
                 {"records", json::array()}};
        for (const auto& r : runs) {
            doc["runs"].push_back(r.to_json());
            for (const auto& rec : store.records(r.id, request.with_samples))
                doc["records"].push_back(rec.to_json(request.with_samples));
        }
        out << doc.dump(2) << '\n';
        return;
    }
    // CSV: fixed identity columns, then the union of all flattened figure columns.
    const std::vector<std::string> fixed{"run",      "run_label", "id",     "ledger", "workload",
                                         "variant",  "device",    "dtype",  "params", "key",
                                         "case_key", "seed",      "status", "reason", "unit"};
    std::vector<std::vector<std::pair<std::string, json>>> flat;
    std::vector<std::map<std::string, std::string>> rows;
    std::set<std::string> figure_cols;
    for (const auto& r : runs) {
        for (const auto& rec : store.records(r.id, false)) {
            std::map<std::string, std::string> row{
                {"run", std::to_string(r.id)},
                {"run_label", r.label},
                {"id", std::to_string(rec.id)},
                {"ledger", std::string(to_string(rec.rec.which))},
                {"workload", rec.rec.job.workload},
                {"variant", rec.rec.job.variant},
                {"device", rec.rec.job.device},
                {"dtype", rec.rec.job.dtype},
                {"params", rec.rec.job.params.dump()},
                {"key", rec.rec.job.key()},
                {"case_key", rec.rec.job.case_key()},
                {"seed", std::to_string(rec.rec.job.seed)},
                {"status", std::string(to_string(rec.rec.status))},
                {"reason", rec.rec.reason},
                {"unit", rec.rec.unit}};
            std::vector<std::pair<std::string, json>> figures;
            flatten(rec.rec.figures, "", figures);
            for (const auto& [k, v] : figures) {
                figure_cols.insert(k);
                row[k] = scalar_text(v);
            }
            rows.push_back(std::move(row));
        }
    }
    std::vector<std::string> header = fixed;
    header.insert(header.end(), figure_cols.begin(), figure_cols.end());
    for (std::size_t i = 0; i < header.size(); ++i)
        out << (i ? "," : "") << csv_escape(header[i]);
    out << '\n';
    for (const auto& row : rows) {
        for (std::size_t i = 0; i < header.size(); ++i) {
            const auto it = row.find(header[i]);
            out << (i ? "," : "") << (it == row.end() ? "" : csv_escape(it->second));
        }
        out << '\n';
    }
}

} // namespace fourfold::store
