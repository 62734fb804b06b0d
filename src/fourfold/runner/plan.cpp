#include "fourfold/runner/plan.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/core/text.hpp"

#include <fmt/format.h>
#include <set>

namespace fourfold::runner {
namespace {

using workloads::param_kind;
using workloads::param_spec;
using workloads::workload;

const workload& find_workload(const std::string& name) {
    const auto* w = workloads::registry::instance().find(name);
    if (!w)
        throw bad_input(fmt::format("workload '{}' is unknown; valid: {}", name,
                                    workloads::registry::instance().names()));
    return *w;
}

std::vector<std::string> split_list(const std::string& text) {
    std::vector<std::string> out;
    for (const auto& part : split(text, ',')) {
        const auto t = trim(part);
        if (!t.empty()) out.push_back(t);
    }
    return out;
}

json parse_integer(const workload& w, const param_spec& p, const std::string& text) {
    std::uint64_t v = 0;
    if (!parse_uint(text, v))
        throw bad_input(fmt::format("{}={} is not a whole number; {} takes an integer in {}..{}",
                                    p.name, text, p.name, p.min, p.max));
    if (v < static_cast<std::uint64_t>(p.min) || v > static_cast<std::uint64_t>(p.max))
        throw bad_input(fmt::format("{}={} is out of range for {}; valid: {}..{}", p.name, text,
                                    w.name, p.min, p.max));
    return static_cast<std::int64_t>(v);
}

json parse_boolean(const param_spec& p, const std::string& text) {
    if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
    if (text == "false" || text == "0" || text == "no" || text == "off") return false;
    throw bad_input(fmt::format("{}={} is not a boolean; valid: true, false", p.name, text));
}

// One parameter's text (a list, possibly with ranges) -> its values.
std::vector<json> parse_values(const workload& w, const param_spec& p, const std::string& text) {
    std::vector<json> out;
    const auto items = split_list(text);
    if (items.empty())
        throw bad_input(fmt::format("parameter {} of {} has no value", p.name, w.name));
    for (const auto& item : items) {
        switch (p.kind) {
        case param_kind::integer: {
            const auto dots = item.find("..");
            if (dots == std::string::npos) {
                out.push_back(parse_integer(w, p, item));
                break;
            }
            const auto lo = parse_integer(w, p, item.substr(0, dots)).get<std::int64_t>();
            const auto hi = parse_integer(w, p, item.substr(dots + 2)).get<std::int64_t>();
            if (hi < lo || hi - lo > 4096)
                throw bad_input(fmt::format("range {}={} must be ascending and hold at most 4097 "
                                            "values",
                                            p.name, item));
            for (auto v = lo; v <= hi; ++v) out.push_back(v);
            break;
        }
        case param_kind::boolean: out.push_back(parse_boolean(p, item)); break;
        case param_kind::text: {
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

std::string param_names(const workload& w) {
    std::vector<std::string> names;
    for (const auto& p : w.params) names.push_back(p.name);
    return join(names, ", ");
}

// "1x128256" -> {rows: 1, vocab: 128256}
json parse_shape(const workload& w, const std::string& text) {
    if (w.shape_params.empty())
        throw bad_input(fmt::format("workload {} takes no --shape; use --param ({})", w.name,
                                    param_names(w)));
    const auto dims = split(text, 'x');
    const auto form = join(w.shape_params, "x");
    if (dims.size() != w.shape_params.size())
        throw bad_input(fmt::format("shape '{}' has {} dimension(s); {} takes {} ({})", text,
                                    dims.size(), w.name, w.shape_params.size(), form));
    json out = json::object();
    for (std::size_t i = 0; i < dims.size(); ++i) {
        const auto& name = w.shape_params[i];
        const auto* p = w.find_param(name);
        std::uint64_t v = 0;
        if (!parse_uint(trim(dims[i]), v))
            throw bad_input(fmt::format("shape '{}': '{}' is not a positive whole number; {} "
                                        "takes {} with each dimension >= 1",
                                        text, dims[i], w.name, form));
        if (v == 0)
            throw bad_input(fmt::format("shape '{}': dimension {} ({}) is 0; each dimension must "
                                        "be >= 1",
                                        text, i + 1, name));
        if (v > static_cast<std::uint64_t>(p->max))
            throw bad_input(fmt::format("shape '{}': {}={} is above the largest {} allows ({})",
                                        text, name, dims[i], w.name, p->max));
        out[name] = static_cast<std::int64_t>(v);
    }
    return out;
}

void cartesian(const std::vector<std::pair<std::string, std::vector<json>>>& axes, std::size_t i,
               json& current, std::vector<json>& out) {
    if (i == axes.size()) {
        out.push_back(current);
        return;
    }
    for (const auto& v : axes[i].second) {
        current[axes[i].first] = v;
        cartesian(axes, i + 1, current, out);
    }
}

// A value a suite or the CLI gave, checked like its text form (range, kind, choices).
json checked_value(const workload& w, const param_spec& p, const json& v) {
    const auto values = parse_values(w, p, v.is_string() ? v.get<std::string>() : v.dump());
    if (values.size() != 1)
        throw bad_input(fmt::format("parameter {} of {} needs one value, got '{}'", p.name, w.name,
                                    v.dump()));
    return values.front();
}

} // namespace

json run_settings::to_json() const {
    return json{{"ledgers", split(ledgers.names(), ',')},
                {"timing", timing.to_json()},
                {"seed", seed},
                {"memory_min_window_s", memory_min_window_s}};
}

job_id job_group::job(const std::string& variant, const std::string& device) const {
    job_id id;
    id.workload = w->name;
    id.variant = variant;
    id.device = device;
    id.dtype = std::string(to_string(args.type));
    id.params = args.params;
    id.seed = seed;
    return id;
}

std::string job_group::title() const {
    job_id id = job("", "");
    return fmt::format("{} {} {}", w->name, id.params_text(), to_string(args.type));
}

std::size_t plan::job_count() const {
    std::size_t n = 0;
    for (const auto& g : groups) n += g.variants.size();
    return n;
}

ledger_set parse_ledgers(const std::string& text) {
    if (trim(text) == "all") return ledger_set::all();
    ledger_set set;
    for (const auto& item : split_list(text)) {
        const auto l = parse_ledger(item);
        if (!l)
            throw bad_input(fmt::format("ledger '{}' is unknown; valid: {} (or all)", item,
                                        ledger_names()));
        set.add(*l);
    }
    if (set.empty()) throw bad_input(fmt::format("--ledgers is empty; valid: {}", ledger_names()));
    return set;
}

std::vector<job_spec> expand_request(const workload_request& request) {
    const auto& w = find_workload(request.workload);
    std::vector<std::pair<std::string, std::vector<json>>> axes;
    std::set<std::string> named;
    for (const auto& text : request.params) {
        const auto eq = text.find('=');
        if (eq == std::string::npos || eq == 0)
            throw bad_input(fmt::format("--param '{}' is not NAME=VALUE; {} takes: {}", text,
                                        w.name, param_names(w)));
        const auto name = trim(text.substr(0, eq));
        const auto* p = w.find_param(name);
        if (!p)
            throw bad_input(fmt::format("parameter '{}' is unknown to {}; valid: {}", name, w.name,
                                        param_names(w)));
        if (!named.insert(name).second)
            throw bad_input(fmt::format("parameter {} is given twice; give one list instead "
                                        "({}=a,b)",
                                        name, name));
        axes.emplace_back(name, parse_values(w, *p, text.substr(eq + 1)));
    }
    std::vector<json> shapes;
    for (const auto& text : request.shapes)
        for (const auto& one : split_list(text)) shapes.push_back(parse_shape(w, one));
    if (!shapes.empty())
        for (const auto& name : w.shape_params)
            if (named.count(name))
                throw bad_input(fmt::format("{} is set by both --shape and --param; give it once",
                                            name));
    if (shapes.empty()) shapes.push_back(json::object());

    std::vector<dtype> types;
    for (const auto& text : request.dtypes) {
        for (const auto& item : split_list(text)) {
            const auto t = parse_dtype(item);
            if (!t)
                throw bad_input(fmt::format("dtype '{}' is unknown; valid: {}", item, dtype_names()));
            types.push_back(*t);
        }
    }
    if (types.empty()) types.push_back(w.dtypes.front());

    std::vector<std::string> variants;
    for (const auto& text : request.variants)
        for (const auto& v : split_list(text)) variants.push_back(v);

    std::vector<json> combos;
    json current = json::object();
    cartesian(axes, 0, current, combos);
    std::vector<job_spec> out;
    for (const auto& shape : shapes)
        for (const auto& combo : combos)
            for (const auto t : types) {
                job_spec s;
                s.workload = w.name;
                s.params = shape;
                for (auto it = combo.begin(); it != combo.end(); ++it) s.params[it.key()] = it.value();
                s.type = t;
                s.variants = variants;
                out.push_back(std::move(s));
            }
    return out;
}

plan make_plan(const std::vector<job_spec>& specs, const run_settings& settings,
               const backend::device& dev) {
    if (const auto why = measure::mode_unsupported(settings.timing.mode, settings.timing.cache,
                                                   dev.caps());
        why && settings.ledgers.has(ledger::op_time))
        throw bad_input(fmt::format("{} (device {})", *why, dev.name()));
    plan p;
    p.settings = settings;
    std::set<std::string> seen;
    for (const auto& spec : specs) {
        const auto& w = find_workload(spec.workload);
        if (!w.supports(spec.type)) {
            std::vector<std::string> names;
            for (const auto d : w.dtypes) names.emplace_back(to_string(d));
            throw bad_input(fmt::format("workload {} has no dtype {}; valid: {}", w.name,
                                        to_string(spec.type), join(names, ", ")));
        }
        if (!dev.caps().supports(spec.type)) {
            std::vector<std::string> names;
            for (const auto d : dev.caps().dtypes) names.emplace_back(to_string(d));
            const auto it = dev.caps().dtype_unsupported.find(std::string(to_string(spec.type)));
            throw bad_input(fmt::format(
                "dtype {} is not supported on device {}{}; valid there: {}", to_string(spec.type),
                dev.name(),
                it == dev.caps().dtype_unsupported.end() ? "" : " (" + it->second + ")",
                join(names, ", ")));
        }
        job_group g;
        g.w = &w;
        g.note = spec.note;
        g.args.workload = w.name;
        g.args.type = spec.type;
        g.args.params = json::object();
        for (const auto& p_spec : w.params) {
            if (spec.params.contains(p_spec.name)) {
                g.args.params[p_spec.name] = checked_value(w, p_spec, spec.params.at(p_spec.name));
                continue;
            }
            g.args.params[p_spec.name] = parse_values(w, p_spec, p_spec.default_value).front();
        }
        for (auto it = spec.params.begin(); it != spec.params.end(); ++it)
            if (!w.find_param(it.key()))
                throw bad_input(fmt::format("parameter '{}' is unknown to {}; valid: {}", it.key(),
                                            w.name, param_names(w)));
        const auto names = spec.variants.empty() ? w.user_variant_names() : spec.variants;
        for (const auto& v : names) {
            if (!w.find_variant(v))
                throw bad_input(fmt::format("variant '{}' is unknown to {}; valid: {}", v, w.name,
                                            join(w.user_variant_names(), ", ")));
            if (std::find(g.variants.begin(), g.variants.end(), v) == g.variants.end())
                g.variants.push_back(v);
        }
        g.c = w.make_case(g.args);
        const auto need = g.c->declared_cost().bytes();
        if (need > static_cast<double>(dev.caps().memory_bytes))
            throw bad_input(fmt::format("{} needs at least {} (its inputs and outputs) but device "
                                        "{} has {}; choose a smaller shape",
                                        g.title(), human_bytes(need), dev.name(),
                                        human_bytes(static_cast<double>(dev.caps().memory_bytes))));
        const auto id = g.job("", dev.name());
        if (!seen.insert(id.key()).second) continue; // the same case twice: run it once
        g.seed = splitmix64(settings.seed ^ fnv1a64(id.case_key()));
        p.groups.push_back(std::move(g));
    }
    if (p.groups.empty()) throw bad_input("nothing to run: the request expands to no jobs");
    return p;
}

} // namespace fourfold::runner
