#include "fourfold/backend/device.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/runner/plan.hpp"

#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::runner;

namespace {

std::vector<job_spec> expand(std::vector<std::string> shapes, std::vector<std::string> params = {},
                             std::vector<std::string> dtypes = {}, std::string w = "linear_decode") {
    return expand_request({w, shapes, params, dtypes, {}});
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const bad_input& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST(plan, shapes_params_and_dtypes_expand_as_a_cartesian_product) {
    const auto specs = expand({"1x4096x4096,1x14336x4096"}, {"bias=true,false"}, {"bf16,fp32"});
    ASSERT_EQ(specs.size(), 8u);
    EXPECT_EQ(specs[0].params["n"], 4096);
    EXPECT_EQ(specs[0].params["k"], 4096);
    EXPECT_EQ(specs.back().params["n"], 14336);
    const auto ranged = expand({}, {"tokens=1..8"});
    EXPECT_EQ(ranged.size(), 8u);
    EXPECT_EQ(ranged[7].params["tokens"], 8);
}

TEST(plan, malformed_shapes_name_the_bad_value_and_the_valid_form) {
    EXPECT_NE(error_of([] { expand({"1x0x5"}); }).find("is 0"), std::string::npos);
    EXPECT_NE(error_of([] { expand({"abc"}); }).find("'abc'"), std::string::npos);
    EXPECT_NE(error_of([] { expand({"-1x4x4"}); }).find("'-1'"), std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x4"}); }).find("tokensxnxk"), std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x99999999999999999999999x4"}); }).find("not a positive"), std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x4194305x4"}); }).find("above the largest"), std::string::npos);
}

TEST(plan, unknown_names_list_what_is_valid) {
    EXPECT_NE(error_of([] { expand({}, {"nosuch=1"}); }).find("valid: tokens, n, k, bias"), std::string::npos);
    EXPECT_NE(error_of([] { expand({}, {}, {"fp33"}); }).find("valid: fp64"), std::string::npos);
    EXPECT_NE(error_of([] { expand({}, {}, {}, "nosuch"); }).find("valid:"), std::string::npos);
    EXPECT_NE(error_of([] { expand({}, {"bias=maybe"}); }).find("valid: true, false"), std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x8x8"}, {"n=4"}); }).find("both --shape and --param"), std::string::npos);
}

TEST(plan, make_plan_checks_dtype_variant_and_size_against_workload_and_device) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    auto make = [&](job_spec spec) { make_plan({spec}, s, *dev); };
    EXPECT_NE(error_of([&] { make({"softmax", json::object(), dtype::fp64, {}, ""}); }).find("no dtype fp64"), std::string::npos);
    EXPECT_NE(error_of([&] { make({"softmax", json::object(), dtype::fp32, {"fastest"}, ""}); }).find("variant 'fastest'"), std::string::npos);
    EXPECT_NE(error_of([&] { make({"softmax", json{{"rows", 1 << 20}, {"vocab", 1ll << 31}}, dtype::fp32, {}, ""}); }).find("needs at least"), std::string::npos);
    if (!dev->caps().supports(dtype::fp8_e4m3fn)) // libtorch 1.13
        EXPECT_NE(error_of([&] { make({"softmax", json::object(), dtype::fp8_e4m3fn, {}, ""}); }).find("no dtype"), std::string::npos);
    const auto p = make_plan({{"softmax", json{{"rows", 2}}, dtype::fp32, {}, ""}}, s, *dev);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.groups[0].args.params["vocab"], 128256); // default filled in
    EXPECT_EQ(p.groups[0].variants, (std::vector<std::string>{"stock", "generic", "native"}));
}

TEST(plan, timing_modes_the_device_lacks_are_bad_input) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    s.timing.mode = measure::timing_mode::graph;
    EXPECT_NE(error_of([&] { make_plan({{"softmax", json::object(), dtype::fp32, {}, ""}}, s, *dev); })
                  .find("needs device events"),
              std::string::npos);
}

TEST(plan, seeds_are_per_case_and_shared_by_its_variants) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    const auto p = make_plan({{"softmax", json{{"rows", 1}}, dtype::fp32, {}, ""},
                              {"softmax", json{{"rows", 2}}, dtype::fp32, {}, ""},
                              {"softmax", json{{"rows", 1}}, dtype::bf16, {}, ""}},
                             s, *dev);
    ASSERT_EQ(p.groups.size(), 3u);
    EXPECT_NE(p.groups[0].seed, p.groups[1].seed);
    EXPECT_EQ(p.groups[0].seed, p.groups[2].seed); // same values, another dtype
    EXPECT_EQ(p.groups[0].job("stock", "cpu").seed, p.groups[0].job("generic", "cpu").seed);
}

TEST(plan, ledgers_parse_by_name) {
    EXPECT_TRUE(parse_ledgers("memory").has(ledger::memory));
    EXPECT_FALSE(parse_ledgers("memory").has(ledger::op_time));
    EXPECT_EQ(parse_ledgers("all").list().size(), 4u);
    EXPECT_THROW(parse_ledgers("speed"), bad_input);
}
