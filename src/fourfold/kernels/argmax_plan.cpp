// The host half of argmax: blocks of 256 threads, 8 elements a thread a round, at most two
// blocks a multiprocessor.
#include "fourfold/kernels/argmax.hpp"

#include <algorithm>

namespace fourfold::kernels {

std::string argmax_plan::describe() const {
    return std::to_string(blocks) + " block(s) of " + std::to_string(threads) +
           ", last block merges (one launch)" + (dependent_launch ? ", dependent launch" : "");
}

argmax_plan plan_argmax(const argmax_args& a, const device_limits& d) {
    argmax_plan p;
    if (a.n < 1 || a.n > (std::int64_t{1} << 31) - 1) {
        p.valid = "n must be in 1..2^31-1";
        return p;
    }
    if (!a.tokens) {
        p.valid = "the token buffer is required";
        return p;
    }
    const std::int64_t per_block = std::int64_t{p.threads} * 8;
    p.blocks =
        std::clamp<std::int64_t>((a.n + per_block - 1) / per_block, 1, std::max(1, 2 * d.sm_count));
    // counter (16 bytes, keeping the pairs aligned), then a float and an int32 per block
    p.workspace_bytes = 16 + p.blocks * 8;
    p.dependent_launch = dependent_launch(d);
    return p;
}

} // namespace fourfold::kernels
