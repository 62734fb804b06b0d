#pragma once
// The model presets compiled into the binary: data/models/<preset>/config.json, Hugging Face's
// format, read by parse_hf_config like a model directory's (find_preset and preset_names in
// model_config.hpp are the way in; this is what CMake generates them from).
#include <string_view>
#include <vector>

namespace fourfold::workloads::models::detail {

struct compiled_preset {
    std::string_view name;        // the directory's name: what --model names
    std::string_view config_json; // the file's text
    std::string_view origin;      // the file it was compiled from, for error messages
};

// In the order CMake globbed them. Generated from model_presets_data.cpp.in.
const std::vector<compiled_preset>& compiled_presets();

} // namespace fourfold::workloads::models::detail
