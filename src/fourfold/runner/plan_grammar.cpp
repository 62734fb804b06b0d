#include "fourfold/runner/plan_grammar.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace fourfold::runner {
namespace {

json parse_integer(const request_grammar& g, const value_rule& p, const std::string& text) {
    std::uint64_t v = 0;
    if (!parse_uint(text, v))
        throw bad_input(
            fmt::format("{}={} is not a whole number; valid: {}..{}", p.name, text, p.min, p.max));
    if (v < static_cast<std::uint64_t>(p.min) || v > static_cast<std::uint64_t>(p.max))
        throw bad_input(fmt::format("{}={} is out of range for {}; valid: {}..{}", p.name, text,
                                    g.workload, p.min, p.max));
    return static_cast<std::int64_t>(v);
}

json parse_boolean(const value_rule& p, const std::string& text) {
    if (text == "true" || text == "1" || text == "yes" || text == "on")
        return true;
    if (text == "false" || text == "0" || text == "no" || text == "off")
        return false;
    throw bad_input(fmt::format("{}={} is not a boolean; valid: true, false", p.name, text));
}

} // namespace

const value_rule* request_grammar::find(const std::string& name) const {
    for (const auto& p : params)
        if (p.name == name)
            return &p;
    return nullptr;
}

std::string request_grammar::param_names() const {
    std::vector<std::string> names;
    for (const auto& p : params)
        names.push_back(p.name);
    return join(names, ", ");
}

std::vector<std::string> split_list(const std::string& text, const std::string& what) {
    std::vector<std::string> out;
    for (const auto& part : split(text, ',')) {
        auto t = trim(part);
        if (t.empty())
            throw bad_input(fmt::format("{} has an empty item; give a comma list of values with "
                                        "none empty (e.g. a,b)",
                                        what));
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<json> parse_values(const request_grammar& g, const value_rule& p,
                               const std::string& text) {
    std::vector<json> out;
    const auto items = split_list(text, fmt::format("{}={}", p.name, text));
    for (const auto& item : items) {
        switch (p.kind) {
        case value_kind::integer: {
            const auto dots = item.find("..");
            if (dots == std::string::npos) {
                out.push_back(parse_integer(g, p, item));
                break;
            }
            const auto lo = parse_integer(g, p, item.substr(0, dots)).get<std::int64_t>();
            const auto hi = parse_integer(g, p, item.substr(dots + 2)).get<std::int64_t>();
            if (hi < lo || hi - lo > k_max_range_values - 1)
                throw bad_input(fmt::format("range {}={} must be ascending and hold at most {} "
                                            "values",
                                            p.name, item, k_max_range_values));
            for (auto v = lo; v <= hi; ++v)
                out.push_back(v);
            break;
        }
        case value_kind::boolean:
            out.push_back(parse_boolean(p, item));
            break;
        case value_kind::text: {
            if (!p.choices.empty() &&
                std::find(p.choices.begin(), p.choices.end(), item) == p.choices.end())
                throw bad_input(fmt::format("{}={} is not allowed; valid: {}", p.name, item,
                                            join(p.choices, ", ")));
            out.push_back(item);
            break;
        }
        }
    }
    return out;
}

json checked_value(const request_grammar& g, const value_rule& p, const json& v) {
    const auto values = parse_values(g, p, v.is_string() ? v.get<std::string>() : v.dump());
    if (values.size() != 1)
        throw bad_input(fmt::format("parameter {} of {} needs one value, got '{}'", p.name,
                                    g.workload, v.dump()));
    return values.front();
}

json parse_shape(const request_grammar& g, const std::string& text) {
    if (g.shape_params.empty())
        throw bad_input(fmt::format("workload {} takes no --shape; use --param ({})", g.workload,
                                    g.param_names()));
    const auto dims = split(text, 'x');
    const auto form = join(g.shape_params, "x");
    if (dims.size() != g.shape_params.size())
        throw bad_input(fmt::format("shape '{}' has {} dimension(s); {} takes {} ({})", text,
                                    dims.size(), g.workload, g.shape_params.size(), form));
    json out = json::object();
    for (std::size_t i = 0; i < dims.size(); ++i) {
        const auto& name = g.shape_params[i];
        const auto* p = g.find(name);
        if (!p)
            throw std::logic_error(fmt::format(
                "{}: shape parameter {} is not one of its parameters", g.workload, name));
        std::uint64_t v = 0;
        if (!parse_uint(trim(dims[i]), v))
            throw bad_input(fmt::format("shape '{}': '{}' is not a positive whole number; {} "
                                        "takes {} with each dimension >= 1",
                                        text, dims[i], g.workload, form));
        if (v == 0)
            throw bad_input(fmt::format("shape '{}': dimension {} ({}) is 0; each dimension must "
                                        "be >= 1",
                                        text, i + 1, name));
        if (v > static_cast<std::uint64_t>(p->max))
            throw bad_input(fmt::format("shape '{}': {}={} is above the largest {} allows ({})",
                                        text, name, dims[i], g.workload, p->max));
        out[name] = static_cast<std::int64_t>(v);
    }
    return out;
}

param_assignment split_param(const request_grammar& g, const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0)
        throw bad_input(fmt::format("--param '{}' is not NAME=VALUE; {} takes: {}", text,
                                    g.workload, g.param_names()));
    param_assignment out;
    out.name = trim(text.substr(0, eq));
    out.rule = g.find(out.name);
    if (!out.rule)
        throw bad_input(fmt::format("parameter '{}' is unknown to {}; valid: {}", out.name,
                                    g.workload, g.param_names()));
    out.value = text.substr(eq + 1);
    return out;
}

ledger_set parse_ledgers(const std::string& text) {
    if (trim(text) == "all")
        return ledger_set::all();
    ledger_set set;
    for (const auto& item : split_list(text, "--ledgers '" + text + "'")) {
        const auto l = parse_ledger(item);
        if (!l)
            throw bad_input(
                fmt::format("ledger '{}' is unknown; valid: {} (or all)", item, ledger_names()));
        set.add(*l);
    }
    if (set.empty())
        throw bad_input(fmt::format("--ledgers is empty; valid: {}", ledger_names()));
    return set;
}

int parse_threads(const std::string& text) {
    std::uint64_t v = 0;
    if (!parse_uint(text, v) || v < 1 || v > k_max_threads)
        throw bad_input(
            fmt::format("--threads '{}' is out of range; valid: 1..{}", text, k_max_threads));
    return static_cast<int>(v);
}

} // namespace fourfold::runner
