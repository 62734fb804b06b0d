// The request grammar (runner/plan_grammar.hpp) from arbitrary text: --shape AxB, --param
// NAME=VALUE with lists and ranges, a suite's JSON value checked like its text, --ledgers and
// --threads. Each either refuses with bad_input or returns values inside the rule's bounds; any
// other exception, a value out of bounds or a sanitizer report is a crash. The grammars are the
// real workloads' (softmax, pad, linear_decode, moe_decode, decode), written out here because the
// registry that holds them needs libtorch.
#include "fourfold/core/error.hpp"
#include "fourfold/runner/plan_grammar.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace fourfold;
using namespace fourfold::runner;

value_rule integer(std::string name, std::int64_t min, std::int64_t max) {
    return {std::move(name), value_kind::integer, min, max, {}};
}

const std::vector<request_grammar>& grammars() {
    static const std::vector<request_grammar> all{
        {"softmax",
         {integer("rows", 1, 1 << 20), integer("vocab", 1, std::int64_t{1} << 31)},
         {"rows", "vocab"}},
        {"pad",
         {integer("batch", 1, 1 << 10), integer("channels", 1, 1 << 16),
          integer("frames", 1, 1 << 12), integer("height", 1, 1 << 16),
          integer("width", 1, 1 << 16), integer("pad_time", 0, 64), integer("pad_space", 0, 64)},
         {"batch", "channels", "frames", "height", "width"}},
        {"linear_decode",
         {integer("tokens", 1, 1 << 16),
          integer("n", 1, 1 << 22),
          integer("k", 1, 1 << 22),
          {"bias", value_kind::boolean, 1, 1, {}}},
         {"tokens", "n", "k"}},
        {"moe_decode",
         {integer("tokens", 1, 1 << 16),
          integer("experts", 1, 1 << 12),
          integer("top_k", 1, 1 << 12),
          integer("hidden", 1, 1 << 16),
          integer("width", 1, 1 << 16),
          {"part", value_kind::text, 1, 1, {"ffn", "gate_up"}}},
         {"tokens", "experts", "top_k", "hidden", "width"}},
        {"decode",
         {{"model", value_kind::text, 1, 1, {}},
          integer("ctx", 1, 1 << 20),
          {"mode", value_kind::text, 1, 1, {"eager", "graph"}},
          integer("init_seed", 0, std::numeric_limits<std::int32_t>::max())},
         {}},
    };
    return all;
}

void check(bool ok) {
    if (!ok)
        std::abort();
}

// A value the grammar returned for `p` is of its kind and inside its bounds.
void check_value(const value_rule& p, const json& v) {
    switch (p.kind) {
    case value_kind::integer:
        check(v.is_number_integer() && v.get<std::int64_t>() >= p.min &&
              v.get<std::int64_t>() <= p.max);
        break;
    case value_kind::boolean:
        check(v.is_boolean());
        break;
    case value_kind::text:
        check(v.is_string() &&
              (p.choices.empty() || std::find(p.choices.begin(), p.choices.end(),
                                              v.get<std::string>()) != p.choices.end()));
        break;
    }
}

template <class F> void refused_or(F&& f) {
    try {
        f();
    } catch (const bad_input&) {
        // the grammar's documented refusal
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto j = json::parse(text, nullptr, false);
    for (const auto& g : grammars()) {
        refused_or([&] {
            const auto shape = parse_shape(g, text);
            check(shape.size() == g.shape_params.size());
            for (const auto& name : g.shape_params) {
                check(shape.contains(name));
                check_value(*g.find(name), shape.at(name));
                check(shape.at(name).get<std::int64_t>() >= 1);
            }
        });
        refused_or([&] {
            const auto a = split_param(g, text);
            check(a.rule == g.find(a.name));
            for (const auto& v : parse_values(g, *a.rule, a.value))
                check_value(*a.rule, v);
        });
        for (const auto& p : g.params) {
            refused_or([&] {
                const auto values = parse_values(g, p, text);
                check(!values.empty());
                for (const auto& v : values)
                    check_value(p, v);
            });
            if (!j.is_discarded())
                refused_or([&] { check_value(p, checked_value(g, p, j)); });
        }
    }
    refused_or([&] {
        for (const auto& item : split_list(text, "fuzz"))
            check(!item.empty());
    });
    refused_or([&] { check(!parse_ledgers(text).empty()); });
    refused_or([&] {
        const int n = parse_threads(text);
        check(n >= 1 && n <= k_max_threads);
    });
    return 0;
}
