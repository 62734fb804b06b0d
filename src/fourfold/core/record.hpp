#pragma once
// A record: one ledger's figures for one job of one run. It cannot hold two ledgers' figures:
// `figures` belongs to `which` alone, and the store files it in that ledger's table.
#include "fourfold/core/json.hpp"
#include "fourfold/core/ledger.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace fourfold {

// What was run: workload + parameters + variant + device + dtype (DESIGN.md "job").
struct job_id {
    std::string workload;
    std::string variant;
    std::string device; // resolved name: "cpu", "cuda:0", "mps"
    std::string dtype;
    json params = json::object();
    std::uint64_t seed = 0; // seed of the job's inputs; the same for every variant of a case

    json to_json() const; // canonical identity, without the seed
    // Hash of the full identity: the workload key of DESIGN.md.
    std::string key() const;
    // Hash of workload + params only: what compare pairs on before checking the rest.
    std::string case_key() const;
    // "rows=1 vocab=128256" for tables.
    std::string params_text() const;
};

struct record {
    ledger which = ledger::op_time;
    job_id job;
    record_status status = record_status::ok;
    std::string reason; // why skipped or failed; empty when ok
    std::string unit;   // unit of the headline figure, fixed per ledger (unit_of)
    json figures = json::object();
    std::vector<double> samples; // raw samples (op_time: us per call; throughput: ms per token)
    std::string samples_unit;    // unit of `samples`; empty means `unit`

    static record make(ledger l, job_id job);
    static record skipped(ledger l, job_id job, std::string reason);
    static record failed(ledger l, job_id job, std::string reason);
};

} // namespace fourfold
