// The op workloads time the code the model runs (model_ops/): on the very weights and hidden
// states of a tiny decoder, moe_decode's cases compute what the decoder's MoE layer computes,
// bit for bit (part=block: the whole block from the residual stream, its routing fixed by the
// shape), and linear_decode's and softmax's stock variants what its projections and its
// sampling compute; the paths of each shared op agree with each other; and a native path is a
// clear error where no kernel can run.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#include "fourfold/workloads/model_ops/moe.hpp"
#include "fourfold/workloads/model_ops/pad.hpp"
#include "fourfold/workloads/model_ops/rms_norm.hpp"
#include "fourfold/workloads/model_ops/softmax.hpp"
#include "fourfold/workloads/model_ops/swiglu.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads;
using namespace fourfold::workloads::models;

namespace {

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

std::shared_ptr<const decoder_weights> tiny(const std::string& name) {
    return std::make_shared<const decoder_weights>(
        random_weights(*find_preset(name), at::kFloat, c10::Device(c10::DeviceType::CPU), 17));
}

// The case a run would make for `params` (every parameter filled in by the plan).
std::unique_ptr<workload_case> case_of(backend::device& dev, const std::string& workload,
                                       json params) {
    auto p = runner::make_plan({{workload, std::move(params), dtype::fp32, {}, ""}},
                               runner::run_settings{}, dev);
    return std::move(p.groups.at(0).c);
}

at::Tensor run_variant(backend::device& dev, const std::string& workload, const workload_case& c,
                       const std::string& variant, const input_set& in) {
    const auto* w = registry::instance().find(workload);
    const call_context ctx(dev);
    return w->run(variant, c, ctx, in);
}

// Hidden states of the scale a layer sees: the first tokens' embedding rows.
at::Tensor hidden_states(const decoder_weights& w, std::int64_t tokens) {
    const auto ids =
        at::arange(tokens, at::TensorOptions().dtype(at::kLong)).mul(37).remainder(w.config.vocab);
    return w.embed.index_select(0, ids);
}

std::vector<moe_path> moe_paths_here() {
    std::vector<moe_path> out{moe_path::host_loop};
    if (FOURFOLD_HAS_GROUPED_MM)
        out.push_back(moe_path::grouped_mm);
    return out;
}

} // namespace

TEST(model_ops, moe_decode_and_the_decoders_moe_layer_are_one_computation) {
    auto dev = cpu();
    const auto w = tiny("tiny-qwen3-moe");
    const auto& c = w->config;
    const auto& lw = w->layers[0];
    ASSERT_TRUE(c.is_moe_layer(0));
    const std::int64_t tokens = 5;
    const auto h = hidden_states(*w, tokens);
    const auto ffn = case_of(*dev, "moe_decode",
                             json{{"tokens", tokens},
                                  {"experts", c.experts},
                                  {"top_k", c.experts_per_token},
                                  {"hidden", c.hidden},
                                  {"width", c.moe_intermediate},
                                  {"part", "ffn"}});
    // moe_decode's inputs are the decoder's own: its router's logits, its experts' weights
    input_set in;
    in.add("x", h)
        .add("router_logits", model_ops::linear(h, lw.router, {}, model_ops::op_path::stock))
        .add("w_gate_up", lw.experts_gate_up)
        .add("w_down", lw.experts_down);
    for (const auto path : moe_paths_here()) {
        const auto variant = path == moe_path::grouped_mm ? "stock" : "generic";
        const auto op = run_variant(*dev, "moe_decode", *ffn, variant, in);
        const auto model = decoder_mlp(c, lw, 0, h, decoder_paths{path});
        EXPECT_TRUE(at::equal(op, model)) << variant;
    }
    // the two MoE paths compute one function (not bit for bit: the grouped matmul has its own
    // accumulation order)
    if (FOURFOLD_HAS_GROUPED_MM) {
        EXPECT_TRUE(at::allclose(decoder_mlp(c, lw, 0, h, decoder_paths{moe_path::grouped_mm}),
                                 decoder_mlp(c, lw, 0, h, decoder_paths{moe_path::host_loop}), 1e-5,
                                 1e-6));
    }
}

TEST(model_ops, moe_decode_gate_up_times_the_first_grouped_matmul_of_the_decoders_routing) {
    auto dev = cpu();
    const auto w = tiny("tiny-qwen3-moe");
    const auto& c = w->config;
    const auto& lw = w->layers[1];
    const std::int64_t tokens = 4;
    const auto h = hidden_states(*w, tokens);
    // the routing the decoder's layer takes, and the rows it sorts by expert
    const auto r = model_ops::route(model_ops::linear(h, lw.router, {}, model_ops::op_path::stock),
                                    c.experts_per_token, c.norm_topk);
    const auto rows = model_ops::sorted_rows(h, r);
    const auto gate_up = case_of(*dev, "moe_decode",
                                 json{{"tokens", tokens},
                                      {"experts", c.experts},
                                      {"top_k", c.experts_per_token},
                                      {"hidden", c.hidden},
                                      {"width", c.moe_intermediate},
                                      {"part", "gate_up"}});
    input_set in;
    in.add("rows", rows).add("offsets", r.offsets).add("w_gate_up", lw.experts_gate_up);
    const auto op = run_variant(*dev, "moe_decode", *gate_up, "generic", in);
    // the same rows through the whole expert FFN: its first matmul is what gate_up times
    const auto full = model_ops::expert_ffn(rows, lw.experts_gate_up, lw.experts_down, r.offsets,
                                            moe_path::host_loop);
    const auto down_of_op = model_ops::grouped_linear(model_ops::swiglu(op), lw.experts_down,
                                                      r.offsets, moe_path::host_loop);
    EXPECT_TRUE(at::equal(down_of_op, full));
    EXPECT_EQ(op.sizes(),
              (std::vector<std::int64_t>{tokens * c.experts_per_token, 2 * c.moe_intermediate}));
}

// part=block: the decoder's MoE block from the residual stream (RMSNorm, the router, the experts,
// the residual add). Its routing is fixed by the shape through the inputs: the experts that
// model_ops::route picks from the inputs' own logits are the same for every seed and in fp32 and
// bf16, and they are the experts declared_cost counts; its generic variant is the decoder's
// stock computation of the block, bit for bit.
TEST(model_ops, moe_decode_block_routes_as_its_shape_declares_and_is_the_decoders_block) {
    auto dev = cpu();
    struct shape {
        std::int64_t tokens, experts, top_k, hidden, width;
    };
    for (const auto& s : std::vector<shape>{{1, 128, 8, 2048, 64},
                                            {8, 128, 8, 2048, 64},
                                            {8, 512, 8, 256, 32},
                                            {3, 16, 4, 100, 24},
                                            {70, 64, 6, 128, 16}}) {
        const json params{{"tokens", s.tokens}, {"experts", s.experts}, {"top_k", s.top_k},
                          {"hidden", s.hidden}, {"width", s.width},     {"part", "block"}};
        const auto block = case_of(*dev, "moe_decode", params);
        std::vector<std::int64_t> first_offsets;
        for (const std::uint64_t seed : {1u, 2u, 3u})
            for (const auto type : {at::kFloat, at::kBFloat16}) {
                const auto in32 = block->make_inputs(seed);
                input_set in;
                for (const char* name : {"x", "norm_weight", "router", "w_gate_up", "w_down"})
                    in.add(name, in32[name].to(type));
                const auto h = model_ops::rms_norm(in["x"], in["norm_weight"], 1e-6);
                const auto logits =
                    model_ops::linear(h, in["router"], {}, model_ops::op_path::stock);
                const auto r = model_ops::route(logits, s.top_k, true);
                const auto offsets = r.offsets.to(at::kLong);
                const std::vector<std::int64_t> ends(offsets.data_ptr<std::int64_t>(),
                                                     offsets.data_ptr<std::int64_t>() + s.experts);
                if (first_offsets.empty())
                    first_offsets = ends;
                EXPECT_EQ(ends, first_offsets)
                    << params.dump() << " seed " << seed << " " << c10::toString(type);
                if (type != at::kFloat)
                    continue;
                // the experts declared_cost counts are the ones this routing reaches
                std::int64_t active = 0, before = 0;
                for (const auto end : ends) {
                    active += end > before ? 1 : 0;
                    before = end;
                }
                const double e = 4, t = static_cast<double>(s.tokens),
                             hd = static_cast<double>(s.hidden), w = static_cast<double>(s.width);
                EXPECT_DOUBLE_EQ(block->declared_cost().bytes_read,
                                 e * (static_cast<double>(active) * 3 * w * hd + t * hd + hd +
                                      static_cast<double>(s.experts) * hd))
                    << params.dump();
                // generic: the decoder's stock block (the host loop's MoE path), bit for bit
                const auto op = run_variant(*dev, "moe_decode", *block, "generic", in);
                const auto model =
                    in["x"] + model_ops::moe_ffn(h, logits, in["w_gate_up"], in["w_down"], s.top_k,
                                                 true, moe_path::host_loop);
                EXPECT_TRUE(at::equal(op, model)) << params.dump();
            }
    }
    // a top_k past the routing's 127 distinct levels is bad input, named
    auto too_many = json{{"tokens", 2}, {"experts", 256}, {"top_k", 128}, {"part", "block"}};
    EXPECT_THROW(case_of(*dev, "moe_decode", too_many), bad_input);
}

TEST(model_ops, linear_decode_computes_the_decoders_dense_mlp_projections) {
    auto dev = cpu();
    const auto w = tiny("tiny-llama");
    const auto& c = w->config;
    const auto& lw = w->layers[1];
    const std::int64_t tokens = 3;
    const auto h = hidden_states(*w, tokens);
    auto projection = [&](const at::Tensor& x, const at::Tensor& weight) {
        const auto lin =
            case_of(*dev, "linear_decode",
                    json{{"tokens", x.size(0)}, {"n", weight.size(0)}, {"k", weight.size(1)}});
        return run_variant(*dev, "linear_decode", *lin, "stock",
                           input_set().add("x", x).add("weight", weight));
    };
    const auto op = projection(model_ops::swiglu(projection(h, lw.gate_up)), lw.down);
    EXPECT_TRUE(at::equal(op, decoder_mlp(c, lw, 1, h, decoder_paths{})));
}

TEST(model_ops, softmax_computes_what_the_decoder_samples_from) {
    auto dev = cpu();
    const auto w = tiny("tiny-qwen3");
    decoder_session s(w, 64, moe_path::host_loop);
    const auto prompt = at::arange(9, at::TensorOptions().dtype(at::kLong));
    const auto logits = s.prefill(prompt);
    const auto sm = case_of(*dev, "softmax", json{{"rows", 1}, {"vocab", w->config.vocab}});
    const auto probs =
        run_variant(*dev, "softmax", *sm, "stock", input_set().add("logits", logits));
    EXPECT_TRUE(at::equal(
        probs, model_ops::softmax(logits, model_ops::op_path::stock, nullptr, at::kFloat)));
    // the token the session sampled is the argmax of what the softmax workload computes
    EXPECT_EQ(s.tokens()[9].item<std::int64_t>(), probs.argmax(-1).item<std::int64_t>());
}

TEST(model_ops, the_paths_of_each_op_compute_one_function) {
    const auto x = at::randn({3, 50}, at::TensorOptions().dtype(at::kFloat));
    const auto wt = at::randn({7, 50}, at::TensorOptions().dtype(at::kFloat));
    const auto b = at::randn({7}, at::TensorOptions().dtype(at::kFloat));
    using model_ops::op_path;
    EXPECT_TRUE(at::allclose(model_ops::softmax(x, op_path::composite),
                             model_ops::softmax(x, op_path::stock), 1e-6, 1e-7));
    // the decoder's float32 probabilities from bf16 logits: both library paths
    const auto xb = x.to(at::kBFloat16);
    const auto p32 = model_ops::softmax(xb, op_path::stock, nullptr, at::kFloat);
    EXPECT_EQ(p32.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::allclose(model_ops::softmax(xb, op_path::composite, nullptr, at::kFloat), p32,
                             1e-6, 1e-7));
    EXPECT_TRUE(at::allclose(model_ops::linear(x, wt, b, op_path::composite),
                             model_ops::linear(x, wt, b, op_path::stock), 1e-5, 1e-6));
    EXPECT_EQ(model_ops::to_string(op_path::native), "native");
    EXPECT_EQ(model_ops::to_string(moe_path::host_loop), "host_loop");
}

TEST(model_ops, a_native_path_without_its_kernel_or_context_is_a_clear_error) {
    const auto x = at::randn({1, 16}, at::TensorOptions().dtype(at::kFloat));
    using model_ops::op_path;
    // no call context (or, in this build, no kernels): never a silent library fallback
    EXPECT_THROW(model_ops::softmax(x, op_path::native), std::logic_error);
    EXPECT_THROW(model_ops::linear(x, at::randn({4, 16}), {}, op_path::native), std::logic_error);
    EXPECT_THROW(model_ops::softmax(x.to(at::kBFloat16), op_path::native, nullptr, at::kFloat),
                 std::invalid_argument);
    // a session asked for a native path needs the context it would launch on
    const auto w = tiny("tiny-llama");
    decoder_paths native;
    native.linear = op_path::native;
    EXPECT_THROW(decoder_session(w, 64, native), std::invalid_argument);
}

TEST(model_ops, the_native_moe_path_is_a_clear_error_without_kernels_and_a_skip_on_the_cpu) {
    const auto f = at::TensorOptions().dtype(at::kFloat);
    const auto x = at::randn({2, 16}, f), logits = at::randn({2, 4}, f);
    const auto w_gate_up = at::randn({4, 16, 16}, f), w_down = at::randn({4, 16, 8}, f);
    EXPECT_EQ(model_ops::to_string(moe_path::native), "native");
    // no call context (or, in this build, no kernels): never a silent library fallback
    EXPECT_THROW(model_ops::moe_ffn(x, logits, w_gate_up, w_down, 2, true, moe_path::native),
                 std::logic_error);
    EXPECT_THROW(model_ops::grouped_linear(x, w_gate_up, at::tensor(std::vector<int>{1, 2, 2, 2}),
                                           moe_path::native),
                 std::logic_error);
    // the native kernels take the whole block, never the expert matmuls alone
    EXPECT_THROW(model_ops::expert_ffn(x, w_gate_up, w_down,
                                       at::tensor(std::vector<int>{1, 2, 2, 2}), moe_path::native),
                 std::logic_error);
#if !FOURFOLD_WITH_KERNELS
    EXPECT_TRUE(model_ops::native_moe_unsupported(128, 8, 2048, 768, 2).has_value());
#endif
    // moe_decode's native variant on the CPU: a skipped record with its reason, both parts
    auto dev = cpu();
    for (const char* part : {"ffn", "gate_up", "block"}) {
        const auto r = fourfold::testing::run_jobs(*dev,
                                                   {{"moe_decode",
                                                     json{{"tokens", 2},
                                                          {"experts", 8},
                                                          {"top_k", 2},
                                                          {"hidden", 64},
                                                          {"width", 32},
                                                          {"part", part}},
                                                     dtype::fp32,
                                                     {"generic", "native"},
                                                     ""}},
                                                   "correctness");
        const auto* native = fourfold::testing::find_record(r, ledger::correctness, "native");
        const auto* generic = fourfold::testing::find_record(r, ledger::correctness, "generic");
        ASSERT_TRUE(native && generic) << part;
        EXPECT_EQ(native->status, record_status::skipped) << part;
        EXPECT_FALSE(native->reason.empty()) << part;
        EXPECT_EQ(generic->status, record_status::ok) << part;
    }
}

TEST(model_ops, the_pad_paths_compute_one_function_and_always_return_a_new_tensor) {
    using model_ops::op_path;
    const auto x = at::randn({1, 3, 2, 5, 4}, at::TensorOptions().dtype(at::kFloat));
    // the causal pad (time in front only), a one-sided 2-D pad, an all-zero pad, a value
    for (const auto& pads : std::vector<std::vector<std::int64_t>>{
             {1, 1, 1, 1, 2, 0}, {0, 1, 0, 1}, {0, 0, 0, 0, 0, 0}, {2, 0}}) {
        const auto stock = model_ops::pad(x, pads, 0.5, op_path::stock);
        const auto composite = model_ops::pad(x, pads, 0.5, op_path::composite);
        EXPECT_TRUE(at::equal(stock, composite)) << pads.size();
        EXPECT_NE(composite.data_ptr(), x.data_ptr());
        EXPECT_TRUE(at::equal(stock, at::constant_pad_nd(x, pads, 0.5)));
    }
    // (0, 1, 0, 1): the last column and the last row are the constant, the first are not
    const auto y = model_ops::pad(at::ones({1, 1, 2, 2}), {0, 1, 0, 1}, 0, op_path::composite);
    EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{1, 1, 3, 3}));
    EXPECT_EQ(y[0][0][0][0].item<float>(), 1.0f);
    EXPECT_EQ(y[0][0][2][2].item<float>(), 0.0f);
    EXPECT_THROW(model_ops::pad(x, {1, 1, 1}, 0, op_path::stock), std::invalid_argument);
    EXPECT_THROW(model_ops::pad(x, {-1, 1}, 0, op_path::stock), std::invalid_argument);
    EXPECT_THROW(model_ops::pad(x, {1, 1}, 0, op_path::native), std::logic_error);
}

TEST(model_ops, the_composite_pads_intermediates_are_its_blocks_and_all_but_the_last_cat) {
    // the pad workload's count (written out there before model_ops): width blocks and the
    // width-padded tensor, height blocks and the height-padded tensor, the time block
    const std::int64_t n = 1, c = 4, t = 3, h = 6, w = 5, s = 1, pt = 2;
    const auto nct = n * c * t, w2 = w + 2 * s, h2 = h + 2 * s;
    const auto expect =
        nct * h * s + nct * h * w2 + nct * s * w2 + nct * h2 * w2 + n * c * pt * h2 * w2;
    EXPECT_EQ(model_ops::pad_composite_intermediate_elements({n, c, t, h, w}, {s, s, s, s, pt, 0}),
              expect);
}
