// GPU tests of the decode workload (ctest label gpu; each skips without a CUDA device): tiny
// presets in bf16 through both modes, both MoE paths and the native variants pass against the
// float64 reference (in graph mode the twin's decode steps are replays of the captured step), a
// replayed step computes what the eager step computes, and throughput is timed with device events.
#include "fourfold/backend/device.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <map>
#include <string>

using namespace fourfold;
using namespace fourfold::workloads::models;

namespace {

std::unique_ptr<backend::device> gpu() {
    if (backend::cuda_device_count() == 0)
        return nullptr;
    return backend::open_device({backend::device_kind::cuda, 0});
}

#define REQUIRE_GPU(dev)                                                                           \
    auto dev = gpu();                                                                              \
    if (!dev)                                                                                      \
    GTEST_SKIP() << "no CUDA device visible"

runner::job_spec job(const std::string& model, const std::string& mode) {
    return {"decode",
            json{{"model", model}, {"ctx", 100}, {"tokens", 8}, {"mode", mode}},
            dtype::bf16,
            {},
            ""};
}

at::Tensor teacher_forced(std::shared_ptr<const decoder_weights> w, const at::Tensor& tokens,
                          moe_path moe, backend::device* capture_on) {
    decoder_session s(std::move(w), 64, moe);
    std::vector<at::Tensor> rows{s.prefill_teacher_forced(tokens, 6)};
    if (capture_on)
        s.capture(*capture_on);
    for (std::int64_t p = 6; p < tokens.size(0); ++p) {
        s.step();
        rows.push_back(s.logits().clone());
    }
    return at::cat(rows, 0).to(at::kFloat);
}

double rel_l2(const at::Tensor& a, const at::Tensor& b) {
    return (a - b).norm().item<double>() / b.norm().item<double>();
}

} // namespace

TEST(decode_cuda, tiny_presets_pass_in_both_modes_and_both_moe_paths) {
    REQUIRE_GPU(dev);
    std::vector<runner::job_spec> jobs;
    for (const char* m : {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe"})
        for (const char* mode : {"eager", "graph"})
            jobs.push_back(job(m, mode));
    const auto r = fourfold::testing::run_jobs(*dev, jobs, "throughput,correctness,memory");
    const bool kernels = FOURFOLD_WITH_KERNELS != 0;
    std::map<std::string, int> graph_ok; // the graph-mode throughput records, by variant
    int moe_stock_ok = 0;
    for (const auto& rec : r.records) {
        ASSERT_NE(rec.status, record_status::failed)
            << rec.job.params.dump() << " " << rec.job.variant << ": " << rec.reason;
        if (rec.status == record_status::skipped) {
            // only the host-syncing generic path under graph, and generic on dense models (and
            // the native variants in a build without the kernels)
            const bool native = rec.job.variant.rfind("native", 0) == 0;
            EXPECT_TRUE(rec.job.variant == "generic" || (native && !kernels))
                << rec.job.variant << ": " << rec.reason;
            continue;
        }
        if (rec.which == ledger::correctness) {
            EXPECT_EQ(rec.figures["verdict"], "PASS")
                << rec.job.params.dump() << rec.figures["failed_checks"].dump();
        }
        if (rec.which == ledger::throughput) {
            EXPECT_NE(rec.figures["timing"].get<std::string>().find("device events"),
                      std::string::npos);
            EXPECT_GT(rec.figures["tokens_per_s"].get<double>(), 0);
            if (rec.job.params["mode"] == "graph")
                ++graph_ok[rec.job.variant];
            moe_stock_ok +=
                rec.job.params["model"] == "tiny-qwen3-moe" && rec.job.variant == "stock";
        }
    }
    // every model in graph mode through stock and (with the kernels) both native variants; the
    // generic path copies to the host and is never captured
    EXPECT_EQ(graph_ok["stock"], 3);
    EXPECT_EQ(graph_ok["native"], kernels ? 3 : 0);
    EXPECT_EQ(graph_ok["native_fused"], kernels ? 3 : 0);
    EXPECT_EQ(graph_ok["generic"], 0);
    EXPECT_EQ(moe_stock_ok, 2);
}

TEST(decode_cuda, a_replayed_step_computes_what_the_eager_step_computes) {
    REQUIRE_GPU(dev);
    for (const char* name : {"tiny-llama", "tiny-qwen3-moe"}) {
        const auto w = std::make_shared<const decoder_weights>(
            random_weights(*find_preset(name), at::kBFloat16, dev->torch_device(), 9));
        const auto tokens = at::arange(20, at::TensorOptions().dtype(at::kLong))
                                .mul(31)
                                .remainder(w->config.vocab)
                                .to(dev->torch_device());
        const auto eager = teacher_forced(w, tokens, moe_path::grouped_mm, nullptr);
        const auto graph = teacher_forced(w, tokens, moe_path::grouped_mm, dev.get());
        EXPECT_LT(rel_l2(graph, eager), 2e-2) << name;
        const auto loop = teacher_forced(w, tokens, moe_path::host_loop, nullptr);
        EXPECT_LT(rel_l2(loop, eager), 2e-2) << name;
    }
}
