#include "fourfold/backend/device.hpp"
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/report/text_table.hpp"
#include "fourfold/store/run_state.hpp"
#include "fourfold/suites/suite.hpp"
#include "fourfold/workloads/workload.hpp"

#include <fmt/format.h>
#include <iostream>
#include <sstream>

namespace fourfold::cli {

int list_command(bool as_json) {
    json out{{"suites", json::array()},
             {"workloads", json::array()},
             {"devices", json::array()},
             {"ledgers", json::array()}};
    for (const auto l : k_all_ledgers)
        out["ledgers"].push_back(json{{"name", to_string(l)}, {"unit", unit_of(l)}});
    for (const auto* s : suites::suite_registry::instance().all())
        out["suites"].push_back(json{{"name", s->name}, {"description", s->description}});
    for (const auto* w : workloads::registry::instance().all())
        out["workloads"].push_back(w->to_json());
    for (const auto& spec : backend::visible_devices()) {
        auto dev = backend::open_device(spec);
        out["devices"].push_back(
            json{{"name", spec.name()}, {"capabilities", dev->caps().to_json()}});
    }
    if (as_json) {
        std::cout << out.dump(2) << '\n';
        return 0;
    }
    std::cout << "ledgers:\n";
    for (const auto& l : out["ledgers"])
        std::cout << fmt::format("  {:<12} {}\n", l["name"].get<std::string>(),
                                 l["unit"].get<std::string>());
    std::cout << "suites:\n";
    for (const auto& s : out["suites"])
        std::cout << fmt::format("  {:<12} {}\n", s["name"].get<std::string>(),
                                 s["description"].get<std::string>());
    std::cout << "workloads:\n";
    for (const auto* w : workloads::registry::instance().all()) {
        std::vector<std::string> dtypes;
        for (const auto d : w->dtypes)
            dtypes.emplace_back(to_string(d));
        std::cout << fmt::format("  {}: {}\n", w->name, w->description);
        if (!w->shape_params.empty())
            std::cout << fmt::format("    --shape {}\n", join(w->shape_params, "x"));
        for (const auto& p : w->params)
            std::cout << fmt::format("    --param {}=... {} (default {})\n", p.name, p.help,
                                     p.default_value);
        std::cout << fmt::format("    dtypes: {}; ledgers: {}\n", join(dtypes, ", "),
                                 w->ledgers.names());
        for (const auto& v : w->variants)
            if (!v.test_only)
                std::cout << fmt::format("    variant {}: {}{}\n", v.name, v.help,
                                         v.host_sync ? " (synchronises with the host)" : "");
    }
    std::cout << "devices:\n";
    for (const auto& d : out["devices"]) {
        const auto& c = d["capabilities"];
        std::vector<std::string> missing;
        for (auto it = c["features"].begin(); it != c["features"].end(); ++it)
            if (!it.value().is_boolean())
                missing.push_back(fmt::format("{} ({})", it.key(), it.value().get<std::string>()));
        std::cout << fmt::format("  {}: dtypes {}; events {}, graphs {}\n",
                                 d["name"].get<std::string>(), c["dtypes"].dump(),
                                 c["events"].dump(), c["graphs"].dump());
        for (const auto& m : missing)
            std::cout << "    unavailable: " << m << '\n';
    }
    return 0;
}

// `fourfold runs`: what the store holds, beside `list`, what this build offers.
int runs_command(const runs_options& o) {
    const auto store = store::result_store::open(o.db, store::open_mode::read_only);
    const auto runs = store::list_runs(store);
    std::ostringstream text;
    if (o.json) {
        json out = json::array();
        for (const auto& r : runs)
            out.push_back(r.to_json());
        text << out.dump(2) << '\n';
        write_output("", text.str());
        return 0;
    }
    report::text_table t(fmt::format("runs in {}: records done of those planned (a run still "
                                     "being measured, or one that ended unfinished, has fewer)",
                                     store.path()),
                         {{"id", report::align::right},
                          {"label"},
                          {"status"},
                          {"started"},
                          {"device"},
                          {"build"},
                          {"records", report::align::right}});
    // a git sha in a table is its first 7 hex digits, as git abbreviates it; JSON keeps it whole
    auto short_build = [](const std::string& build) {
        const auto end = build.find_first_not_of("0123456789abcdef");
        const auto sha = build.substr(0, end);
        return sha.size() > 7 ? sha.substr(0, 7) + build.substr(sha.size()) : build;
    };
    for (const auto& r : runs)
        t.add_row({std::to_string(r.run.id), escape_control(r.run.label), r.state.word,
                   r.run.started_at, r.run.device, short_build(r.build),
                   r.planned ? fmt::format("{}/{}", r.records, *r.planned)
                             : fmt::format("{}/?", r.records)});
    if (runs.empty())
        text << fmt::format("no runs in {}\n", store.path());
    else
        t.print(text);
    for (const auto& r : runs)
        if (!r.state.why.empty())
            text << fmt::format("  run {}: {}: {}\n", r.run.id, r.state.word, r.state.why);
    write_output("", text.str());
    return 0;
}

} // namespace fourfold::cli
