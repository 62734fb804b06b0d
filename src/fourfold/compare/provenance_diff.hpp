#pragma once
// What differs between two runs' provenance, each differing field filed under a named
// difference (`--allow-diff NAME`), or set aside as never treatment: fields that differ between
// any two runs (timestamps, host name, clocks read at start, the bandwidth measured at start).
#include "fourfold/core/json.hpp"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::compare {

struct diff_name {
    std::string_view name;
    std::string_view covers; // what it stands for, for --help and refusal messages
};
// Every name --allow-diff accepts, provenance names and job-field names alike.
const std::vector<diff_name>& diff_names();
bool is_diff_name(std::string_view name);
std::string diff_names_text(); // "device, dtype, device_model, ..."
std::string diff_names_help(); // one line per name

// The named difference a flattened provenance path ("device.name") belongs to; empty when the
// field is never treatment; k_derived when it follows from other fields (device capabilities).
inline constexpr std::string_view k_derived = "derived";
std::string diff_name_of(std::string_view path);

struct field_diff {
    std::string path; // dotted, as in the CSV export: "libtorch.version"
    std::string name; // the named difference it belongs to
    json a, b;        // null where one side lacks the field
};

struct provenance_diff {
    std::vector<field_diff> fields;           // treatment candidates, by path
    std::vector<field_diff> derived;          // follow from `fields`, shown, never declared
    std::vector<std::string> never_treatment; // differing paths set aside, by path
    std::set<std::string> names() const;      // names of `fields`
};

provenance_diff diff_provenance(const json& a, const json& b);

// A value for one line of text: long values (show_config) are summarised, not printed.
std::string short_value(const json& v);

} // namespace fourfold::compare
