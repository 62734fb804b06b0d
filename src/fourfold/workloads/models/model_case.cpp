#include "fourfold/workloads/models/model_case.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/workloads/models/model_config.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace fourfold::workloads::models {

std::unique_ptr<checkpoint> open_checkpoint(const std::optional<std::filesystem::path>& directory,
                                            bool has_weights, bool random_weights) {
    if (!directory || random_weights)
        return nullptr;
    if (!has_weights)
        throw bad_input(fmt::format(
            "model directory {} has a config.json but no *.safetensors weights; give "
            "--random-weights (fourfold decode) or model={}{} (fourfold run) to measure random "
            "weights of its shapes, or add the checkpoint's *.safetensors",
            directory->string(), k_random_prefix, directory->string()));
    return std::make_unique<checkpoint>(*directory);
}

std::optional<std::string> memory_shortfall(const backend::device& dev, const std::string& what,
                                            double weights_bytes, const std::string& state_name,
                                            double state_bytes) {
    const double need = weights_bytes + state_bytes;
    const auto have = static_cast<double>(dev.caps().memory_bytes);
    if (need <= 0.92 * have)
        return std::nullopt;
    return fmt::format("{} needs {} (weights {} + {} {}) but {} has {}", what, human_bytes(need),
                       human_bytes(weights_bytes), state_name, human_bytes(state_bytes), dev.name(),
                       human_bytes(have));
}

std::optional<std::string> graph_capture_missing(const backend::device& dev) {
    if (const auto why = dev.caps().missing("graphs"))
        return "mode=graph: " + *why;
    return std::nullopt;
}

bool same_tensor_values(const at::Tensor& a, const at::Tensor& b) {
    return a.defined() && b.defined() && a.sizes() == b.sizes() &&
           a.scalar_type() == b.scalar_type() && at::equal(a, b);
}

} // namespace fourfold::workloads::models
