#pragma once
// From a request (a suite's job list, or the CLI's --workload with sweep lists) to a validated
// plan of job groups. Everything a run needs is checked here, before the store is touched:
// a bad value is a bad_input naming it and what would be valid.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/dtype.hpp"
#include "fourfold/core/json.hpp"
#include "fourfold/core/ledger.hpp"
#include "fourfold/core/record.hpp"
#include "fourfold/measure/timing.hpp"
#include "fourfold/runner/plan_grammar.hpp"
#include "fourfold/runner/settings_request.hpp"
#include "fourfold/workloads/workload.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fourfold::runner {

inline constexpr std::uint64_t k_default_seed = 20261129;

// One case to run, as a suite or the CLI states it; unnamed parameters take their defaults.
struct job_spec {
    std::string workload;
    json params = json::object();
    dtype type = dtype::fp32;
    std::vector<std::string> variants; // empty: every variant the workload offers
    std::string note;                  // e.g. "reduced for the CPU from 1x128256"
};

struct run_settings {
    ledger_set ledgers = ledger_set::of({ledger::op_time, ledger::correctness, ledger::memory});
    measure::timing_settings timing;
    std::uint64_t seed = k_default_seed;
    double memory_min_window_s = 0.05; // the memory pass repeats the call at least this long
    int threads = 0;                   // CPU threads libtorch uses; 0: its default
    json to_json() const;
};

// settings_request (settings_request.hpp): the settings a user gave, as text. The device's
// defaults, the suite's budget, then the user's values; throws bad_input for a
// value out of range or settings that contradict each other (--min-time above --timeout).
run_settings make_settings(const settings_request& request, const backend::device& dev);

// All variants of one case: they share inputs (one seed) and are timed interleaved.
struct job_group {
    const workloads::workload* w = nullptr;
    workloads::case_args args;
    std::unique_ptr<workloads::workload_case> c;
    std::vector<std::string> variants;
    std::string note;
    std::uint64_t seed = 0;
    // Measure only these of the run's ledgers (a resumed run's missing ones); empty: all.
    std::optional<ledger_set> only_ledgers;
    job_id job(const std::string& variant, const std::string& device) const;
    std::string title() const; // "softmax rows=1 vocab=128256 fp32"
};

struct plan {
    std::vector<job_group> groups;
    run_settings settings;
    // Records of jobs this device cannot take (a case larger than its memory): skipped with
    // the reason, stored like the runner's, never run.
    std::vector<record> skipped;
    // What the plan left out and why (a suite's workload that measures none of --ledgers).
    std::vector<std::string> notes;
    std::size_t job_count() const;
    // Records the run will store: a record per variant and ledger each job group measures,
    // and the skipped ones.
    std::size_t record_count() const;
};

// The CLI's --workload form: lists and ranges expand as a Cartesian product.
struct workload_request {
    std::string workload;
    std::vector<std::string> shapes;   // "1x128256", each may hold a comma list
    std::vector<std::string> params;   // "rows=1,8,64", "tokens=1..8", "bias=true,false"
    std::vector<std::string> dtypes;   // "fp32", "fp32,bf16"
    std::vector<std::string> variants; // "stock,generic"
};

std::vector<job_spec> expand_request(const workload_request& request);
// A workload's parameters as the request grammar (plan_grammar.hpp) checks them.
request_grammar grammar_of(const workloads::workload& w);
// Fills defaults, checks every value against the workload and the device, builds the cases.
// A value no device could take is a bad_input; a case this device cannot hold is a skipped
// record (plan::skipped).
plan make_plan(const std::vector<job_spec>& specs, const run_settings& settings,
               const backend::device& dev);

} // namespace fourfold::runner
