#include "fourfold/measure/correctness.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::measure;

namespace {

correctness_result compare(const at::Tensor& out, const at::Tensor& ref, dtype t = dtype::fp32) {
    error_accumulator acc(t, out.sizes().vec(), default_tolerance(t), rms_of_finite(out));
    acc.add(out, ref.to(at::kDouble), 0, 0);
    return acc.finish();
}

at::Tensor f64(const std::vector<double>& v) {
    return at::tensor(v, at::kDouble);
}
at::Tensor f32(const std::vector<float>& v) {
    return at::tensor(v, at::kFloat);
}

} // namespace

TEST(correctness, metrics_of_a_known_error_match_hand_computation) {
    const auto r = compare(f32({1, 2, 3, 4.4f}), f64({1, 2, 3, 4}));
    const auto& m = r.metrics;
    const double e = double(4.4f) - 4.0; // the fp32 value of 4.4, exactly
    EXPECT_NEAR(m["max_abs"].get<double>(), e, 1e-15);
    EXPECT_NEAR(m["rel_l2"].get<double>(), e / std::sqrt(30.0), 1e-12);
    EXPECT_NEAR(m["nmse"].get<double>(), e * e / 30.0, 1e-12);
    // PSNR: range of the reference 4 - 1 = 3, MSE = e^2 / 4
    EXPECT_NEAR(m["psnr_db"].get<double>(), 10 * std::log10(9.0 / (e * e / 4)), 1e-9);
    EXPECT_DOUBLE_EQ(m["psnr_range"].get<double>(), 3.0);
    const double o4 = double(4.4f);
    EXPECT_NEAR(m["cosine"].get<double>(), (1 + 4 + 9 + 4 * o4) / std::sqrt((14 + o4 * o4) * 30.0),
                1e-12);
    EXPECT_NEAR(m["max_rel"].get<double>(), e / 4.0, 1e-12);
    EXPECT_EQ(m["count"], 4);
    EXPECT_FALSE(r.pass); // 10 % off is far outside the fp32 policy
    ASSERT_FALSE(r.worst.empty());
    EXPECT_EQ(r.worst[0].index, std::vector<std::int64_t>{3});
    EXPECT_DOUBLE_EQ(r.worst[0].reference, 4.0);
}

TEST(correctness, psnr_of_a_known_noise_level) {
    // reference spans [0, 1]; every element off by 0.01: MSE 1e-4, PSNR = 10 log10(1 / 1e-4) = 40
    // dB
    const auto ref = at::linspace(0, 1, 1001, at::kDouble);
    const auto out = ref + 0.01;
    const auto r = compare(out, ref, dtype::fp64);
    EXPECT_NEAR(r.metrics["psnr_db"].get<double>(), 40.0, 1e-9);
}

TEST(correctness, ulp_distance_is_exact_across_a_binade_boundary) {
    const float two = 2.0f;
    const float below = std::nextafter(two, 0.0f);    // top of [1, 2): 1 ulp away
    const float below2 = std::nextafter(below, 0.0f); // 2 ulps away
    const float above = std::nextafter(two, 4.0f);    // bottom of [2, 4): 1 ulp (twice the size)
    const auto d = ulp_distance(f32({below, below2, above, two}), f64({2, 2, 2, 2}));
    EXPECT_EQ(d[0].item<double>(), 1);
    EXPECT_EQ(d[1].item<double>(), 2);
    EXPECT_EQ(d[2].item<double>(), 1);
    EXPECT_EQ(d[3].item<double>(), 0);
    // through zero: -denorm_min to +denorm_min is 2 ulps; -0 equals +0
    const float tiny = std::numeric_limits<float>::denorm_min();
    const auto z = ulp_distance(f32({tiny, -0.0f}), f64({-double(tiny), 0.0}));
    EXPECT_EQ(z[0].item<double>(), 2);
    EXPECT_EQ(z[1].item<double>(), 0);
    // bf16: 1.0078125 and 0.99609375 are each 1 ulp from 1.0, in binades of different spacing
    const auto b =
        ulp_distance(at::tensor({1.0078125f, 0.99609375f}).to(at::kBFloat16), f64({1, 1}));
    EXPECT_EQ(b[0].item<double>(), 1);
    EXPECT_EQ(b[1].item<double>(), 1);
}

TEST(correctness, all_equal_inputs_are_exact_and_use_the_magnitude_as_psnr_range) {
    const auto ref = at::full({64}, 1.0 / 64, at::kDouble);
    const auto exact = compare(ref.to(at::kFloat), ref);
    EXPECT_TRUE(exact.pass);
    EXPECT_TRUE(exact.metrics["psnr_exact"].get<bool>());
    EXPECT_TRUE(exact.metrics["psnr_db"].is_null()); // infinite, stored as null with the flag
    EXPECT_EQ(exact.metrics["rel_l2"].get<double>(), 0.0);
    EXPECT_EQ(exact.metrics["max_ulp"].get<double>(), 0.0);
    const auto off = compare((ref * 1.001).to(at::kFloat), ref);
    EXPECT_NE(off.metrics["psnr_range_kind"].get<std::string>().find("constant"),
              std::string::npos);
    EXPECT_NEAR(off.metrics["psnr_range"].get<double>(), 1.0 / 64, 1e-12);
}

TEST(correctness, nan_or_inf_where_the_reference_has_none_fails) {
    auto out = f32({1, 2, NAN, 4});
    const auto r = compare(out, f64({1, 2, 3, 4}));
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.metrics["nan"], 1);
    EXPECT_EQ(r.metrics["new_nonfinite"], 1);
    EXPECT_EQ(r.worst[0].index, std::vector<std::int64_t>{2});
    const auto inf = compare(f32({1, INFINITY}), f64({1, 2}));
    EXPECT_FALSE(inf.pass);
    EXPECT_EQ(inf.metrics["inf"], 1);
    // the same NaN in the reference is not a new one
    const auto both = compare(f32({1, NAN}), f64({1, NAN}));
    EXPECT_EQ(both.metrics["new_nonfinite"], 0);
    EXPECT_EQ(both.metrics["ref_nan"], 1);
}

TEST(correctness, bf16_rounding_fails_the_fp32_policy_and_passes_the_bf16_one) {
    const auto ref = at::randn({4096}, at::kDouble);
    const auto rounded = ref.to(at::kBFloat16).to(at::kFloat);
    EXPECT_FALSE(compare(rounded, ref, dtype::fp32).pass);
    EXPECT_TRUE(compare(ref.to(at::kBFloat16), ref, dtype::bf16).pass);
    EXPECT_TRUE(compare(ref.to(at::kFloat), ref, dtype::fp32).pass);
}

TEST(correctness, one_element_one_percent_off_fails) {
    // the damaged element is pinned mid-range: at::rand can draw a value near zero, where one
    // per cent of it sits inside the absolute floor (atol scales with the largest |ref|)
    auto ref = at::rand({128256}, at::kDouble);
    ref[777] = 0.5;
    auto out = ref.to(at::kFloat);
    out[777].mul_(1.01);
    const auto r = compare(out, ref);
    EXPECT_FALSE(r.pass);
    EXPECT_EQ(r.metrics["elementwise_violations"], 1);
    EXPECT_EQ(r.worst[0].index, std::vector<std::int64_t>{777});
}

TEST(correctness, chunked_reference_gives_the_unchunked_metrics) {
    const auto x = at::randn({64, 1000}, at::kFloat) * 2;
    const auto out = at::softmax(x, -1);
    auto metrics_with = [&](std::int64_t bytes_per_row) {
        const auto plan = workloads::chunked_reference(
            0, 64, bytes_per_row, "softmax", [&](std::int64_t s, std::int64_t n) {
                return at::softmax(x.narrow(0, s, n).to(at::kDouble), -1);
            });
        error_accumulator acc(dtype::fp32, out.sizes().vec(), default_tolerance(dtype::fp32),
                              rms_of_finite(out));
        for (std::int64_t i = 0; i < plan.chunks; ++i) {
            const auto c = plan.chunk(i);
            acc.add(out.narrow(0, c.start, c.values.size(0)), c.values, c.dim, c.start);
        }
        return std::pair{plan.chunks, acc.finish()};
    };
    const auto [one_chunk, whole] = metrics_with(8);
    const auto [many_chunks, parts] = metrics_with(k_reference_chunk_bytes / 5); // 5 rows a chunk
    EXPECT_EQ(one_chunk, 1);
    EXPECT_EQ(many_chunks, 13);
    for (const char* exact : {"max_abs", "max_ulp", "p99_ulp", "count", "max_rel"})
        EXPECT_EQ(whole.metrics[exact], parts.metrics[exact]) << exact;
    for (const char* close : {"rel_l2", "cosine", "psnr_db"})
        EXPECT_NEAR(whole.metrics[close].get<double>(), parts.metrics[close].get<double>(),
                    1e-9 * std::fabs(whole.metrics[close].get<double>()))
            << close;
    EXPECT_EQ(whole.worst[0].index, parts.worst[0].index);
    EXPECT_EQ(whole.pass, parts.pass);
}

TEST(correctness, default_tolerances_follow_the_documented_policy) {
    EXPECT_LT(default_tolerance(dtype::fp32).rel_l2, 1e-3);
    EXPECT_GE(default_tolerance(dtype::bf16).rel_l2, 1e-3);
    EXPECT_LE(default_tolerance(dtype::bf16).rel_l2, 1e-2);
    EXPECT_NE(default_tolerance(dtype::fp16).source.find("fp16"), std::string::npos);
}
