#pragma once
// Correctness against a float64 CPU reference, one shared comparison routine for every workload
// (as llama.cpp's test-backend-ops does). The reference arrives in chunks (a slice of the output
// along one dimension each), so neither side ever needs more than a bounded amount of memory;
// the metrics accumulate across chunks.
#include "fourfold/core/dtype.hpp"
#include "fourfold/core/json.hpp"

#include <ATen/Tensor.h>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace fourfold::measure {

// Bytes of float64 working set a reference chunk may use (inputs + output of one chunk).
inline constexpr std::int64_t k_reference_chunk_bytes = 256ll << 20;

// The tolerance policy (docs/correctness.md): a result PASSes when
//   - it has no NaN or Inf where the reference has none,
//   - its relative L2 error ||out - ref|| / ||ref|| <= rel_l2, and
//   - every element satisfies |out - ref| <= atol + rtol * |ref|, atol = atol_scale * scale,
//     scale being the RMS of the finite output values (so atol follows the data's magnitude).
struct tolerance {
    double rel_l2 = 1e-4;
    double rtol = 1e-3;
    double atol_scale = 1e-3;
    std::string source; // "default for fp32 outputs", "softmax: ...", ...
    json to_json() const;
};

// The default policy for an output dtype.
tolerance default_tolerance(dtype out);

struct mismatch {
    std::vector<std::int64_t> index;
    double value = 0;
    double reference = 0;
    double abs_error = 0;
    double excess = 0; // abs_error / (atol + rtol * |ref|); > 1 violates the elementwise bound
};

struct correctness_result {
    bool pass = false;
    std::vector<std::string> failed_checks;
    json metrics;
    std::vector<mismatch> worst;
    json to_json() const;
};

// max rel error uses a floor so that near-zero references do not dominate:
//   max_rel = max |out - ref| / max(|ref|, rel_floor),  rel_floor = 1e-3 * scale.
inline constexpr double k_rel_floor_of_scale = 1e-3;

class error_accumulator {
  public:
    // `output_shape`: the whole output; `scale`: RMS of its finite values (see rms_of_finite).
    error_accumulator(dtype out_dtype, std::vector<std::int64_t> output_shape, tolerance tol,
                      double scale, int keep_worst = 5);

    // `out`: a CPU slice of the output (any floating dtype); `ref`: the float64 reference for
    // the same slice, which starts at `start` along dimension `dim` of the whole output.
    void add(const at::Tensor& out, const at::Tensor& ref, std::int64_t dim, std::int64_t start);

    correctness_result finish() const;

  private:
    void note_worst(const at::Tensor& excess, const at::Tensor& out, const at::Tensor& ref,
                    std::int64_t dim, std::int64_t start);
    void add_ulps(const at::Tensor& out, const at::Tensor& ref, const at::Tensor& both_finite);

    dtype m_dtype;
    std::vector<std::int64_t> m_shape;
    tolerance m_tol;
    double m_scale;
    int m_keep;

    std::int64_t m_count = 0, m_nan = 0, m_inf = 0, m_ref_nan = 0, m_ref_inf = 0;
    std::int64_t m_new_nonfinite = 0, m_violations = 0;
    double m_sum_sq_err = 0, m_sum_sq_ref = 0, m_sum_sq_out = 0, m_dot = 0;
    double m_max_abs = 0, m_max_rel = 0;
    double m_ref_min = 0, m_ref_max = 0;
    bool m_ref_seen = false;
    double m_max_ulp = 0;
    // ULP histogram: exact counts for 0..1023, then one bin per power of two
    std::array<std::int64_t, 1024 + 64> m_ulp_hist{};
    std::vector<mismatch> m_worst;
};

// RMS of the finite values of a tensor (0 when none are finite).
double rms_of_finite(const at::Tensor& t);

// Distance in units in the last place between each element of `out` and the reference rounded
// to `out`'s dtype, both finite; returned as float64. The integer order of IEEE bit patterns
// makes this exact across binade boundaries.
at::Tensor ulp_distance(const at::Tensor& out, const at::Tensor& ref_f64);

} // namespace fourfold::measure
