#include "fourfold/workloads/models/model_config.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/core/text.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>

namespace fourfold::workloads::models {
namespace {

namespace fs = std::filesystem;

// The most positions a model may declare (max_position_embeddings, and llama3 rope scaling's
// original_max_position_embeddings).
constexpr std::int64_t k_max_positions = std::int64_t{1} << 24;

// --- config.json fields -------------------------------------------------------------------

class config_reader {
  public:
    config_reader(const json& j, std::string where) : m_j(j), m_where(std::move(where)) {}

    bool has(const char* key) const { return m_j.contains(key) && !m_j.at(key).is_null(); }

    std::int64_t integer(const char* key,
                         std::optional<std::int64_t> fallback = std::nullopt) const {
        if (!has(key)) {
            if (fallback)
                return *fallback;
            throw bad_input(fmt::format("{}: config.json has no \"{}\"", m_where, key));
        }
        const auto& v = m_j.at(key);
        if (!v.is_number_integer())
            throw bad_input(
                fmt::format("{}: \"{}\" is {}, not a whole number", m_where, key, v.dump()));
        return v.get<std::int64_t>();
    }

    double number(const json& obj, const char* key, double fallback) const {
        if (!obj.contains(key) || obj.at(key).is_null())
            return fallback;
        const auto& v = obj.at(key);
        if (!v.is_number())
            throw bad_input(fmt::format("{}: \"{}\" is {}, not a number", m_where, key, v.dump()));
        return v.get<double>();
    }
    double number(const char* key, double fallback) const { return number(m_j, key, fallback); }

    bool boolean(const char* key, bool fallback) const {
        if (!has(key))
            return fallback;
        const auto& v = m_j.at(key);
        if (!v.is_boolean())
            throw bad_input(
                fmt::format("{}: \"{}\" is {}, not true or false", m_where, key, v.dump()));
        return v.get<bool>();
    }

    std::string text(const char* key, const std::string& fallback) const {
        if (!has(key))
            return fallback;
        const auto& v = m_j.at(key);
        if (!v.is_string())
            throw bad_input(fmt::format("{}: \"{}\" is {}, not a string", m_where, key, v.dump()));
        return v.get<std::string>();
    }

    const json& raw() const { return m_j; }
    const std::string& where() const { return m_where; }

  private:
    const json& m_j;
    std::string m_where;
};

// Hugging Face keeps rope settings in "rope_theta" + "rope_scaling" (transformers 4) or in one
// "rope_parameters" object (transformers 5); either is read.
rope_config parse_rope(const config_reader& r) {
    rope_config rope;
    const json* scaling = nullptr;
    if (r.has("rope_parameters")) {
        scaling = &r.raw().at("rope_parameters");
        if (!scaling->is_object())
            throw bad_input(fmt::format("{}: \"rope_parameters\" is not an object", r.where()));
        rope.theta = r.number(*scaling, "rope_theta", r.number("rope_theta", 10000.0));
    } else {
        rope.theta = r.number("rope_theta", 10000.0);
        if (r.has("rope_scaling")) {
            scaling = &r.raw().at("rope_scaling");
            if (!scaling->is_object())
                throw bad_input(fmt::format("{}: \"rope_scaling\" is not an object", r.where()));
        }
    }
    if (scaling) {
        std::string type = "default";
        for (const char* key : {"rope_type", "type"})
            if (scaling->contains(key) && scaling->at(key).is_string()) {
                type = scaling->at(key).get<std::string>();
                break;
            }
        if (type != "default" && type != "llama3")
            throw bad_input(fmt::format(
                "{}: rope type '{}' is not supported; valid: default, llama3", r.where(), type));
        rope.type = type;
        if (type == "llama3") {
            rope.factor = r.number(*scaling, "factor", 8.0);
            rope.low_freq_factor = r.number(*scaling, "low_freq_factor", 1.0);
            rope.high_freq_factor = r.number(*scaling, "high_freq_factor", 4.0);
            const double orig = r.number(*scaling, "original_max_position_embeddings", 8192.0);
            // checked before the conversion: a double outside int64's range converts to an
            // undefined value (UBSan, under fuzz_model_config)
            if (!(orig >= 1 && orig <= static_cast<double>(k_max_positions)) ||
                orig != std::floor(orig))
                throw bad_input(fmt::format("{}: original_max_position_embeddings = {} is not a "
                                            "whole number in 1..{}",
                                            r.where(), orig, k_max_positions));
            rope.original_max_positions = static_cast<std::int64_t>(orig);
        }
    }
    return rope;
}

void check_range(const std::string& where, const char* field, std::int64_t v, std::int64_t lo,
                 std::int64_t hi) {
    if (v < lo || v > hi)
        throw bad_input(
            fmt::format("{}: {} = {} is out of range; valid: {}..{}", where, field, v, lo, hi));
}

} // namespace

std::string_view to_string(architecture a) {
    switch (a) {
    case architecture::llama:
        return "llama";
    case architecture::qwen3:
        return "qwen3";
    case architecture::qwen3_moe:
        return "qwen3_moe";
    }
    return "?";
}

json rope_config::to_json() const {
    json out{{"theta", theta}, {"type", type}};
    if (type == "llama3") {
        out["factor"] = factor;
        out["low_freq_factor"] = low_freq_factor;
        out["high_freq_factor"] = high_freq_factor;
        out["original_max_position_embeddings"] = original_max_positions;
    }
    return out;
}

bool model_config::has_moe() const {
    for (std::int64_t l = 0; l < layers; ++l)
        if (is_moe_layer(l))
            return true;
    return false;
}

// Hugging Face's Qwen3MoeDecoderLayer: experts unless listed in mlp_only_layers, on every
// sparse_step-th layer.
bool model_config::is_moe_layer(std::int64_t layer) const {
    if (experts <= 0)
        return false;
    if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) != mlp_only_layers.end())
        return false;
    return sparse_step > 0 && (layer + 1) % sparse_step == 0;
}

std::int64_t model_config::total_params() const {
    std::int64_t n = vocab * hidden * (tie_embeddings ? 1 : 2) + hidden;
    for (std::int64_t l = 0; l < layers; ++l) {
        n += 2 * hidden + qkv_dim() * hidden + hidden * q_dim();
        if (qk_norm)
            n += 2 * head_dim;
        if (is_moe_layer(l))
            n += experts * hidden + experts * 3 * hidden * moe_intermediate;
        else
            n += 3 * hidden * intermediate;
    }
    return n;
}

std::int64_t model_config::params_read_per_token() const {
    std::int64_t n = hidden /* embedding row */ + vocab * hidden /* LM head */ + hidden;
    for (std::int64_t l = 0; l < layers; ++l) {
        n += 2 * hidden + qkv_dim() * hidden + hidden * q_dim();
        if (qk_norm)
            n += 2 * head_dim;
        if (is_moe_layer(l))
            n += experts * hidden +
                 std::min(experts_per_token, experts) * 3 * hidden * moe_intermediate;
        else
            n += 3 * hidden * intermediate;
    }
    return n;
}

std::int64_t model_config::kv_elements_per_position() const {
    return 2 * layers * kv_dim();
}

model_config model_config::with_layers(std::int64_t n) const {
    auto c = *this;
    c.layers = n;
    return c;
}

void model_config::validate() const {
    const auto& w = name;
    check_range(w, "hidden_size", hidden, 1, 1 << 17);
    check_range(w, "num_hidden_layers", layers, 1, 4096);
    check_range(w, "num_attention_heads", heads, 1, 4096);
    check_range(w, "num_key_value_heads", kv_heads, 1, heads);
    check_range(w, "head_dim", head_dim, 2, 4096);
    check_range(w, "vocab_size", vocab, 1, std::int64_t{1} << 24);
    check_range(w, "max_position_embeddings", max_positions, 1, k_max_positions);
    if (head_dim % 2 != 0)
        throw bad_input(
            fmt::format("{}: head_dim = {} must be even for rotary embeddings", w, head_dim));
    if (heads % kv_heads != 0)
        throw bad_input(fmt::format("{}: num_attention_heads = {} is not a multiple of "
                                    "num_key_value_heads = {}",
                                    w, heads, kv_heads));
    if (!(rms_eps > 0) || rms_eps > 1)
        throw bad_input(
            fmt::format("{}: rms_norm_eps = {} is out of range; valid: (0, 1]", w, rms_eps));
    if (!(rope.theta > 1))
        throw bad_input(fmt::format("{}: rope_theta = {} must be above 1", w, rope.theta));
    if (rope.type == "llama3" &&
        (!(rope.factor > 0) || !(rope.high_freq_factor > rope.low_freq_factor) ||
         !(rope.low_freq_factor > 0) || rope.original_max_positions < 1))
        throw bad_input(
            fmt::format("{}: llama3 rope scaling needs factor > 0 and high_freq_factor > "
                        "low_freq_factor > 0; got {}",
                        w, rope.to_json().dump()));
    bool any_dense = false;
    for (std::int64_t l = 0; l < layers; ++l)
        any_dense = any_dense || !is_moe_layer(l);
    if (any_dense)
        check_range(w, "intermediate_size", intermediate, 1, 1 << 20);
    if (arch == architecture::qwen3_moe) {
        check_range(w, "num_experts", experts, 1, 4096);
        check_range(w, "num_experts_per_tok", experts_per_token, 1, experts);
        check_range(w, "moe_intermediate_size", moe_intermediate, 1, 1 << 20);
        check_range(w, "decoder_sparse_step", sparse_step, 1, 4096);
    } else if (experts != 0) {
        throw bad_input(
            fmt::format("{}: {} has no experts (num_experts = {})", w, to_string(arch), experts));
    }
}

json model_config::to_json() const {
    json out{{"name", name},
             {"architecture", std::string(to_string(arch))},
             {"hidden_size", hidden},
             {"num_hidden_layers", layers},
             {"num_attention_heads", heads},
             {"num_key_value_heads", kv_heads},
             {"head_dim", head_dim},
             {"vocab_size", vocab},
             {"max_position_embeddings", max_positions},
             {"rms_norm_eps", rms_eps},
             {"rope", rope.to_json()},
             {"tie_word_embeddings", tie_embeddings},
             {"qk_norm", qk_norm},
             {"parameters", total_params()},
             {"parameters_read_per_token", params_read_per_token()}};
    if (has_moe() || arch == architecture::qwen3_moe) {
        out["num_experts"] = experts;
        out["num_experts_per_tok"] = experts_per_token;
        out["moe_intermediate_size"] = moe_intermediate;
        out["norm_topk_prob"] = norm_topk;
        out["decoder_sparse_step"] = sparse_step;
        out["mlp_only_layers"] = mlp_only_layers;
    }
    if (!has_moe() || !mlp_only_layers.empty() || sparse_step > 1)
        out["intermediate_size"] = intermediate;
    return out;
}

json model_config::to_hf_config() const {
    static const std::map<architecture, std::string> class_names{
        {architecture::llama, "LlamaForCausalLM"},
        {architecture::qwen3, "Qwen3ForCausalLM"},
        {architecture::qwen3_moe, "Qwen3MoeForCausalLM"}};
    json out{{"architectures", {class_names.at(arch)}},
             {"model_type", std::string(to_string(arch))},
             {"hidden_size", hidden},
             {"intermediate_size", intermediate},
             {"num_hidden_layers", layers},
             {"num_attention_heads", heads},
             {"num_key_value_heads", kv_heads},
             {"head_dim", head_dim},
             {"vocab_size", vocab},
             {"max_position_embeddings", max_positions},
             {"rms_norm_eps", rms_eps},
             {"rope_theta", rope.theta},
             {"rope_scaling", nullptr},
             {"tie_word_embeddings", tie_embeddings},
             {"hidden_act", "silu"},
             {"attention_bias", false},
             {"attention_dropout", 0.0},
             {"torch_dtype", "bfloat16"}};
    if (rope.type == "llama3")
        out["rope_scaling"] =
            json{{"rope_type", "llama3"},
                 {"factor", rope.factor},
                 {"low_freq_factor", rope.low_freq_factor},
                 {"high_freq_factor", rope.high_freq_factor},
                 {"original_max_position_embeddings", rope.original_max_positions}};
    if (arch == architecture::llama)
        out["mlp_bias"] = false;
    if (arch == architecture::qwen3_moe) {
        out["num_experts"] = experts;
        out["num_experts_per_tok"] = experts_per_token;
        out["moe_intermediate_size"] = moe_intermediate;
        out["norm_topk_prob"] = norm_topk;
        out["decoder_sparse_step"] = sparse_step;
        out["mlp_only_layers"] = mlp_only_layers;
    }
    return out;
}

model_config parse_hf_config(const json& j, const std::string& where) {
    if (!j.is_object())
        throw bad_input(fmt::format("{}: config.json is not a JSON object", where));
    const config_reader r(j, where);
    model_config c;
    c.name = where;
    const auto type = r.text("model_type", "");
    if (type == "llama")
        c.arch = architecture::llama;
    else if (type == "qwen3")
        c.arch = architecture::qwen3;
    else if (type == "qwen3_moe")
        c.arch = architecture::qwen3_moe;
    else
        throw bad_input(fmt::format("{}: model_type '{}' is not supported; valid: llama, qwen3, "
                                    "qwen3_moe",
                                    where, type));
    c.hidden = r.integer("hidden_size");
    c.layers = r.integer("num_hidden_layers");
    c.heads = r.integer("num_attention_heads");
    c.kv_heads = r.integer("num_key_value_heads", c.heads);
    if (c.heads <= 0)
        throw bad_input(fmt::format("{}: num_attention_heads = {} must be >= 1", where, c.heads));
    c.head_dim = r.integer("head_dim", c.hidden / c.heads);
    c.vocab = r.integer("vocab_size");
    c.max_positions = r.integer("max_position_embeddings", 8192);
    c.rms_eps = r.number("rms_norm_eps", 1e-6);
    c.rope = parse_rope(r);
    c.tie_embeddings = r.boolean("tie_word_embeddings", false);
    c.qk_norm = c.arch != architecture::llama;
    c.intermediate = r.integer("intermediate_size", 0);
    const auto act = r.text("hidden_act", "silu");
    if (act != "silu")
        throw bad_input(
            fmt::format("{}: hidden_act '{}' is not supported; valid: silu", where, act));
    for (const char* bias : {"attention_bias", "mlp_bias"})
        if (r.boolean(bias, false))
            throw bad_input(
                fmt::format("{}: {} = true is not supported; valid: false", where, bias));
    if (c.arch == architecture::qwen3_moe) {
        c.experts = r.integer("num_experts");
        c.experts_per_token = r.integer("num_experts_per_tok");
        c.moe_intermediate = r.integer("moe_intermediate_size");
        c.norm_topk = r.boolean("norm_topk_prob", true);
        c.sparse_step = r.integer("decoder_sparse_step", 1);
        if (r.has("mlp_only_layers")) {
            const auto& m = j.at("mlp_only_layers");
            if (!m.is_array())
                throw bad_input(fmt::format("{}: \"mlp_only_layers\" is not a list", where));
            for (const auto& v : m) {
                if (!v.is_number_integer())
                    throw bad_input(fmt::format("{}: mlp_only_layers holds {}, not a layer index",
                                                where, v.dump()));
                c.mlp_only_layers.push_back(v.get<std::int64_t>());
            }
        }
    }
    c.validate();
    return c;
}

std::string with_random_weights(const std::string& text) {
    if (find_preset(text) || starts_with(text, k_random_prefix))
        return text;
    return std::string(k_random_prefix) + text;
}

model_source resolve_model(const std::string& given) {
    const bool random = starts_with(given, k_random_prefix);
    const std::string text = random ? given.substr(k_random_prefix.size()) : given;
    if (auto p = find_preset(text))
        return {*p, std::nullopt, false, true};
    const fs::path dir(text);
    if (!is_directory(text))
        throw bad_input(
            fmt::format("model '{}' is neither a preset nor a directory; valid presets: "
                        "{} (or a directory with config.json and *.safetensors)",
                        text, join(preset_names(), ", ")));
    const auto config_path = dir / "config.json";
    std::ifstream in(config_path, std::ios::binary);
    if (!in)
        throw bad_input(fmt::format("model directory {} has no readable config.json", text));
    std::stringstream buffer;
    buffer << in.rdbuf();
    json j;
    try {
        j = json::parse(buffer.str());
    } catch (const json::exception& e) {
        throw bad_input(fmt::format("{}: not valid JSON ({})", config_path.string(), e.what()));
    }
    model_source out{parse_hf_config(j, text), dir, false, random};
    for (const auto& name : list_directory(text))
        if (fs::path(name).extension() == ".safetensors" || name == "model.safetensors.index.json")
            out.has_weights = true;
    return out;
}

} // namespace fourfold::workloads::models
