// The host half of SwiGLU: vector width and a grid of one packet a thread (at most 8 blocks a
// multiprocessor, grid-stride beyond).
#include "fourfold/kernels/swiglu.hpp"

#include <algorithm>

namespace fourfold::kernels {

std::string swiglu_plan::describe() const {
    std::string s = std::to_string(blocks) + " block(s) of " + std::to_string(threads) + ", " +
                    (vec > 1 ? std::to_string(vec) + "-element packets" : std::string("scalar"));
    if (dependent_launch)
        s += ", dependent launch";
    if (!why_scalar.empty())
        s += " (scalar: " + why_scalar + ")";
    return s;
}

swiglu_plan plan_swiglu(const swiglu_args& a, const device_limits& d) {
    swiglu_plan p;
    if (a.tokens < 1 || a.width < 1) {
        p.valid = "tokens and width must be at least 1";
        return p;
    }
    if (a.ld_in < 2 * a.width || a.ld_out < a.width) {
        p.valid = "a row stride is shorter than its row";
        return p;
    }
    const auto es = static_cast<std::int64_t>(elem_bytes(a.type));
    const auto vw = 16 / es;
    if (alignment_of(a.gate_up) < 16 || alignment_of(a.out) < 16)
        p.why_scalar = "a pointer is not 16-byte aligned";
    else if (a.width % vw != 0 || a.ld_in % vw != 0 || a.ld_out % vw != 0)
        p.why_scalar = "width or a row stride is not a multiple of " + std::to_string(vw);
    p.vec = p.why_scalar.empty() ? static_cast<int>(vw) : 1;
    const std::int64_t units = a.tokens * ((a.width + p.vec - 1) / p.vec);
    p.blocks = std::clamp<std::int64_t>((units + p.threads - 1) / p.threads, 1,
                                        std::max(1, 8 * d.sm_count));
    p.dependent_launch = dependent_launch(d);
    return p;
}

} // namespace fourfold::kernels
