// A model directory's config.json (workloads/models/model_config.hpp) from arbitrary bytes, and
// the presets compiled in from data/models/ (the table CMake generates, compiled into this
// project too). parse_hf_config either refuses with bad_input or returns a config that
// validates, whose figures (parameters, bytes read a token) are defined, and whose
// to_hf_config() reads back into the same config. Anything else (another exception, a round
// trip that differs, a sanitizer report: an integer overflow in the figures, a double converted
// out of range) is a crash.
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/models/model_config.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

void check(bool ok) {
    if (!ok)
        std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fourfold;
    using namespace fourfold::workloads::models;
    // the preset table: parsed once (a build whose presets do not parse is a crash here too)
    static const auto presets = preset_names();
    check(!presets.empty());

    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto preset = find_preset(text);
    check(preset.has_value() == (std::find(presets.begin(), presets.end(), text) != presets.end()));
    (void)with_random_weights(text);

    const auto j = json::parse(text, nullptr, false);
    if (j.is_discarded())
        return 0;
    try {
        const auto c = parse_hf_config(j, "fuzz");
        c.validate();
        (void)c.to_json().dump();
        const auto back = parse_hf_config(c.to_hf_config(), "fuzz");
        check(back == c);
        (void)c.kv_elements_per_position();
        (void)c.with_layers(1).total_params();
    } catch (const bad_input&) {
        // the parser's documented refusal, naming the field
    }
    return 0;
}
