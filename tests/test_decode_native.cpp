// CPU tests of the decode workload's native variant where it cannot run: a skipped record with
// its reason on the CPU (every ledger, both modes), and a session that refuses a native step
// without a call context or in a build without native kernels.
#include "fourfold/backend/device.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads::models;

TEST(decode_native, on_the_cpu_every_native_record_is_a_skip_with_its_reason) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    std::vector<runner::job_spec> jobs;
    for (const char* mode : {"eager", "graph"})
        jobs.push_back({"decode",
                        json{{"model", "tiny-llama"}, {"ctx", 8}, {"tokens", 2}, {"mode", mode}},
                        dtype::fp32,
                        {"stock", "native"},
                        ""});
    const auto r = fourfold::testing::run_jobs(*dev, jobs, "throughput,correctness,memory");
    int native = 0;
    for (const auto& rec : r.records) {
        if (rec.job.variant != "native")
            continue;
        ++native;
        EXPECT_EQ(rec.status, record_status::skipped) << rec.reason;
        EXPECT_NE(rec.reason.find("cuda"), std::string::npos) << rec.reason;
    }
    EXPECT_EQ(native, 6); // two modes x three ledgers
}

TEST(decode_native, a_native_step_needs_a_call_context_and_native_kernels) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    const auto w = std::make_shared<const decoder_weights>(
        random_weights(*find_preset("tiny-llama"), at::kFloat, dev->torch_device(), 1));
    decoder_paths p;
    p.step = workloads::model_ops::op_path::native;
    EXPECT_THROW(decoder_session(w, 64, p), std::invalid_argument);
    p.step = workloads::model_ops::op_path::composite;
    EXPECT_THROW(decoder_session(w, 64, p, workloads::call_context(*dev)), std::invalid_argument);
    p.step = workloads::model_ops::op_path::stock;
    p.prefill_linear = workloads::model_ops::op_path::native;
    EXPECT_THROW(decoder_session(w, 64, p), std::invalid_argument);
#if !FOURFOLD_WITH_KERNELS
    p.prefill_linear.reset();
    p.step = workloads::model_ops::op_path::native;
    try {
        decoder_session s(w, 64, p, workloads::call_context(*dev));
        ADD_FAILURE() << "a native step was accepted in a build without native kernels";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("native kernels"), std::string::npos) << e.what();
    }
#endif
}
