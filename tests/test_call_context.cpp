// The call context and variant needs (workloads/workload.hpp): what a variant is handed, what
// it can say of itself, and one mechanism deciding "not here" as a skip with its reason.
#include "fourfold/backend/device.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/workload.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::testing;

namespace {

std::string g_seen_device;
const void* g_seen_stream = reinterpret_cast<const void*>(1);

class context_probe_case final : public workloads::workload_case {
  public:
    using workload_case::workload_case;
    workloads::cost declared_cost() const override { return {64 * 4, 64 * 4, 64, "x + 1"}; }
    workloads::input_set make_inputs(std::uint64_t seed) const override {
        return workloads::input_set()
            .add("x", workloads::seeded_normal({64}, seed, 0.0, 1.0, at::kFloat))
            .add("unused", at::zeros({1}));
    }
    workloads::reference_plan reference(const workloads::input_set& in) const override {
        const auto& x = in["x"];
        return workloads::chunked_reference(
            0, 64, 8, "x + 1 in float64",
            [x](std::int64_t s, std::int64_t l) { return x.narrow(0, s, l).to(at::kDouble) + 1; });
    }
    at::Tensor plain(const workloads::call_context& ctx, const workloads::input_set& in) const {
        g_seen_device = ctx.device().name();
        g_seen_stream = ctx.stream();
        ctx.fact("said_by_the_call", "yes");
        return in["x"] + 1;
    }
};

FOURFOLD_WORKLOAD(context_probe_case, "context_probe")
    .describe("tests only: a variant that looks at its call context")
    .dtypes({dtype::fp32})
    .variant("stock", &context_probe_case::plain, "x + 1")
    .native_variant("native", &context_probe_case::plain, "declared as a native CUDA kernel")
    .variant("needs_a_feature", &context_probe_case::plain, "needs a capability no device has",
             false, {.features = {"no_such_feature"}})
    .variant("needs_a_new_torch", &context_probe_case::plain, "needs libtorch 99.0", false,
             {.torch_major = 99});

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

} // namespace

TEST(call_context,
     a_variant_sees_its_device_and_no_stream_on_the_cpu_and_its_facts_reach_the_record) {
    auto dev = cpu();
    const auto r = run_jobs(*dev, {{"context_probe", json::object(), dtype::fp32, {"stock"}, ""}},
                            "correctness,op_time");
    EXPECT_EQ(g_seen_device, "cpu");
    EXPECT_EQ(g_seen_stream, nullptr);
    for (const auto& rec : r.records) {
        ASSERT_EQ(rec.status, record_status::ok) << rec.reason;
        EXPECT_EQ(rec.figures["facts"]["said_by_the_call"], "yes") << to_string(rec.which);
    }
    EXPECT_EQ(find_record(r, ledger::correctness, "stock")->figures["verdict"], "PASS");
}

TEST(call_context, a_variant_declared_cuda_only_is_a_skip_with_its_reason_on_the_cpu) {
    auto dev = cpu();
    const auto r = run_jobs(*dev,
                            {{"context_probe",
                              json::object(),
                              dtype::fp32,
                              {"native", "needs_a_feature", "needs_a_new_torch"},
                              ""}},
                            "correctness,op_time,memory");
    ASSERT_EQ(r.records.size(), 9u);
    for (const auto& rec : r.records) {
        EXPECT_EQ(rec.status, record_status::skipped) << rec.job.variant;
        if (rec.job.variant == "native")
            EXPECT_NE(rec.reason.find("runs on cuda only; this device is cpu"), std::string::npos)
                << rec.reason;
        if (rec.job.variant == "needs_a_feature")
            EXPECT_NE(rec.reason.find("no_such_feature"), std::string::npos) << rec.reason;
        if (rec.job.variant == "needs_a_new_torch")
            EXPECT_NE(rec.reason.find("needs libtorch 99.0"), std::string::npos) << rec.reason;
    }
    EXPECT_EQ(r.summary.exit_code(), 0);
}

TEST(call_context, the_native_variants_of_the_operator_workloads_skip_on_the_cpu) {
    auto dev = cpu();
    const auto r = run_jobs(
        *dev,
        {{"softmax", json{{"rows", 2}, {"vocab", 64}}, dtype::fp32, {"stock", "native"}, ""},
         {"linear_decode", json{{"n", 16}, {"k", 16}}, dtype::fp32, {"stock", "native"}, ""},
         {"pad",
          json{{"channels", 2}, {"height", 4}, {"width", 4}},
          dtype::fp32,
          {"stock", "native"},
          ""}},
        "correctness");
    int skipped = 0;
    for (const auto& rec : r.records) {
        if (rec.job.variant != "native") {
            EXPECT_EQ(rec.status, record_status::ok) << rec.reason;
            continue;
        }
        ++skipped;
        EXPECT_EQ(rec.status, record_status::skipped);
        EXPECT_NE(rec.reason.find("cuda"), std::string::npos) << rec.reason;
    }
    EXPECT_EQ(skipped, 3);
}

TEST(call_context, inputs_are_named_slots_and_a_wrong_name_says_which_there_are) {
    workloads::input_set in;
    in.add("x", at::ones({2})).add("weight", at::ones({3}));
    EXPECT_EQ(in["weight"].numel(), 3);
    EXPECT_TRUE(in.has("x"));
    EXPECT_FALSE(in.has("bias"));
    try {
        (void)in["bias"];
        FAIL() << "no throw";
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("the slots are: x, weight"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(in.add("x", at::ones({1})), std::logic_error);
    const auto copy = in.clone();
    EXPECT_EQ(copy.names(), in.names());
    EXPECT_EQ(copy.bytes(), in.bytes());
}

TEST(call_context, needs_are_listed_with_the_variant) {
    const auto* w = workloads::registry::instance().find("softmax");
    ASSERT_NE(w, nullptr);
    const auto j = w->to_json();
    bool found = false;
    for (const auto& v : j["variants"])
        if (v["name"] == "native") {
            found = true;
            EXPECT_EQ(v["needs"]["native_kernels"], true);
            EXPECT_EQ(v["needs"]["devices"], json::array({"cuda"}));
        }
    EXPECT_TRUE(found);
}

// --- libtorch's missing kernels: declared ops, tried once, never an error's text -------------

#include "fourfold/backend/op_support.hpp"

namespace {

// Calls softmax in the job's dtype without declaring it: whatever libtorch throws is a failure.
class undeclared_case final : public workloads::workload_case {
  public:
    using workload_case::workload_case;
    workloads::cost declared_cost() const override { return {64, 64, 64, "softmax"}; }
    workloads::input_set make_inputs(std::uint64_t seed) const override {
        return workloads::input_set().add("x",
                                          workloads::seeded_normal({8}, seed, 0.0, 1.0, at::kHalf));
    }
    workloads::reference_plan reference(const workloads::input_set& in) const override {
        const auto& x = in["x"];
        return workloads::chunked_reference(
            0, 8, 8, "softmax in float64", [x](std::int64_t s, std::int64_t l) {
                return at::softmax(x.to(at::kDouble), -1).narrow(0, s, l);
            });
    }
    at::Tensor undeclared(const workloads::call_context&, const workloads::input_set& in) const {
        return at::softmax(in["x"], -1);
    }
};

FOURFOLD_WORKLOAD(undeclared_case, "undeclared_ops_probe")
    .describe("tests only: a variant that calls an op it does not declare")
    .dtypes({dtype::fp16})
    .variant("stock", &undeclared_case::undeclared, "softmax, not declared")
    .variant("declared", &undeclared_case::undeclared, "softmax, declared", false,
             {.ops = {"softmax"}});

bool softmax_runs_in_fp16_here() {
    try {
        (void)at::softmax(at::ones({2, 8}, at::TensorOptions().dtype(at::kHalf)), -1);
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

} // namespace

TEST(op_support, an_op_is_tried_once_and_its_answer_matches_a_direct_call) {
    auto dev = cpu();
    EXPECT_EQ(backend::op_unsupported(*dev, "matmul", dtype::fp32), std::nullopt);
    const auto why = backend::op_unsupported(*dev, "softmax", dtype::fp16);
    EXPECT_EQ(why.has_value(), !softmax_runs_in_fp16_here());
    if (why) {
        EXPECT_NE(why->find("has no softmax kernel for fp16 on cpu"), std::string::npos) << *why;
    }
    EXPECT_EQ(backend::op_unsupported(*dev, "softmax", dtype::fp16), why); // cached, same answer
    EXPECT_THROW((void)backend::op_unsupported(*dev, "no_such_op", dtype::fp32), std::logic_error);
}

TEST(op_support, a_missing_kernel_is_a_skip_only_where_the_variant_declared_the_op) {
    if (softmax_runs_in_fp16_here())
        GTEST_SKIP() << "this libtorch has fp16 softmax on the CPU";
    auto dev = cpu();
    const auto r = run_jobs(
        *dev, {{"undeclared_ops_probe", json::object(), dtype::fp16, {"stock", "declared"}, ""}},
        "correctness");
    const auto* declared = find_record(r, ledger::correctness, "declared");
    const auto* undeclared = find_record(r, ledger::correctness, "stock");
    ASSERT_TRUE(declared && undeclared);
    EXPECT_EQ(declared->status, record_status::skipped);
    EXPECT_NE(declared->reason.find("softmax kernel for fp16"), std::string::npos)
        << declared->reason;
    // no text of libtorch's error decides a skip: undeclared, the same error is a failure
    EXPECT_EQ(undeclared->status, record_status::failed) << undeclared->reason;
}
