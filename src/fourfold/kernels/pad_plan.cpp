// The host half of the constant pad: checks, vector width, grid.
#include "fourfold/kernels/pad.hpp"

#include <algorithm>

namespace fourfold::kernels {

std::string pad_plan::describe() const {
    std::string s = std::to_string(vec) + " element(s)/thread";
    s += vec > 1 ? " (16-byte stores)" : "";
    s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
    if (!contiguous_rows) s += ", strided input rows";
    if (!why_scalar.empty()) s += " (scalar: " + why_scalar + ")";
    return s;
}

pad_plan plan_pad(const pad_args& a, const device_limits& d) {
    pad_plan p;
    if (a.dims < 1 || a.dims > k_pad_max_dims) {
        p.valid = "1 to 5 dimensions";
        return p;
    }
    std::int64_t total = 1;
    for (int i = 0; i < a.dims; ++i) {
        if (a.in_shape[i] < 1) {
            p.valid = "every input dimension must be at least 1";
            return p;
        }
        if (a.before[i] < 0 || a.after[i] < 0) {
            p.valid = "pads must be non-negative (no cropping)";
            return p;
        }
        total *= a.in_shape[i] + a.before[i] + a.after[i];
        if (total >= (std::int64_t{1} << 31)) {
            p.valid = "the output must have fewer than 2^31 elements";
            return p;
        }
    }
    p.out_elements = total;
    p.contiguous_rows = a.in_stride[a.dims - 1] == 1;
    const auto es = static_cast<std::int64_t>(elem_bytes(a.type));
    if (alignment_of(a.y) < 16) p.why_scalar = "the output is not 16-byte aligned";
    else if (alignment_of(a.x) < static_cast<int>(es)) p.why_scalar = "the input is not element-aligned";
    p.vec = p.why_scalar.empty() ? static_cast<int>(16 / es) : 1;
    const std::int64_t chunks = (total + p.vec - 1) / p.vec;
    p.blocks = std::max<std::int64_t>(1, std::min<std::int64_t>((chunks + p.threads - 1) / p.threads,
                                                                 std::int64_t{d.sm_count} * 64));
    return p;
}

} // namespace fourfold::kernels
