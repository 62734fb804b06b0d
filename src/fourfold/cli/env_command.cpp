#include "fourfold/backend/device.hpp"
#include "fourfold/backend/memory_probe.hpp"
#include "fourfold/backend/provenance.hpp"
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/store/export.hpp"

#include <iostream>

namespace fourfold::cli {

int env_command(const std::optional<std::string>& device, bool as_json) {
    json out = backend::collect_provenance(nullptr);
    out["devices"] = json::array();
    std::vector<backend::device_spec> specs;
    if (device)
        specs.push_back(backend::device_spec::parse(*device));
    else
        specs = backend::visible_devices();
    for (const auto& spec : specs) {
        auto dev = backend::open_device(spec);
        auto fp = dev->fingerprint();
        fp["capabilities"] = dev->caps().to_json();
        fp["memory_levels"] = json{{"driver", dev->memory().driver_level()},
                                   {"device_wide", dev->memory().device_wide()}};
        out["devices"].push_back(fp);
    }
    if (as_json) {
        std::cout << out.dump(2) << '\n';
        return 0;
    }
    std::vector<std::pair<std::string, json>> flat;
    store::flatten(out, "", flat);
    for (const auto& [key, value] : flat) {
        std::string text = value.is_string() ? value.get<std::string>() : value.dump();
        if (text.find('\n') != std::string::npos) {
            std::cout << key << ":\n";
            for (const auto& line : split(text, '\n'))
                if (!line.empty())
                    std::cout << "    " << line << '\n';
        } else {
            std::cout << key << ": " << text << '\n';
        }
    }
    return 0;
}

} // namespace fourfold::cli
