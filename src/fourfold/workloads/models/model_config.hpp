#pragma once
// The shapes of a decoder-only language model (Llama 3, Qwen3, Qwen3-MoE): a preset (a
// config.json compiled in from data/models/, see model_presets.hpp), or a model directory's
// Hugging Face config.json; both go through parse_hf_config. No libtorch here: the plan and the CLI
// use it to validate a request and to count the bytes a decode step reads.
#include "fourfold/core/json.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::workloads::models {

enum class architecture { llama, qwen3, qwen3_moe };
std::string_view to_string(architecture a);

// Rotary position embedding: Hugging Face's "default" and "llama3" (Llama 3.1's frequency
// scaling) rope types.
struct rope_config {
    double theta = 10000.0;
    std::string type = "default";
    double factor = 1.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    std::int64_t original_max_positions = 8192;
    json to_json() const;
    bool operator==(const rope_config&) const = default;
};

struct model_config {
    std::string name; // the preset, or the directory it came from
    architecture arch = architecture::llama;
    std::int64_t hidden = 0;
    std::int64_t intermediate = 0; // dense MLP width (layers without experts)
    std::int64_t layers = 0;
    std::int64_t heads = 0;
    std::int64_t kv_heads = 0;
    std::int64_t head_dim = 0;
    std::int64_t vocab = 0;
    std::int64_t max_positions = 0;
    double rms_eps = 1e-5;
    rope_config rope;
    bool tie_embeddings = false;
    bool qk_norm = false; // Qwen3: RMSNorm over each head of q and k before RoPE
    // Mixture of experts (qwen3_moe); experts == 0 means dense.
    std::int64_t experts = 0;
    std::int64_t experts_per_token = 0;
    std::int64_t moe_intermediate = 0;
    bool norm_topk = true; // renormalise the top-k routing weights to sum to 1
    std::int64_t sparse_step = 1;
    std::vector<std::int64_t> mlp_only_layers;

    bool is_moe_layer(std::int64_t layer) const;
    bool has_moe() const;
    std::int64_t q_dim() const { return heads * head_dim; }
    std::int64_t kv_dim() const { return kv_heads * head_dim; }
    std::int64_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }

    // Parameters of every tensor the model holds (the embedding once when tied).
    std::int64_t total_params() const;
    // Parameters a batch-1 decode step reads: one embedding row, every attention and norm
    // weight, the router and the top-k experts of each MoE layer (distinct experts, at most
    // experts_per_token), the dense MLPs, the final norm and the LM head.
    std::int64_t params_read_per_token() const;
    // KV cache elements per cached position (keys and values, every layer).
    std::int64_t kv_elements_per_position() const;

    // The same widths with fewer layers (the correctness twin).
    model_config with_layers(std::int64_t n) const;
    // Throws bad_input naming the first field that cannot be built.
    void validate() const;
    json to_json() const;
    // A config.json from which transformers builds the same architecture.
    json to_hf_config() const;
    bool operator==(const model_config&) const = default;
};

// The presets compiled in from data/models/<name>/config.json (llama3-8b, qwen3-8b,
// qwen3-30b-a3b and the tiny CPU presets), by name.
std::vector<std::string> preset_names();
std::optional<model_config> find_preset(std::string_view name);

// From a Hugging Face config.json; `where` names the source in error messages.
model_config parse_hf_config(const json& config, const std::string& where);

// What a --model text names: a preset (random weights, by its name), a directory with
// config.json and *.safetensors weights, or "random:DIR", the shapes of DIR's config.json with
// random weights (asked for by name: a directory without weights is refused otherwise).
struct model_source {
    model_config config;
    std::optional<std::filesystem::path> directory;
    bool has_weights = false;    // the directory holds safetensors weights
    bool random_weights = false; // a preset, or random: asked for
};
inline constexpr std::string_view k_random_prefix = "random:";
// Throws bad_input naming the valid presets when the text is neither.
model_source resolve_model(const std::string& text);
// "DIR" -> "random:DIR"; a preset, or a text already asking for random weights, as it is.
std::string with_random_weights(const std::string& text);

} // namespace fourfold::workloads::models
