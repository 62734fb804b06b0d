#pragma once
// Geometric-mean speed-up of one variant over another, within ONE run (cross-run comparison is
// `fourfold compare`). For every case - workload, parameters, dtype and device - that has an ok
// op_time record of both variants, speed-up = median(baseline) / median(variant); the geometric
// mean is taken over those pairs, which all share that one baseline variant of this run.
//
// Split rule: a case is "small" when its declared bytes moved per call are below the device's
// last-level cache (the `cache_bytes` every op_time record carries: L2 on CUDA) and
// "bandwidth-bound" otherwise. Small layers pay launch and latency costs a better kernel can
// remove; bandwidth-bound ones can gain little once they run near the copy bandwidth.
#include "fourfold/core/record.hpp"

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace fourfold::report {

struct speedup_stat {
    std::string label;
    std::size_t pairs = 0;
    double geomean = 0; // 0 when there are no pairs
    double min = 0, max = 0;
};

struct speedup_summary {
    std::string workload, device, dtype;
    std::string variant, baseline;
    double split_bytes = 0; // the last-level cache the split uses (0: unknown, no split)
    speedup_stat all, small, large;
    std::vector<speedup_stat> facets; // per value of each boolean parameter that varies
    std::vector<std::string> notes;   // records not converged, timing modes that differ
};

// One summary per (workload, device, dtype) that has at least one pair.
std::vector<speedup_summary> summarize_speedups(const std::vector<record>& records,
                                                const std::string& variant = "stock",
                                                const std::string& baseline = "generic");

void print_speedup_summaries(const std::vector<speedup_summary>& summaries, std::ostream& out);

} // namespace fourfold::report
