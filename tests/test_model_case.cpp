// The whole-model base (models/model_case.hpp) on its own and as the decode workload uses it:
// one resident model a device, shared by the jobs of the same weights and freed for others; the
// twin made once and its reference computed once per inputs; a checkpoint directory without
// weights refused; the skips worded once; a captured step replayed. A small real model (one
// weight matrix) stands on the base as a VAE workload would.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/models/captured_step.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "fourfold/workloads/models/model_case.hpp"
#include "runner_helpers.hpp"
#include "test_helpers.hpp"

#include <ATen/ATen.h>
#include <fstream>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads;
using namespace fourfold::workloads::models;
using fourfold::testing::temp_dir;

namespace {

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

// A model of one projection: its twin keeps the first rows, its reference is x W^T in float64.
struct projection_weights {
    at::Tensor w;
};

int g_builds = 0, g_twins = 0, g_references = 0;

class projection_case final : public model_case<projection_weights> {
  public:
    projection_case(const case_args& a, std::string name)
        : model_case(a), m_name(std::move(name)) {}

    cost declared_cost() const override { return {}; }
    input_set make_inputs(std::uint64_t) const override {
        return input_set().add("x", at::ones({2, 4}, at::TensorOptions().dtype(at::kFloat)));
    }
    reference_plan reference(const input_set&) const override { return {}; }

    // What a variant does: the model from the slot, on the inputs' device.
    std::shared_ptr<resident> call(c10::Device device) const { return acquire(device); }
    at::Tensor reference_over(const at::Tensor& x) const {
        const auto model = last_model();
        return twin_reference(*model, x, [](const projection_weights& twin, const at::Tensor& in) {
            ++g_references;
            return at::matmul(in.to(at::kDouble), twin.w.to(at::kDouble).t());
        });
    }

  protected:
    std::string weights_key() const override { return m_name; }
    projection_weights build_weights(c10::Device device) const override {
        ++g_builds;
        return {at::arange(24, at::TensorOptions().dtype(at::kFloat).device(device)).view({6, 4})};
    }
    projection_weights make_twin(const projection_weights& full) const override {
        ++g_twins;
        return {full.w.narrow(0, 0, 2).to(at::kCPU)};
    }

  private:
    std::string m_name;
};

case_args args_of() {
    case_args a;
    a.workload = "projection";
    a.params = json::object();
    return a;
}

const c10::Device k_cpu(c10::DeviceType::CPU);

} // namespace

TEST(model_case, jobs_of_the_same_weights_share_one_resident_model) {
    g_builds = 0;
    auto a = std::make_unique<projection_case>(args_of(), "m1");
    auto b = std::make_unique<projection_case>(args_of(), "m1");
    auto from_a = a->call(k_cpu);
    auto from_b = b->call(k_cpu);
    EXPECT_EQ(from_a.get(), from_b.get());
    EXPECT_EQ(g_builds, 1);
    // a job of other weights frees the first model before it builds its own
    std::weak_ptr<projection_case::resident> first = from_a;
    auto other = std::make_unique<projection_case>(args_of(), "m2");
    from_a.reset();
    from_b.reset();
    (void)other->call(k_cpu);
    EXPECT_TRUE(first.expired());
    EXPECT_EQ(g_builds, 2);
    EXPECT_TRUE(model_slot::holds<projection_case::resident>("m2|cpu"));
    // the last case of it gone, the slot is empty: nothing outlives the jobs
    other.reset();
    EXPECT_FALSE(model_slot::holds<projection_case::resident>("m2|cpu"));
}

TEST(model_case, the_twin_and_its_reference_are_made_once_per_model_and_inputs) {
    g_twins = 0;
    g_references = 0;
    projection_case c(args_of(), "m3");
    EXPECT_THROW(c.reference_over(at::ones({1, 4})), std::logic_error); // before any variant ran
    (void)c.call(k_cpu);
    const auto x = at::ones({2, 4}, at::TensorOptions().dtype(at::kFloat));
    const auto r1 = c.reference_over(x);
    const auto r2 = c.reference_over(x.clone());
    EXPECT_EQ(g_twins, 1);
    EXPECT_EQ(g_references, 1);
    EXPECT_EQ(r1.sizes(), (std::vector<std::int64_t>{2, 2})); // the twin's two rows
    EXPECT_TRUE(at::equal(r1, r2));
    EXPECT_DOUBLE_EQ(r1[0][1].item<double>(), 4 + 5 + 6 + 7);
    (void)c.reference_over(x * 2); // other inputs: computed again, the twin kept
    EXPECT_EQ(g_references, 2);
    EXPECT_EQ(g_twins, 1);
}

TEST(model_case, two_kinds_of_model_never_share_a_slot_entry) {
    auto built = [](int v) { return std::make_shared<int>(v); };
    const auto i = model_slot::acquire<int>("same", [&] { return built(1); });
    EXPECT_TRUE(model_slot::holds<int>("same"));
    EXPECT_FALSE(model_slot::holds<double>("same"));
    const auto d =
        model_slot::acquire<double>("same", [] { return std::make_shared<double>(2.5); });
    EXPECT_EQ(*d, 2.5);
    EXPECT_FALSE(model_slot::holds<int>("same")); // one model on the device at a time
    EXPECT_EQ(*i, 1);                             // a holder keeps its copy alive
    model_slot::release<double>("same");
    EXPECT_FALSE(model_slot::holds<double>("same"));
}

TEST(model_case, weights_come_from_a_seed_or_a_checkpoint_directory_with_weights) {
    EXPECT_EQ(open_checkpoint(std::nullopt, false, true), nullptr); // a preset
    temp_dir dir;
    std::ofstream(dir / "config.json") << "{}";
    EXPECT_EQ(open_checkpoint(std::filesystem::path(dir.path()), false, true), nullptr);
    try {
        (void)open_checkpoint(std::filesystem::path(dir.path()), false, false);
        ADD_FAILURE() << "a directory without weights was accepted";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("--random-weights"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
    }
}

TEST(model_case, the_skips_every_model_workload_says_alike) {
    auto dev = cpu();
    const auto graph = graph_capture_missing(*dev);
    if (!dev->caps().graphs) {
        ASSERT_TRUE(graph.has_value());
        EXPECT_EQ(graph->rfind("mode=graph: ", 0), 0u) << *graph;
    }
    const double memory = static_cast<double>(dev->caps().memory_bytes);
    EXPECT_FALSE(memory_shortfall(*dev, "m", 0.1 * memory, "KV cache", 0.1 * memory).has_value());
    const auto over = memory_shortfall(*dev, "big in bf16", memory, "KV cache", 1e9);
    ASSERT_TRUE(over.has_value());
    EXPECT_NE(over->find("big in bf16 needs"), std::string::npos) << *over;
    EXPECT_NE(over->find("KV cache"), std::string::npos) << *over;
}

TEST(model_case, a_captured_step_runs_eagerly_until_captured) {
    auto dev = cpu();
    captured_step step;
    int eager = 0;
    step.run([&] { ++eager; });
    EXPECT_EQ(eager, 1);
    EXPECT_FALSE(step.captured());
    if (!dev->caps().graphs)
        return; // the replay half needs a device that captures graphs (CUDA)
    auto x = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(dev->torch_device()));
    step.capture(*dev, [&] { x.add_(1); });
    dev->synchronize();
    const auto captured_at = x.item<float>();
    step.run([&] { ++eager; });
    step.run([&] { ++eager; });
    dev->synchronize();
    EXPECT_TRUE(step.captured());
    EXPECT_EQ(eager, 1); // replays, not the eager body
    EXPECT_FLOAT_EQ(x.item<float>(), captured_at + 2);
}

TEST(model_case, the_decode_workload_stands_on_the_base) {
    // a decode job's records say what the base decided: the twin's reference, its throughput's
    // stop state from the shared rule, the checkpoint or the seed the weights came from
    auto dev = cpu();
    const auto r =
        fourfold::testing::run_jobs(*dev,
                                    {{"decode",
                                      json{{"model", "tiny-qwen3"}, {"ctx", 10}, {"tokens", 3}},
                                      dtype::fp32,
                                      {"stock"},
                                      ""},
                                     {"decode",
                                      json{{"model", "tiny-qwen3"}, {"ctx", 20}, {"tokens", 3}},
                                      dtype::fp32,
                                      {"stock"},
                                      ""}},
                                    "throughput,correctness");
    int ok = 0;
    for (const auto& rec : r.records) {
        ASSERT_EQ(rec.status, record_status::ok) << rec.reason;
        ++ok;
        const auto& f = rec.figures;
        EXPECT_NE(f["facts"]["weights"].get<std::string>().find("random, seed"), std::string::npos);
        if (rec.which == ledger::correctness) {
            EXPECT_EQ(f["verdict"], "PASS");
        } else {
            const auto stop = f["stop"].get<std::string>();
            EXPECT_TRUE(stop == "converged" || stop == "timed_out" || stop == "sample_cap") << stop;
            EXPECT_TRUE(f.contains("stop_detail"));
        }
    }
    EXPECT_EQ(ok, 4);
    // every case gone, the model is freed
    EXPECT_FALSE(model_slot::holds<resident_model<decoder_weights>>("tiny-qwen3|fp32|1|model|cpu"));
}

// A run's cases live as long as its plan, so a model group's weights would stay resident through
// every later group: the runner frees them before a group that does not use them (its memory
// record would count them), and keeps them for one that does.
TEST(model_case, the_runner_frees_the_resident_model_before_a_group_of_another_kind) {
    auto dev = cpu();
    const std::string key = "tiny-qwen3|fp32|1|model|cpu";
    const runner::job_spec decode{"decode",
                                  json{{"model", "tiny-qwen3"}, {"ctx", 4}, {"tokens", 2}},
                                  dtype::fp32,
                                  {"stock"},
                                  ""};
    const runner::job_spec softmax{"softmax", json{{"vocab", 64}}, dtype::fp32, {"stock"}, ""};
    auto s = fourfold::testing::quick_settings("correctness");
    const auto run = [&](const std::vector<runner::job_spec>& specs) {
        const auto plan = runner::make_plan(specs, s, *dev);
        runner::memory_sink sink;
        runner::run_context ctx{*dev, dev->measure_copy_bandwidth(), sink};
        (void)runner::execute(plan, ctx);
        for (const auto& rec : sink.records)
            EXPECT_EQ(rec.status, record_status::ok) << rec.reason;
        return model_slot::holds<resident_model<decoder_weights>>(key); // the plan still alive
    };
    EXPECT_TRUE(run({softmax, decode}));  // the last group's model stays while its case does
    EXPECT_FALSE(run({decode, softmax})); // freed before the softmax group
    EXPECT_FALSE(model_slot::holds<resident_model<decoder_weights>>(key));
}
