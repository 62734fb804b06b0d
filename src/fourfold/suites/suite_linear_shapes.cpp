// linear_shapes: experiment E1 alone - linear_decode over the 96 layer shapes of
// data/linear_shapes.csv, one token, bf16, with and without bias, at full size on any device.
#include "fourfold/suites/suite.hpp"
#include "fourfold/workloads/linear_shapes.hpp"

namespace fourfold::suites {
namespace {

std::vector<runner::job_spec> linear_shape_jobs(const backend::device&) {
    std::vector<runner::job_spec> jobs;
    for (const bool bias : {false, true})
        for (const auto& s : workloads::linear_shape_table())
            jobs.push_back({"linear_decode",
                            json{{"tokens", 1}, {"n", s.n}, {"k", s.k}, {"bias", bias}},
                            dtype::bf16,
                            {},
                            ""});
    return jobs;
}

} // namespace

FOURFOLD_SUITE(linear_shapes, "linear_shapes",
               "linear_decode over the 96 layer shapes of real open models, one token, bf16, "
               "with and without bias (full size on any device)",
               linear_shape_jobs);
[[maybe_unused]] static const bool linear_shapes_budget =
    (fourfold_suite_linear_shapes.timeout_s = 3.0, true);

} // namespace fourfold::suites
