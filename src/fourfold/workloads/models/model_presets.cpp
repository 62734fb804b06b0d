#include "fourfold/workloads/models/model_presets.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/workloads/models/model_config.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace fourfold::workloads::models {
namespace {

// Parsed once, on first use: a compiled-in config.json that the parser refuses is a build that
// cannot serve its presets, said with the file's name (test_model_presets.cpp parses them all).
const std::vector<model_config>& presets() {
    static const std::vector<model_config> all = [] {
        std::vector<model_config> out;
        for (const auto& p : detail::compiled_presets()) {
            json j;
            try {
                j = json::parse(p.config_json);
            } catch (const json::exception& e) {
                throw std::logic_error(fmt::format("{}: not valid JSON ({})", p.origin, e.what()));
            }
            out.push_back(parse_hf_config(j, std::string(p.name)));
        }
        // by name, whatever order the files were globbed in ("tiny-qwen3-moe/" sorts before
        // "tiny-qwen3/" as a path)
        std::sort(out.begin(), out.end(),
                  [](const model_config& a, const model_config& b) { return a.name < b.name; });
        return out;
    }();
    return all;
}

} // namespace

std::vector<std::string> preset_names() {
    std::vector<std::string> out;
    for (const auto& p : presets())
        out.push_back(p.name);
    return out;
}

std::optional<model_config> find_preset(std::string_view name) {
    for (const auto& p : presets())
        if (p.name == name)
            return p;
    return std::nullopt;
}

} // namespace fourfold::workloads::models
