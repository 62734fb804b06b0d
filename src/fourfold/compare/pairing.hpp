#pragma once
// Which record of A is compared with which record of B. Two runs: by ledger + workload key
// (workload, variant, device, dtype, params); what is left, by ledger + case key + variant when
// exactly one record on each side remains, so that another device or dtype can be the treatment
// (the pair then names the job fields that differ). One run: every variant against a baseline
// variant of the same job. Whatever cannot be paired is listed with the reason, never dropped.
#include "fourfold/store/result_store.hpp"

#include <string>
#include <vector>

namespace fourfold::compare {

struct record_pair {
    store::stored_record a, b;
    bool by_case = false;               // the full keys differ (device and/or dtype)
    std::vector<std::string> job_diffs; // named differences of this pair: device, dtype, timing
};

struct unpaired_record {
    char side = 'A'; // 'A' or 'B'
    store::stored_record rec;
    std::string why;
};

struct pairing {
    std::vector<record_pair> pairs;
    std::vector<unpaired_record> unpaired;
    std::size_t by_key() const;
    std::size_t by_case() const;
};

pairing pair_runs(const std::vector<store::stored_record>& a,
                  const std::vector<store::stored_record>& b);
// A is the baseline variant, B each other variant of the same ledger, workload, params, device
// and dtype. Throws bad_input when no record of the run has the baseline variant.
pairing pair_variants(const std::vector<store::stored_record>& run,
                      const std::string& baseline_variant);

} // namespace fourfold::compare
