#include "fourfold/backend/device.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/runner/plan.hpp"

#include <gtest/gtest.h>
#include <utility>

using namespace fourfold;
using namespace fourfold::runner;

namespace {

std::vector<job_spec> expand(std::vector<std::string> shapes, std::vector<std::string> params = {},
                             std::vector<std::string> dtypes = {},
                             std::string w = "linear_decode") {
    return expand_request(
        {std::move(w), std::move(shapes), std::move(params), std::move(dtypes), {}});
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
    EXPECT_NE(error_of([] { expand({"1x99999999999999999999999x4"}); }).find("not a positive"),
              std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x4194305x4"}); }).find("above the largest"),
              std::string::npos);
}

TEST(plan, unknown_names_list_what_is_valid) {
    EXPECT_NE(error_of([] { expand({}, {"nosuch=1"}); }).find("valid: tokens, n, k, bias"),
              std::string::npos);
    EXPECT_NE(error_of([] { expand({}, {}, {"fp33"}); }).find("valid: fp64"), std::string::npos);
    EXPECT_NE(error_of([] { expand({}, {}, {}, "nosuch"); }).find("valid:"), std::string::npos);
    EXPECT_NE(error_of([] { expand({}, {"bias=maybe"}); }).find("valid: true, false"),
              std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x8x8"}, {"n=4"}); }).find("both --shape and --param"),
              std::string::npos);
}

TEST(plan, make_plan_checks_dtype_variant_and_size_against_workload_and_device) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    auto make = [&](job_spec spec) { make_plan({std::move(spec)}, s, *dev); };
    EXPECT_NE(error_of([&] {
                  make({"softmax", json::object(), dtype::fp64, {}, ""});
              }).find("no dtype fp64"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  make({"softmax", json::object(), dtype::fp32, {"fastest"}, ""});
              }).find("variant 'fastest'"),
              std::string::npos);
    EXPECT_NE(
        error_of([&] {
            make({"softmax", json{{"rows", 1 << 20}, {"vocab", 1ll << 31}}, dtype::fp32, {}, ""});
        }).find("needs at least"),
        std::string::npos);
    if (!dev->caps().supports(dtype::fp8_e4m3fn)) // libtorch 1.13
        EXPECT_NE(error_of([&] {
                      make({"softmax", json::object(), dtype::fp8_e4m3fn, {}, ""});
                  }).find("no dtype"),
                  std::string::npos);
    const auto p = make_plan({{"softmax", json{{"rows", 2}}, dtype::fp32, {}, ""}}, s, *dev);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.groups[0].args.params["vocab"], 128256); // default filled in
    EXPECT_EQ(p.groups[0].variants, (std::vector<std::string>{"stock", "generic", "native"}));
}

// --variants over several workloads (a peer workload beside fourfold's own, issue 17): each
// workload takes the names it knows; a name no workload of the request knows is bad input.
TEST(plan, variants_over_several_workloads_go_to_the_workloads_that_know_them) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    const std::vector<std::string> both{"generic", "bf16"};
    const auto p = make_plan({{"softmax", json::object(), dtype::fp32, both, ""},
                              {"fp8_linear", json::object(), dtype::bf16, both, ""}},
                             s, *dev);
    ASSERT_EQ(p.groups.size(), 2u);
    EXPECT_EQ(p.groups[0].variants, (std::vector<std::string>{"generic"}));
    EXPECT_EQ(p.groups[1].variants, (std::vector<std::string>{"bf16"}));
    const auto one = make_plan({{"softmax", json::object(), dtype::fp32, {"bf16"}, ""},
                                {"fp8_linear", json::object(), dtype::bf16, {"bf16"}, ""}},
                               s, *dev);
    ASSERT_EQ(one.groups.size(), 1u); // softmax knows none of the names: no job
    EXPECT_EQ(one.groups[0].args.workload, "fp8_linear");
    const auto why = error_of([&] {
        make_plan({{"softmax", json::object(), dtype::fp32, {"generic", "fastest"}, ""},
                   {"fp8_linear", json::object(), dtype::bf16, {"generic", "fastest"}, ""}},
                  s, *dev);
    });
    EXPECT_NE(why.find("variant 'fastest'"), std::string::npos) << why;
    EXPECT_NE(why.find("dequant_row"), std::string::npos) << why; // the valid names of both
}

// One rule for "cannot" (issue 11): a timing mode this device lacks is a valid request another
// device can do, so its op_time records are skips with the reason and the other ledgers run.
TEST(plan, timing_modes_the_device_lacks_skip_op_time_with_the_reason) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    s.timing.mode = measure::timing_mode::graph;
    const std::vector<std::string> both{"stock", "generic"};
    const auto p = make_plan({{"softmax", json::object(), dtype::fp32, both, ""}}, s, *dev);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_FALSE(p.settings.ledgers.has(ledger::op_time));
    EXPECT_TRUE(p.settings.ledgers.has(ledger::correctness));
    ASSERT_EQ(p.skipped.size(), 2u); // stock and generic
    for (const auto& r : p.skipped) {
        EXPECT_EQ(r.which, ledger::op_time);
        EXPECT_EQ(r.status, record_status::skipped);
        EXPECT_NE(r.reason.find("needs device events"), std::string::npos) << r.reason;
    }
    EXPECT_EQ(p.record_count(), 6u); // 2 skipped op_time + 2 x (correctness, memory)
    // asked for op_time alone there is nothing to run: only the skips
    s.ledgers = ledger_set::of({ledger::op_time});
    const auto only = make_plan({{"softmax", json::object(), dtype::fp32, both, ""}}, s, *dev);
    EXPECT_TRUE(only.groups.empty());
    EXPECT_EQ(only.skipped.size(), 2u);
}

TEST(plan, a_case_larger_than_this_device_is_skipped_and_one_larger_than_any_is_bad_input) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    s.ledgers = ledger_set::of({ledger::correctness});
    // 8 TiB: more than this machine holds, less than a device could
    const auto p = make_plan({{"softmax",
                               json{{"rows", 1 << 20}, {"vocab", 1 << 20}},
                               dtype::fp32,
                               {"stock", "generic"},
                               ""}},
                             s, *dev);
    EXPECT_TRUE(p.groups.empty());
    ASSERT_EQ(p.skipped.size(), 2u);
    EXPECT_NE(p.skipped[0].reason.find("needs at least"), std::string::npos);
    EXPECT_NE(p.skipped[0].job.seed, 0u);
    EXPECT_NE(
        error_of([&] {
            make_plan(
                {{"softmax", json{{"rows", 1 << 20}, {"vocab", 1ll << 31}}, dtype::fp32, {}, ""}},
                s, *dev);
        }).find("more than any device addresses"),
        std::string::npos);
}

TEST(plan, a_ledger_no_asked_workload_measures_is_bad_input_and_a_suite_leaves_such_jobs_out) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    run_settings s;
    s.ledgers = ledger_set::of({ledger::throughput});
    const job_spec softmax{"softmax", json{{"rows", 1}, {"vocab", 8}}, dtype::fp32, {}, ""};
    EXPECT_NE(error_of([&] { make_plan({softmax}, s, *dev); }).find("softmax measures"),
              std::string::npos);
    const job_spec decode{"decode",
                          json{{"model", "tiny-llama"}, {"ctx", 8}, {"tokens", 2}},
                          dtype::fp32,
                          {"stock"},
                          ""};
    const auto p = make_plan({softmax, decode}, s, *dev);
    ASSERT_EQ(p.groups.size(), 1u);
    EXPECT_EQ(p.groups[0].w->name, "decode");
    ASSERT_EQ(p.notes.size(), 1u);
    EXPECT_NE(p.notes[0].find("left out: softmax measures"), std::string::npos) << p.notes[0];
}

TEST(plan, empty_items_of_a_list_are_bad_input) {
    EXPECT_NE(error_of([] { expand({"1x4x4,,1x8x8"}); }).find("1x4x4,,1x8x8"), std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x4x4"}, {"bias=true,"}); }).find("bias=true,"),
              std::string::npos);
    EXPECT_NE(error_of([] { expand({"1x4x4"}, {}, {",fp32"}); }).find("empty item"),
              std::string::npos);
    EXPECT_NE(error_of([] { parse_ledgers("memory,,op_time"); }).find("empty item"),
              std::string::npos);
}

TEST(plan, settings_out_of_range_or_in_contradiction_are_bad_input_in_fourfolds_words) {
    auto dev = backend::open_device({backend::device_kind::cpu, 0});
    auto settings = [&](auto&& fill) {
        settings_request r;
        fill(r);
        return error_of([&] { make_settings(r, *dev); });
    };
    EXPECT_NE(settings([](settings_request& r) {
                  r.min_time_s = "5";
                  r.timeout_s = "1";
              }).find("--min-time <= --timeout"),
              std::string::npos);
    // a suite's budget counts as the timeout the minimum time must fit in
    EXPECT_NE(settings([](settings_request& r) {
                  r.min_time_s = "3";
                  r.suite_timeout_s = 2;
              }).find("above --timeout 2"),
              std::string::npos);
    EXPECT_NE(settings([](settings_request& r) { r.seed = "-1"; }).find("0..18446744073709551615"),
              std::string::npos);
    EXPECT_NE(settings([](settings_request& r) {
                  r.seed = "18446744073709551616";
              }).find("'18446744073709551616'"),
              std::string::npos);
    EXPECT_NE(settings([](settings_request& r) { r.threads = "0"; }).find("1..4096"),
              std::string::npos);
    EXPECT_NE(settings([](settings_request& r) { r.min_time_s = "nan"; }).find("(0, 86400]"),
              std::string::npos);
    EXPECT_NE(settings([](settings_request& r) { r.max_rel_stdev = "1"; }).find("(0, 1)"),
              std::string::npos);
    settings_request ok;
    ok.min_time_s = "0.25";
    ok.timeout_s = "2";
    ok.seed = "18446744073709551615";
    ok.threads = "2";
    const auto s = make_settings(ok, *dev);
    EXPECT_EQ(s.timing.stop.min_time_s, 0.25);
    EXPECT_EQ(s.timing.stop.timeout_s, 2.0);
    EXPECT_EQ(s.seed, 18446744073709551615ull);
    EXPECT_EQ(s.threads, 2);
    EXPECT_EQ(s.to_json()["threads"], 2);
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
