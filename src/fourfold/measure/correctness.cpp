#include "fourfold/measure/correctness.hpp"

#include "fourfold/backend/dtype_map.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::measure {
namespace {

json finite_or_null(double v) {
    return std::isfinite(v) ? json(v) : json(nullptr);
}

at::ScalarType int_type_of_width(std::int64_t bytes) {
    switch (bytes) {
    case 1:
        return at::kChar;
    case 2:
        return at::kShort;
    case 4:
        return at::kInt;
    default:
        return at::kLong;
    }
}

// Sign-magnitude IEEE bits -> integers that order like the floats (+0 and -0 both 0).
at::Tensor ordered_bits(const at::Tensor& t) {
    const auto width = static_cast<std::int64_t>(t.element_size());
    const auto bits = t.contiguous().view(int_type_of_width(width)).to(at::kLong);
    const std::int64_t mask = width == 8 ? INT64_MAX : (std::int64_t{1} << (8 * width - 1)) - 1;
    const auto magnitude = at::bitwise_and(bits, mask);
    return at::where(bits.lt(0), magnitude.neg(), magnitude);
}

int ulp_bin(double u) {
    if (u < 1024)
        return static_cast<int>(u);
    const int b = 1024 + static_cast<int>(std::floor(std::log2(u))) - 10;
    return std::min(b, 1024 + 63);
}

double ulp_bin_floor(int bin) {
    return bin < 1024 ? bin : std::ldexp(1.0, bin - 1024 + 10);
}

} // namespace

json tolerance::to_json() const {
    return json{{"rel_l2", rel_l2}, {"rtol", rtol}, {"atol_scale", atol_scale}, {"source", source}};
}

tolerance default_tolerance(dtype out) {
    const auto name = fmt::format("default for {} outputs", to_string(out));
    switch (out) {
    case dtype::fp64:
        return {1e-10, 1e-9, 1e-9, name};
    case dtype::fp32:
        return {1e-4, 1e-4, 1e-4, name};
    case dtype::bf16:
        return {1e-2, 1.6e-2, 1.6e-2, name};
    case dtype::fp16:
        return {2e-3, 2e-3, 2e-3, name};
    case dtype::fp8_e4m3fn:
        return {0.1, 0.125, 0.125, name};
    case dtype::fp8_e5m2:
        return {0.2, 0.25, 0.25, name};
    }
    return {1e-4, 1e-4, 1e-4, name};
}

json correctness_result::to_json() const {
    json w = json::array();
    for (const auto& m : worst)
        w.push_back(json{{"index", m.index},
                         {"value", finite_or_null(m.value)},
                         {"value_text", fmt::format("{}", m.value)},
                         {"reference", finite_or_null(m.reference)},
                         {"abs_error", finite_or_null(m.abs_error)},
                         {"excess", finite_or_null(m.excess)}});
    return json{{"verdict", pass ? "PASS" : "FAIL"},
                {"failed_checks", failed_checks},
                {"metrics", metrics},
                {"worst", w}};
}

double rms_of_finite(const at::Tensor& t) {
    const auto d = t.to(at::kDouble);
    const auto finite = at::isfinite(d);
    const auto n = finite.sum().item<std::int64_t>();
    if (n == 0)
        return 0;
    const auto sq = at::where(finite, d * d, at::zeros_like(d)).sum().item<double>();
    return std::sqrt(sq / static_cast<double>(n));
}

at::Tensor ulp_distance(const at::Tensor& out, const at::Tensor& ref_f64) {
    const auto rounded = ref_f64.to(out.scalar_type());
    return (ordered_bits(out) - ordered_bits(rounded)).abs().to(at::kDouble);
}

error_accumulator::error_accumulator(dtype out_dtype, std::vector<std::int64_t> output_shape,
                                     tolerance tol, double scale, int keep_worst)
    : m_dtype(out_dtype), m_shape(std::move(output_shape)), m_tol(std::move(tol)), m_scale(scale),
      m_keep(keep_worst) {}

void error_accumulator::add(const at::Tensor& out_slice, const at::Tensor& ref_slice,
                            std::int64_t dim, std::int64_t start) {
    const auto out = out_slice.contiguous();
    const auto o = out.to(at::kDouble);
    const auto r = ref_slice.to(at::kDouble).contiguous();
    TORCH_CHECK(o.sizes() == r.sizes(), "output slice ", o.sizes(), " and reference slice ",
                r.sizes(), " differ in shape");
    m_count += o.numel();
    const auto o_nan = o.isnan(), r_nan = r.isnan();
    const auto o_inf = o.isinf(), r_inf = r.isinf();
    m_nan += o_nan.sum().item<std::int64_t>();
    m_inf += o_inf.sum().item<std::int64_t>();
    m_ref_nan += r_nan.sum().item<std::int64_t>();
    m_ref_inf += r_inf.sum().item<std::int64_t>();
    const auto o_bad = at::logical_or(o_nan, o_inf);
    const auto r_bad = at::logical_or(r_nan, r_inf);
    m_new_nonfinite += at::logical_and(o_bad, r_bad.logical_not()).sum().item<std::int64_t>();

    const auto both = at::logical_and(o_bad.logical_not(), r_bad.logical_not());
    const auto zero = at::zeros_like(o);
    const auto of = at::where(both, o, zero);
    const auto rf = at::where(both, r, zero);
    const auto err = of - rf;
    const auto abs_err = err.abs();
    const auto abs_ref = rf.abs();
    m_sum_sq_err += (err * err).sum().item<double>();
    m_sum_sq_ref += (rf * rf).sum().item<double>();
    m_sum_sq_out += (of * of).sum().item<double>();
    m_dot += (of * rf).sum().item<double>();
    if (o.numel() > 0) {
        m_max_abs = std::max(m_max_abs, abs_err.max().item<double>());
        const double floor = std::max(k_rel_floor_of_scale * m_scale, 1e-300);
        m_max_rel = std::max(m_max_rel, (abs_err / abs_ref.clamp_min(floor)).max().item<double>());
        if (both.any().item<bool>()) {
            const auto finite_ref = r.masked_select(both);
            const double lo = finite_ref.min().item<double>();
            const double hi = finite_ref.max().item<double>();
            m_ref_min = m_ref_seen ? std::min(m_ref_min, lo) : lo;
            m_ref_max = m_ref_seen ? std::max(m_ref_max, hi) : hi;
            m_ref_seen = true;
        }
    }
    const double atol = m_tol.atol_scale * m_scale;
    auto excess = abs_err / (abs_ref * m_tol.rtol + atol).clamp_min(1e-300);
    // a NaN or Inf the reference does not have is the worst mismatch there is
    excess = at::where(at::logical_and(o_bad, r_bad.logical_not()), at::full_like(excess, INFINITY),
                       excess);
    m_violations += excess.gt(1.0).sum().item<std::int64_t>();
    note_worst(excess, o, r, dim, start);
    add_ulps(out, r, both);
}

void error_accumulator::add_ulps(const at::Tensor& out, const at::Tensor& ref,
                                 const at::Tensor& both_finite) {
    if (out.numel() == 0 || !out.is_floating_point())
        return;
    const auto ulps = ulp_distance(out, ref).masked_select(both_finite.view(out.sizes()));
    if (ulps.numel() == 0)
        return;
    m_max_ulp = std::max(m_max_ulp, ulps.max().item<double>());
    const auto small = ulps.masked_select(ulps.lt(1024)).to(at::kLong);
    if (small.numel() > 0) {
        const auto counts = at::bincount(small, {}, 1024);
        const auto* c = counts.data_ptr<std::int64_t>();
        for (int i = 0; i < 1024; ++i)
            m_ulp_hist[static_cast<std::size_t>(i)] += c[i];
    }
    const auto large = ulps.masked_select(ulps.ge(1024));
    if (large.numel() > 0) {
        const auto* p = large.contiguous().data_ptr<double>();
        for (std::int64_t i = 0; i < large.numel(); ++i)
            ++m_ulp_hist[static_cast<std::size_t>(ulp_bin(p[i]))];
    }
}

void error_accumulator::note_worst(const at::Tensor& excess, const at::Tensor& out,
                                   const at::Tensor& ref, std::int64_t dim, std::int64_t start) {
    const auto flat = excess.reshape({-1});
    if (flat.numel() == 0)
        return;
    const auto k = std::min<std::int64_t>(m_keep, flat.numel());
    const auto top = flat.topk(k);
    const auto values = std::get<0>(top);
    const auto indices = std::get<1>(top);
    const auto o = out.reshape({-1});
    const auto r = ref.reshape({-1});
    const auto sizes = out.sizes().vec();
    for (std::int64_t i = 0; i < k; ++i) {
        const auto flat_index = indices[i].item<std::int64_t>();
        mismatch m;
        m.excess = values[i].item<double>();
        m.value = o[flat_index].item<double>();
        m.reference = r[flat_index].item<double>();
        m.abs_error = std::fabs(m.value - m.reference);
        // unravel within the slice, then shift along the sliced dimension
        m.index.assign(sizes.size(), 0);
        auto rest = flat_index;
        for (std::size_t d = sizes.size(); d-- > 0;) {
            m.index[d] = rest % sizes[d];
            rest /= sizes[d];
        }
        if (!m.index.empty())
            m.index[static_cast<std::size_t>(dim)] += start;
        m_worst.push_back(std::move(m));
    }
    std::sort(m_worst.begin(), m_worst.end(), [](const mismatch& a, const mismatch& b) {
        return a.excess > b.excess || (std::isnan(b.excess) && !std::isnan(a.excess));
    });
    if (m_worst.size() > static_cast<std::size_t>(m_keep))
        m_worst.resize(static_cast<std::size_t>(m_keep));
}

correctness_result error_accumulator::finish() const {
    correctness_result res;
    const double finite = static_cast<double>(m_count - m_nan - m_inf);
    const double rel_l2 = m_sum_sq_ref > 0    ? std::sqrt(m_sum_sq_err / m_sum_sq_ref)
                          : m_sum_sq_err == 0 ? 0.0
                                              : INFINITY;
    const double nmse = rel_l2 * rel_l2;
    const double mse = finite > 0 ? m_sum_sq_err / finite : 0.0;
    // PSNR's peak is the reference's data range; a constant reference has none, so its largest
    // magnitude stands in (stated in the record).
    double range = m_ref_max - m_ref_min;
    std::string range_kind = "max(ref) - min(ref)";
    if (range <= 0) {
        range = std::max(std::fabs(m_ref_max), std::fabs(m_ref_min));
        range_kind = "max |ref| (the reference is constant)";
    }
    const bool exact = m_sum_sq_err == 0;
    const double psnr = exact || range <= 0 ? INFINITY : 10.0 * std::log10(range * range / mse);
    const double denom = std::sqrt(m_sum_sq_out) * std::sqrt(m_sum_sq_ref);
    const double cosine = denom > 0 ? m_dot / denom : (m_sum_sq_out == m_sum_sq_ref ? 1.0 : 0.0);
    // p99 of the ULP histogram
    std::int64_t total = 0;
    for (const auto c : m_ulp_hist)
        total += c;
    double p99 = 0;
    if (total > 0) {
        const auto target = static_cast<std::int64_t>(std::ceil(0.99 * static_cast<double>(total)));
        std::int64_t seen = 0;
        for (std::size_t b = 0; b < m_ulp_hist.size(); ++b) {
            seen += m_ulp_hist[b];
            if (seen >= target) {
                p99 = ulp_bin_floor(static_cast<int>(b));
                break;
            }
        }
    }
    res.metrics = json{{"count", m_count},
                       {"nan", m_nan},
                       {"inf", m_inf},
                       {"ref_nan", m_ref_nan},
                       {"ref_inf", m_ref_inf},
                       {"new_nonfinite", m_new_nonfinite},
                       {"max_abs", m_max_abs},
                       {"max_rel", finite_or_null(m_max_rel)},
                       {"rel_floor", k_rel_floor_of_scale * m_scale},
                       {"rel_l2", finite_or_null(rel_l2)},
                       {"nmse", finite_or_null(nmse)},
                       {"psnr_db", finite_or_null(psnr)},
                       {"psnr_exact", exact},
                       {"psnr_range", range},
                       {"psnr_range_kind", range_kind},
                       {"cosine", cosine},
                       {"max_ulp", m_max_ulp},
                       {"p99_ulp", p99},
                       {"ulp_dtype_note", "ULPs in the output dtype, against the reference "
                                          "rounded to it; p99 exact below 1024, else the "
                                          "power-of-two bin floor"},
                       {"elementwise_violations", m_violations},
                       {"scale_rms", m_scale}};
    if (m_new_nonfinite > 0)
        res.failed_checks.push_back(
            fmt::format("{} NaN/Inf values where the reference is finite", m_new_nonfinite));
    if (!(rel_l2 <= m_tol.rel_l2))
        res.failed_checks.push_back(
            fmt::format("relative L2 error {:.3g} > {:.3g}", rel_l2, m_tol.rel_l2));
    if (m_violations > 0)
        res.failed_checks.push_back(
            fmt::format("{} of {} elements outside |out - ref| <= {:.3g} + {:.3g} |ref|",
                        m_violations, m_count, m_tol.atol_scale * m_scale, m_tol.rtol));
    res.pass = res.failed_checks.empty();
    res.worst = m_worst;
    return res;
}

} // namespace fourfold::measure
