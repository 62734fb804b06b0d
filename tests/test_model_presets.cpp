// The model presets are data (data/models/<name>/config.json compiled in, read by the config.json
// parser): each one equals, field by field, the C++ table it replaced (kept below verbatim as the
// expected values), the compiled-in text is the file in the tree, and every preset parses.
#include "fourfold/workloads/models/model_config.hpp"
#include "fourfold/workloads/models/model_presets.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>
#include <map>

using namespace fourfold;
using namespace fourfold::workloads::models;
using fourfold::testing::read_file;

namespace {

// The C++ table the presets were before they became data (model_config.cpp at 927ce5f).
// Real shapes from the models' published config.json files.
model_config llama3_8b() {
    model_config c;
    c.name = "llama3-8b";
    c.arch = architecture::llama;
    c.hidden = 4096;
    c.intermediate = 14336;
    c.layers = 32;
    c.heads = 32;
    c.kv_heads = 8;
    c.head_dim = 128;
    c.vocab = 128256;
    c.max_positions = 8192;
    c.rms_eps = 1e-5;
    c.rope.theta = 500000.0;
    return c;
}

model_config qwen3_8b() {
    model_config c;
    c.name = "qwen3-8b";
    c.arch = architecture::qwen3;
    c.hidden = 4096;
    c.intermediate = 12288;
    c.layers = 36;
    c.heads = 32;
    c.kv_heads = 8;
    c.head_dim = 128;
    c.vocab = 151936;
    c.max_positions = 40960;
    c.rms_eps = 1e-6;
    c.rope.theta = 1000000.0;
    c.qk_norm = true;
    return c;
}

model_config qwen3_30b_a3b() {
    model_config c;
    c.name = "qwen3-30b-a3b";
    c.arch = architecture::qwen3_moe;
    c.hidden = 2048;
    c.intermediate = 6144;
    c.layers = 48;
    c.heads = 32;
    c.kv_heads = 4;
    c.head_dim = 128;
    c.vocab = 151936;
    c.max_positions = 40960;
    c.rms_eps = 1e-6;
    c.rope.theta = 1000000.0;
    c.qk_norm = true;
    c.experts = 128;
    c.experts_per_token = 8;
    c.moe_intermediate = 768;
    c.norm_topk = true;
    return c;
}

// Tiny presets for CPU tests: every code path of the real ones at toy widths. tiny-llama uses
// Llama 3.1's "llama3" rope scaling (with a short original context so that it bites), tiny-qwen3
// a head_dim whose q width differs from hidden and tied embeddings, tiny-qwen3-moe 8 experts.
model_config tiny_llama() {
    model_config c;
    c.name = "tiny-llama";
    c.arch = architecture::llama;
    c.hidden = 64;
    c.intermediate = 160;
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.head_dim = 16;
    c.vocab = 256;
    c.max_positions = 4096;
    c.rope.theta = 10000.0;
    c.rope.type = "llama3";
    c.rope.factor = 8.0;
    c.rope.low_freq_factor = 1.0;
    c.rope.high_freq_factor = 4.0;
    c.rope.original_max_positions = 64;
    return c;
}

model_config tiny_qwen3() {
    model_config c;
    c.name = "tiny-qwen3";
    c.arch = architecture::qwen3;
    c.hidden = 64;
    c.intermediate = 128;
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.head_dim = 32;
    c.vocab = 320;
    c.max_positions = 4096;
    c.rms_eps = 1e-6;
    c.rope.theta = 1000000.0;
    c.qk_norm = true;
    c.tie_embeddings = true;
    return c;
}

model_config tiny_qwen3_moe() {
    model_config c;
    c.name = "tiny-qwen3-moe";
    c.arch = architecture::qwen3_moe;
    c.hidden = 64;
    c.intermediate = 128;
    c.layers = 2;
    c.heads = 4;
    c.kv_heads = 2;
    c.head_dim = 16;
    c.vocab = 384;
    c.max_positions = 4096;
    c.rms_eps = 1e-6;
    c.rope.theta = 1000000.0;
    c.qk_norm = true;
    c.experts = 8;
    c.experts_per_token = 2;
    c.moe_intermediate = 32;
    return c;
}

std::map<std::string, model_config> old_table() {
    std::map<std::string, model_config> out;
    for (auto c :
         {llama3_8b(), qwen3_8b(), qwen3_30b_a3b(), tiny_llama(), tiny_qwen3(), tiny_qwen3_moe()})
        out.emplace(c.name, c);
    return out;
}

} // namespace

TEST(model_presets, each_compiled_in_config_json_equals_the_table_it_replaced) {
    const auto expected = old_table();
    EXPECT_EQ(preset_names().size(), expected.size());
    for (const auto& [name, want] : expected) {
        const auto got = find_preset(name);
        ASSERT_TRUE(got.has_value()) << name;
        // field by field: name, architecture, widths, norms, rope, experts, layer lists
        EXPECT_EQ(got->name, want.name);
        EXPECT_EQ(got->arch, want.arch) << name;
        EXPECT_EQ(got->hidden, want.hidden) << name;
        EXPECT_EQ(got->intermediate, want.intermediate) << name;
        EXPECT_EQ(got->layers, want.layers) << name;
        EXPECT_EQ(got->heads, want.heads) << name;
        EXPECT_EQ(got->kv_heads, want.kv_heads) << name;
        EXPECT_EQ(got->head_dim, want.head_dim) << name;
        EXPECT_EQ(got->vocab, want.vocab) << name;
        EXPECT_EQ(got->max_positions, want.max_positions) << name;
        EXPECT_EQ(got->rms_eps, want.rms_eps) << name;
        EXPECT_EQ(got->rope.theta, want.rope.theta) << name;
        EXPECT_EQ(got->rope.type, want.rope.type) << name;
        EXPECT_EQ(got->rope.factor, want.rope.factor) << name;
        EXPECT_EQ(got->rope.low_freq_factor, want.rope.low_freq_factor) << name;
        EXPECT_EQ(got->rope.high_freq_factor, want.rope.high_freq_factor) << name;
        EXPECT_EQ(got->rope.original_max_positions, want.rope.original_max_positions) << name;
        EXPECT_EQ(got->tie_embeddings, want.tie_embeddings) << name;
        EXPECT_EQ(got->qk_norm, want.qk_norm) << name;
        EXPECT_EQ(got->experts, want.experts) << name;
        EXPECT_EQ(got->experts_per_token, want.experts_per_token) << name;
        EXPECT_EQ(got->moe_intermediate, want.moe_intermediate) << name;
        EXPECT_EQ(got->norm_topk, want.norm_topk) << name;
        EXPECT_EQ(got->sparse_step, want.sparse_step) << name;
        EXPECT_EQ(got->mlp_only_layers, want.mlp_only_layers) << name;
        // and the defaulted comparison, which a field added later cannot escape
        EXPECT_TRUE(*got == want) << name << ": " << got->to_json().dump() << " vs "
                                  << want.to_json().dump();
    }
}

TEST(model_presets, the_compiled_in_text_is_the_file_in_the_tree) {
    for (const auto& p : fourfold::workloads::models::detail::compiled_presets()) {
        const std::string origin(p.origin);
        const auto path = origin.substr(0, origin.find(" (compiled in)"));
        EXPECT_EQ(read_file(path), p.config_json) << path;
        EXPECT_NE(path.find("data/models/" + std::string(p.name) + "/config.json"),
                  std::string::npos)
            << path;
    }
}

TEST(model_presets, a_preset_reads_like_a_model_directory_and_round_trips) {
    for (const auto& name : preset_names()) {
        const auto source = resolve_model(name);
        EXPECT_EQ(source.config.name, name);
        EXPECT_TRUE(source.random_weights) << name;
        EXPECT_FALSE(source.directory.has_value()) << name;
        EXPECT_TRUE(parse_hf_config(source.config.to_hf_config(), name) == source.config) << name;
    }
}
