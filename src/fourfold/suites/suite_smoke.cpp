// smoke: seconds on a CPU; every workload, each variant, small shapes.
#include "fourfold/suites/suite.hpp"

namespace fourfold::suites {
namespace {

std::vector<runner::job_spec> smoke_jobs(const backend::device&) {
    std::vector<runner::job_spec> jobs;
    for (const auto t : {dtype::fp32, dtype::bf16}) {
        for (const int rows : {1, 8})
            jobs.push_back({"softmax", json{{"rows", rows}, {"vocab", 32000}}, t, {}, ""});
        for (const bool bias : {false, true})
            jobs.push_back({"linear_decode",
                            json{{"tokens", 1}, {"n", 1024}, {"k", 1024}, {"bias", bias}},
                            t,
                            {},
                            ""});
    }
    // whole tiny models: a dense one (one path: stock) and a mixture of experts (both paths)
    jobs.push_back({"decode",
                    json{{"model", "tiny-llama"}, {"ctx", 64}, {"tokens", 8}},
                    dtype::fp32,
                    {"stock"},
                    ""});
    jobs.push_back({"decode",
                    json{{"model", "tiny-qwen3-moe"}, {"ctx", 64}, {"tokens", 8}},
                    dtype::fp32,
                    {},
                    ""});
    return jobs;
}

} // namespace

FOURFOLD_SUITE(
    smoke, "smoke",
    "seconds on a CPU: softmax and linear_decode (fp32, bf16), tiny decode models (fp32)",
    smoke_jobs);
// A smoke run is a check that everything works, not a measurement to quote: 4 s per job at most.
[[maybe_unused]] static const bool smoke_budget = (fourfold_suite_smoke.timeout_s = 4.0, true);

} // namespace fourfold::suites
