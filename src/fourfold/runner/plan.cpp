#include "fourfold/runner/plan.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/core/text.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace fourfold::runner {
namespace {

using workloads::param_kind;
using workloads::workload;

const workload& find_workload(const std::string& name) {
    const auto* w = workloads::registry::instance().find(name);
    if (!w)
        throw bad_input(fmt::format("workload '{}' is unknown; valid: {}", name,
                                    workloads::registry::instance().names()));
    return *w;
}

std::string param_names(const workload& w) {
    std::vector<std::string> names;
    for (const auto& p : w.params)
        names.push_back(p.name);
    return join(names, ", ");
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

} // namespace

json run_settings::to_json() const {
    return json{{"ledgers", split(ledgers.names(), ',')},
                {"timing", timing.to_json()},
                {"seed", seed},
                {"memory_min_window_s", memory_min_window_s},
                {"threads", threads > 0 ? json(threads) : json("libtorch default")}};
}

job_id job_group::job(const std::string& variant, const std::string& device) const {
    job_id id;
    id.workload = w->name;
    id.variant = variant;
    id.device = device;
    id.dtype = std::string(to_string(args.type));
    id.params = args.params;
    // a parameter added later is left out while at its default: older records' keys stand
    if (w)
        for (const auto& p : w->params)
            if (p.omit_at_default && id.params.contains(p.name) &&
                id.params[p.name] == p.default_json())
                id.params.erase(p.name);
    id.seed = seed;
    return id;
}

std::string job_group::title() const {
    job_id id = job("", "");
    return fmt::format("{} {} {}", w->name, id.params_text(), to_string(args.type));
}

std::size_t plan::job_count() const {
    std::size_t n = 0;
    for (const auto& g : groups)
        n += g.variants.size();
    return n;
}

request_grammar grammar_of(const workload& w) {
    request_grammar g;
    g.workload = w.name;
    for (const auto& p : w.params) {
        value_rule rule;
        rule.name = p.name;
        switch (p.kind) {
        case param_kind::integer:
            rule.kind = value_kind::integer;
            break;
        case param_kind::boolean:
            rule.kind = value_kind::boolean;
            break;
        case param_kind::text:
            rule.kind = value_kind::text;
            break;
        }
        rule.min = p.min;
        rule.max = p.max;
        rule.choices = p.choices;
        g.params.push_back(std::move(rule));
    }
    g.shape_params = w.shape_params;
    return g;
}

std::vector<job_spec> expand_request(const workload_request& request) {
    const auto& w = find_workload(request.workload);
    const auto grammar = grammar_of(w);
    std::vector<std::pair<std::string, std::vector<json>>> axes;
    std::set<std::string> named;
    for (const auto& text : request.params) {
        const auto a = split_param(grammar, text);
        if (!named.insert(a.name).second)
            throw bad_input(fmt::format("parameter {} is given twice; give one list instead "
                                        "({}=a,b)",
                                        a.name, a.name));
        axes.emplace_back(a.name, parse_values(grammar, *a.rule, a.value));
    }
    std::vector<json> shapes;
    for (const auto& text : request.shapes)
        for (const auto& one : split_list(text, "--shape '" + text + "'"))
            shapes.push_back(parse_shape(grammar, one));
    if (!shapes.empty())
        for (const auto& name : w.shape_params)
            if (named.count(name))
                throw bad_input(
                    fmt::format("{} is set by both --shape and --param; give it once", name));
    if (shapes.empty())
        shapes.push_back(json::object());

    std::vector<dtype> types;
    for (const auto& text : request.dtypes) {
        for (const auto& item : split_list(text, "--dtype '" + text + "'")) {
            const auto t = parse_dtype(item);
            if (!t)
                throw bad_input(
                    fmt::format("dtype '{}' is unknown; valid: {}", item, dtype_names()));
            types.push_back(*t);
        }
    }
    if (types.empty())
        types.push_back(w.dtypes.front());

    std::vector<std::string> variants;
    for (const auto& text : request.variants)
        for (const auto& v : split_list(text, "--variants '" + text + "'"))
            variants.push_back(v);

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
                for (auto it = combo.begin(); it != combo.end(); ++it)
                    s.params[it.key()] = it.value();
                s.type = t;
                s.variants = variants;
                out.push_back(std::move(s));
            }
    return out;
}

// More than a 48-bit address space holds: no device, the CPU included, can take such a case.
constexpr double k_no_device_bytes = static_cast<double>(std::int64_t{1} << 48);

plan make_plan(const std::vector<job_spec>& specs, const run_settings& settings,
               const backend::device& dev) {
    plan p;
    p.settings = settings;
    // A timing mode this device lacks (graph or event timing on the CPU) skips the op_time
    // records with the reason; the other ledgers are measured.
    std::optional<std::string> untimed;
    if (settings.ledgers.has(ledger::op_time))
        if (const auto why = measure::mode_unsupported(settings.timing.mode, settings.timing.cache,
                                                       dev.caps())) {
            untimed = fmt::format("{} (device {})", *why, dev.name());
            p.settings.ledgers.remove(ledger::op_time);
        }
    std::set<std::string> seen;
    std::vector<std::string> measures_none; // workloads with none of the ledgers asked
    const auto known_elsewhere = [&](const std::string& v) {
        return std::any_of(specs.begin(), specs.end(), [&](const job_spec& other) {
            return find_workload(other.workload).find_variant(v) != nullptr;
        });
    };
    const auto variants_of_request = [&] {
        std::vector<std::string> all;
        for (const auto& other : specs)
            for (const auto& v : find_workload(other.workload).user_variant_names())
                if (std::find(all.begin(), all.end(), v) == all.end())
                    all.push_back(v);
        return all;
    };
    for (const auto& spec : specs) {
        const auto& w = find_workload(spec.workload);
        if (!w.supports(spec.type)) {
            std::vector<std::string> names;
            for (const auto d : w.dtypes)
                names.emplace_back(to_string(d));
            throw bad_input(fmt::format("workload {} has no dtype {}; valid: {}", w.name,
                                        to_string(spec.type), join(names, ", ")));
        }
        job_group g;
        g.w = &w;
        g.note = spec.note;
        g.args.workload = w.name;
        g.args.type = spec.type;
        g.args.params = json::object();
        const auto grammar = grammar_of(w);
        for (const auto& p_spec : w.params) {
            const auto& rule = *grammar.find(p_spec.name);
            if (spec.params.contains(p_spec.name)) {
                g.args.params[p_spec.name] =
                    checked_value(grammar, rule, spec.params.at(p_spec.name));
                continue;
            }
            g.args.params[p_spec.name] = parse_values(grammar, rule, p_spec.default_value).front();
        }
        for (auto it = spec.params.begin(); it != spec.params.end(); ++it)
            if (!w.find_param(it.key()))
                throw bad_input(fmt::format("parameter '{}' is unknown to {}; valid: {}", it.key(),
                                            w.name, param_names(w)));
        // --variants over several workloads: each takes the names it knows (a name is refused
        // only when no workload of the request knows it), and a workload that knows none of
        // them has no job.
        const auto names = spec.variants.empty() ? w.user_variant_names() : spec.variants;
        for (const auto& v : names) {
            if (!w.find_variant(v)) {
                if (spec.variants.empty() || !known_elsewhere(v))
                    throw bad_input(fmt::format("variant '{}' is unknown to {}; valid: {}", v,
                                                w.name, join(variants_of_request(), ", ")));
                continue;
            }
            if (std::find(g.variants.begin(), g.variants.end(), v) == g.variants.end())
                g.variants.push_back(v);
        }
        if (g.variants.empty())
            continue;
        g.c = w.make_case(g.args);
        const auto need = g.c->declared_cost().bytes();
        if (need > k_no_device_bytes)
            throw bad_input(fmt::format("{} needs at least {} (its inputs and outputs), more than "
                                        "any device addresses (256 TiB); choose a smaller shape",
                                        g.title(), human_bytes(need)));
        const auto asked = settings.ledgers.intersect(w.ledgers);
        if (asked.empty()) {
            if (std::find(measures_none.begin(), measures_none.end(), w.name) ==
                measures_none.end())
                measures_none.push_back(w.name);
            continue;
        }
        const auto id = g.job("", dev.name());
        if (!seen.insert(id.key()).second)
            continue; // the same case twice: run it once
        g.seed = splitmix64(settings.seed ^ fnv1a64(id.case_key()));

        // What this device or build cannot do is a skip with its reason, not bad input.
        std::optional<std::string> cannot;
        if (!dev.caps().supports(spec.type)) {
            std::vector<std::string> types;
            for (const auto d : dev.caps().dtypes)
                types.emplace_back(to_string(d));
            const auto it = dev.caps().dtype_unsupported.find(std::string(to_string(spec.type)));
            cannot = fmt::format(
                "dtype {} is not supported on device {}{}; valid there: {}", to_string(spec.type),
                dev.name(), it == dev.caps().dtype_unsupported.end() ? "" : " (" + it->second + ")",
                join(types, ", "));
        } else if (need > static_cast<double>(dev.caps().memory_bytes)) {
            cannot = fmt::format("needs at least {} (its inputs and outputs) but device {} has {}",
                                 human_bytes(need), dev.name(),
                                 human_bytes(static_cast<double>(dev.caps().memory_bytes)));
        }
        auto skip = [&](ledger l, const std::string& why) {
            for (const auto& v : g.variants)
                p.skipped.push_back(record::skipped(l, g.job(v, dev.name()), why));
        };
        if (cannot) {
            for (const auto l : asked.list())
                skip(l, *cannot);
            continue;
        }
        if (untimed && asked.has(ledger::op_time))
            skip(ledger::op_time, *untimed);
        if (p.settings.ledgers.intersect(w.ledgers).empty())
            continue;
        p.groups.push_back(std::move(g));
    }
    if (!measures_none.empty()) {
        std::vector<std::string> what;
        what.reserve(measures_none.size());
        for (const auto& name : measures_none)
            what.push_back(
                fmt::format("{} measures {}", name, find_workload(name).ledgers.names()));
        const auto text =
            fmt::format("{}: none of --ledgers {}", join(what, "; "), settings.ledgers.names());
        if (p.groups.empty() && p.skipped.empty())
            throw bad_input(text + "; ask for a ledger the workload measures");
        p.notes.push_back("left out: " + text);
    }
    if (p.groups.empty() && p.skipped.empty())
        throw bad_input("nothing to run: the request expands to no jobs");
    return p;
}

std::size_t plan::record_count() const {
    std::size_t n = skipped.size();
    for (const auto& g : groups) {
        auto ledgers = settings.ledgers.intersect(g.w->ledgers);
        if (g.only_ledgers)
            ledgers = ledgers.intersect(*g.only_ledgers);
        n += g.variants.size() * ledgers.list().size();
    }
    return n;
}

run_settings make_settings(const settings_request& r, const backend::device& dev) {
    run_settings s;
    s.ledgers = parse_ledgers(r.ledgers);
    s.timing = measure::timing_settings::defaults_for(dev.caps());
    if (r.suite_timeout_s > 0)
        s.timing.stop.timeout_s = r.suite_timeout_s;
    if (r.timing) {
        const auto m = measure::parse_timing_mode(*r.timing);
        if (!m)
            throw bad_input(fmt::format(
                "--timing '{}' is unknown; valid: host, event, batch, graph", *r.timing));
        s.timing.mode = *m;
        // an explicit mode without --cache gets the cache state that mode means by default
        if (!r.cache)
            s.timing.cache = *m == measure::timing_mode::event || *m == measure::timing_mode::graph
                                 ? (dev.caps().cache_flush || *m == measure::timing_mode::graph
                                        ? measure::cache_mode::cold
                                        : measure::cache_mode::hot)
                                 : measure::cache_mode::hot;
    }
    if (r.cache) {
        const auto c = measure::parse_cache_mode(*r.cache);
        if (!c)
            throw bad_input(fmt::format("--cache '{}' is unknown; valid: hot, cold", *r.cache));
        s.timing.cache = *c;
    }
    auto seconds = [](const char* name, const std::string& text) {
        double v = 0;
        if (!parse_double(text, v) || !(v > 0) || v > 86400)
            throw bad_input(fmt::format(
                "{} '{}' is out of range; give seconds in (0, 86400], e.g. 0.5", name, text));
        return v;
    };
    if (r.min_time_s)
        s.timing.stop.min_time_s = seconds("--min-time", *r.min_time_s);
    if (r.timeout_s)
        s.timing.stop.timeout_s = seconds("--timeout", *r.timeout_s);
    if (r.warmup_s)
        s.timing.warmup_s = seconds("--warmup", *r.warmup_s);
    if (r.max_rel_stdev) {
        double v = 0;
        if (!parse_double(*r.max_rel_stdev, v) || !(v > 0) || v >= 1)
            throw bad_input(fmt::format(
                "--max-rel-stdev '{}' is out of range; valid: a fraction in (0, 1), e.g. 0.005",
                *r.max_rel_stdev));
        s.timing.stop.max_rel_stdev = v;
    }
    if (r.min_samples) {
        std::uint64_t v = 0;
        if (!parse_uint(*r.min_samples, v) || v < 1 || v > 1000000)
            throw bad_input(fmt::format("--min-samples '{}' is out of range; valid: 1..1000000",
                                        *r.min_samples));
        s.timing.stop.min_samples = static_cast<std::int64_t>(v);
    }
    if (r.seed && !parse_uint(*r.seed, s.seed))
        throw bad_input(
            fmt::format("--seed '{}' is not a whole number in 0..18446744073709551615", *r.seed));
    if (r.threads)
        s.threads = parse_threads(*r.threads);
    // a job stops at --timeout whatever it has: a longer --min-time could never be met
    if (s.timing.stop.min_time_s > s.timing.stop.timeout_s)
        throw bad_input(fmt::format(
            "--min-time {} s is above --timeout {} s: a job stops at its timeout, so the minimum "
            "could never be met; give --min-time <= --timeout",
            s.timing.stop.min_time_s, s.timing.stop.timeout_s));
    return s;
}

} // namespace fourfold::runner
