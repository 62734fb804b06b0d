// The named suites as plans: the article suite covers every operator workload, sized for the
// device (reduced on the CPU, and saying so), and linear_shapes sweeps all 96 layer shapes.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/suites/suite.hpp"
#include "fourfold/workloads/linear_shapes.hpp"

#include <cstdlib>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace fourfold;

// With FOURFOLD_TEST_FAULTS=1 the article suite holds two faulting groups after the softmax
// jobs (issue 16's check inside the suite); without it, none.
TEST(suites, the_article_suite_holds_test_faults_only_when_asked) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    auto faults = [&] {
        std::vector<std::string> f;
        for (const auto& j : suites::expand_suite("article", *dev))
            if (j.workload == "fault")
                f.push_back(j.params["fault"].get<std::string>());
        return f;
    };
    const char* before = std::getenv("FOURFOLD_TEST_FAULTS");
    const std::string saved = before ? before : "";
    ::unsetenv("FOURFOLD_TEST_FAULTS");
    EXPECT_TRUE(faults().empty());
    ::setenv("FOURFOLD_TEST_FAULTS", "1", 1);
    EXPECT_EQ(faults(), (std::vector<std::string>{"segfault", "huge_alloc"}));
    if (before)
        ::setenv("FOURFOLD_TEST_FAULTS", saved.c_str(), 1);
    else
        ::unsetenv("FOURFOLD_TEST_FAULTS");
}

TEST(suites, article_on_the_cpu_covers_every_workload_and_marks_what_it_reduced) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    const auto jobs = suites::expand_suite("article", *dev);
    std::set<std::string> workloads;
    std::size_t reduced = 0, linear = 0, decode = 0;
    for (const auto& j : jobs) {
        workloads.insert(j.workload);
        if (j.workload == "decode") { // E2 end to end: the MoE model, both MoE paths
            ++decode;
            EXPECT_EQ(j.params["model"], "tiny-qwen3-moe");
            EXPECT_TRUE(j.variants.empty()) << "every variant: stock and the generic host loop";
            EXPECT_NE(j.note.find("reduced for the CPU"), std::string::npos);
        }
        if (j.note.find("reduced for the CPU") != std::string::npos)
            ++reduced;
        if (j.workload == "linear_decode") {
            ++linear;
            EXPECT_NE(workloads::find_linear_shape(j.params["n"].get<std::int64_t>(),
                                                   j.params["k"].get<std::int64_t>()),
                      nullptr)
                << "CPU sizes are a subset of the real layer shapes";
            EXPECT_FALSE(j.note.empty());
        }
    }
    EXPECT_EQ(workloads,
              (std::set<std::string>{"linear_decode", "softmax", "moe_decode", "pad", "fp8_linear",
                                     "decode", "vae_decode", "vae_roundtrip"}));
    EXPECT_EQ(decode, 1u);
    EXPECT_EQ(linear, 16u); // 8 shapes, with and without bias
    EXPECT_GT(reduced, linear);
    // the plan is valid as it stands: every parameter in range, every dtype supported
    EXPECT_NO_THROW(runner::make_plan(jobs, runner::run_settings{}, *dev));
    const auto* s = suites::suite_registry::instance().find("article");
    ASSERT_NE(s, nullptr);
    EXPECT_GT(s->timeout_for(*dev), 0);
    EXPECT_LE(s->timeout_for(*dev), s->timeout_s);
}

TEST(suites, linear_shapes_sweeps_every_layer_shape_with_and_without_bias) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    const auto jobs = suites::expand_suite("linear_shapes", *dev);
    ASSERT_EQ(jobs.size(), 2 * workloads::k_linear_shape_count);
    std::set<std::tuple<std::int64_t, std::int64_t, bool>> cases;
    for (const auto& j : jobs) {
        EXPECT_EQ(j.type, dtype::bf16);
        EXPECT_EQ(j.params["tokens"], 1);
        cases.emplace(j.params["n"].get<std::int64_t>(), j.params["k"].get<std::int64_t>(),
                      j.params["bias"].get<bool>());
    }
    EXPECT_EQ(cases.size(), jobs.size());
}

TEST(suites, a_suite_narrowed_to_some_workloads_keeps_their_jobs_alone) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    const auto jobs = suites::expand_suite("article", *dev);
    const auto some = suites::jobs_of_workloads(jobs, "article", {"softmax", "pad"});
    ASSERT_FALSE(some.empty());
    std::size_t expected = 0;
    for (const auto& j : jobs)
        expected += j.workload == "softmax" || j.workload == "pad";
    EXPECT_EQ(some.size(), expected);
    for (const auto& j : some)
        EXPECT_TRUE(j.workload == "softmax" || j.workload == "pad") << j.workload;
    try {
        suites::jobs_of_workloads(jobs, "article", {"softmax", "nosuch"});
        FAIL() << "no throw";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("'nosuch'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("linear_decode"), std::string::npos) << e.what();
    }
}
