// The host half of RMSNorm: a block a row, the row spread over at most 1024 threads.
#include "fourfold/kernels/rmsnorm.hpp"

#include <algorithm>

namespace fourfold::kernels {

std::string rmsnorm_plan::describe() const {
    return std::to_string(blocks) + " block(s) of " + std::to_string(threads) + ", " +
           std::to_string(per_thread) + " element(s)/thread kept in registers, fp32 sums" +
           (dependent_launch ? ", dependent launch" : "");
}

rmsnorm_plan plan_rmsnorm(const rmsnorm_args& a, const device_limits& d) {
    rmsnorm_plan p;
    if (a.rows < 1 || a.cols < 1) {
        p.valid = "rows and cols must be at least 1";
        return p;
    }
    if (a.rows > (std::int64_t{1} << 31) - 1) {
        p.valid = "rows must be below 2^31";
        return p;
    }
    const std::int64_t max_cols = std::int64_t{1024} * k_rmsnorm_max_per_thread;
    if (a.cols > max_cols) {
        p.valid = "cols = " + std::to_string(a.cols) + " exceeds " + std::to_string(max_cols) +
                  " (1024 threads x " + std::to_string(k_rmsnorm_max_per_thread) +
                  " elements in registers)";
        return p;
    }
    if (!(a.eps >= 0)) {
        p.valid = "eps must be >= 0";
        return p;
    }
    if (a.index && a.gather_rows < 1) {
        p.valid = "a gathered norm needs gather_rows >= 1";
        return p;
    }
    // As few elements a thread as keep the block at 1024 threads or fewer, then the threads
    // rounded to whole warps: 4096 columns = 512 threads of 8 (two 16-byte rows a warp-load).
    int per = 1;
    while (static_cast<std::int64_t>(per) * 1024 < a.cols)
        per *= 2;
    per = std::max(per, a.cols >= 4096 ? 8 : 1);
    per = std::min(per, k_rmsnorm_max_per_thread);
    const std::int64_t threads = (a.cols + per - 1) / per;
    p.per_thread = per;
    p.threads = static_cast<int>(std::min<std::int64_t>(1024, (threads + 31) / 32 * 32));
    p.blocks = a.rows;
    p.dependent_launch = dependent_launch(d);
    return p;
}

} // namespace fourfold::kernels
