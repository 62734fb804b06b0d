#pragma once
// PSNR of a VAE's output against its float64 reference, over the images' data range [-1, 1]
// (peak-to-peak 2), with a floor the job must reach: the figure E6 reports (10.06 dB with the
// broken pad, 29.95 dB fixed), beside the shared metrics (relative L2, max abs, ULPs).
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::workloads::models {

class vae_psnr_metrics final : public extra_metrics {
  public:
    explicit vae_psnr_metrics(double floor_db, std::string why)
        : m_floor(floor_db), m_why(std::move(why)) {}

    void add(const at::Tensor& out, const at::Tensor& ref, std::int64_t, std::int64_t) override {
        const auto d = out.to(at::kDouble) - ref;
        m_sq += (d * d).sum().item<double>();
        m_count += d.numel();
        m_max = std::max(m_max, d.abs().max().item<double>());
    }

    result finish() override {
        result r;
        const double mse = m_count > 0 ? m_sq / static_cast<double>(m_count) : 0;
        const double psnr = mse > 0 ? 10.0 * std::log10(4.0 / mse) : INFINITY;
        r.metrics = json{{"image_psnr_db", std::isfinite(psnr) ? json(psnr) : json(nullptr)},
                         {"image_psnr_exact", mse == 0},
                         {"image_psnr_basis", "10 log10(2^2 / MSE): pixels in [-1, 1]"},
                         {"image_psnr_floor_db", m_floor},
                         {"image_psnr_floor_why", m_why},
                         {"image_max_abs_error", m_max}};
        if (!(psnr >= m_floor))
            r.failed_checks.push_back(fmt::format(
                "PSNR {:.2f} dB < {:.1f} dB against the float64 reference", psnr, m_floor));
        return r;
    }

  private:
    double m_floor;
    std::string m_why;
    double m_sq = 0, m_max = 0;
    std::int64_t m_count = 0;
};

} // namespace fourfold::workloads::models
