#pragma once
// The text grammar of a request, without the workload registry (so without libtorch): comma
// lists, --shape AxB, --param NAME=VALUE with integer ranges (1..8), booleans and text choices,
// --ledgers and --threads. plan.cpp describes each workload's parameters to it as plain rules;
// fuzz/fuzz_plan_grammar.cpp feeds it arbitrary text. Every refusal is a bad_input naming the
// value and what would be valid.
#include "fourfold/core/json.hpp"
#include "fourfold/core/ledger.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fourfold::runner {

enum class value_kind { integer, boolean, text };

// One parameter as the grammar checks it (a workload's param_spec, less its help and default).
struct value_rule {
    std::string name;
    value_kind kind = value_kind::integer;
    std::int64_t min = 1; // integers: the closed range, min >= 0
    std::int64_t max = std::numeric_limits<std::int32_t>::max();
    std::vector<std::string> choices; // text: the allowed values; empty: any text
};

// The parameters of one workload and the ones its --shape fills, in order.
struct request_grammar {
    std::string workload;
    std::vector<value_rule> params;
    std::vector<std::string> shape_params; // each names one of params
    const value_rule* find(const std::string& name) const;
    std::string param_names() const; // "rows, vocab"
};

// Most values one integer range (lo..hi) may expand to.
inline constexpr std::int64_t k_max_range_values = 4097;

// A comma list, each item trimmed; `what` names it in the message when an item is empty
// ("rows=1,,2", "--dtype ,").
std::vector<std::string> split_list(const std::string& text, const std::string& what);
// One parameter's text (a comma list; integers may hold ranges lo..hi) -> its values.
std::vector<json> parse_values(const request_grammar& g, const value_rule& p,
                               const std::string& text);
// A value a suite or the CLI gave (a JSON number, boolean or text), checked like its text form:
// exactly one value.
json checked_value(const request_grammar& g, const value_rule& p, const json& v);
// "1x128256" -> {rows: 1, vocab: 128256}: one dimension per shape parameter, each >= 1 and at
// most the parameter's max.
json parse_shape(const request_grammar& g, const std::string& text);
// "--param NAME=VALUE" split: NAME (trimmed) must be one of the workload's; VALUE is left for
// parse_values.
struct param_assignment {
    std::string name;
    const value_rule* rule = nullptr; // into the grammar
    std::string value;
};
param_assignment split_param(const request_grammar& g, const std::string& text);

// Parses "op_time,correctness" (or "all").
ledger_set parse_ledgers(const std::string& text);
// Most threads --threads takes, and its parser (bad_input naming the value and the range).
inline constexpr int k_max_threads = 4096;
int parse_threads(const std::string& text);

} // namespace fourfold::runner
