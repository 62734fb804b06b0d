#include "fourfold/backend/device.hpp"
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/suites/suite.hpp"
#include "fourfold/workloads/workload.hpp"

#include <fmt/format.h>
#include <iostream>

namespace fourfold::cli {

int list_command(bool as_json) {
    json out{{"suites", json::array()}, {"workloads", json::array()}, {"devices", json::array()},
             {"ledgers", json::array()}};
    for (const auto l : k_all_ledgers)
        out["ledgers"].push_back(json{{"name", to_string(l)}, {"unit", unit_of(l)}});
    for (const auto* s : suites::suite_registry::instance().all())
        out["suites"].push_back(json{{"name", s->name}, {"description", s->description}});
    for (const auto* w : workloads::registry::instance().all()) out["workloads"].push_back(w->to_json());
    for (const auto& spec : backend::visible_devices()) {
        auto dev = backend::open_device(spec);
        out["devices"].push_back(json{{"name", spec.name()}, {"capabilities", dev->caps().to_json()}});
    }
    if (as_json) {
        std::cout << out.dump(2) << '\n';
        return 0;
    }
    std::cout << "ledgers:\n";
    for (const auto& l : out["ledgers"])
        std::cout << fmt::format("  {:<12} {}\n", l["name"].get<std::string>(), l["unit"].get<std::string>());
    std::cout << "suites:\n";
    for (const auto& s : out["suites"])
        std::cout << fmt::format("  {:<12} {}\n", s["name"].get<std::string>(), s["description"].get<std::string>());
    std::cout << "workloads:\n";
    for (const auto* w : workloads::registry::instance().all()) {
        std::vector<std::string> dtypes;
        for (const auto d : w->dtypes) dtypes.emplace_back(to_string(d));
        std::cout << fmt::format("  {}: {}\n", w->name, w->description);
        if (!w->shape_params.empty()) std::cout << fmt::format("    --shape {}\n", join(w->shape_params, "x"));
        for (const auto& p : w->params)
            std::cout << fmt::format("    --param {}=... {} (default {})\n", p.name, p.help, p.default_value);
        std::cout << fmt::format("    dtypes: {}; ledgers: {}\n", join(dtypes, ", "), w->ledgers.names());
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
            if (!it.value().is_boolean()) missing.push_back(fmt::format("{} ({})", it.key(), it.value().get<std::string>()));
        std::cout << fmt::format("  {}: dtypes {}; events {}, graphs {}\n", d["name"].get<std::string>(),
                                 c["dtypes"].dump(), c["events"].dump(), c["graphs"].dump());
        for (const auto& m : missing) std::cout << "    unavailable: " << m << '\n';
    }
    return 0;
}

} // namespace fourfold::cli
