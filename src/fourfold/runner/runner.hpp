#pragma once
// Executes a plan: for each job group, the correctness pass (which also proves each variant
// runs), the timing pass (variants interleaved), then the memory pass (sampler on), each
// writing its records to the sink the moment they exist.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/json.hpp"
#include "fourfold/core/record.hpp"
#include "fourfold/runner/plan.hpp"

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::runner {

class record_sink {
  public:
    virtual ~record_sink() = default;
    virtual void write(const record& rec) = 0;
};

// Collects records in memory (tests, and the tables printed after a run).
class memory_sink final : public record_sink {
  public:
    void write(const record& rec) override { records.push_back(rec); }
    std::vector<record> records;
};

class progress_listener {
  public:
    virtual ~progress_listener() = default;
    virtual void group_started(std::size_t index, std::size_t total, const job_group& group) {}
    virtual void pass_started(std::string_view pass) {}
    // The variant a pass runs now (empty in the timing pass: its variants interleave). An
    // isolated job's process sends it to the parent, which names it in a crash's record.
    virtual void variant_started(std::string_view pass, const std::string& variant) {}
    // What the memory pass has seen so far of `variant` (its baseline, then the level after
    // each call): kept by the parent in the failed record of a process that dies mid-pass.
    virtual void memory_seen(const std::string& variant, const json& seen) {}
    virtual void finished() {}
};

struct run_context {
    backend::device& dev;
    backend::bandwidth_figure bandwidth; // the run's measured ceiling, for % of bandwidth
    record_sink& sink;
    progress_listener* progress = nullptr;
    const std::atomic<bool>* interrupted = nullptr; // set by a signal handler
    std::string repro_prefix = "fourfold run";      // how the printed repro commands begin
};

struct run_summary {
    std::size_t groups_done = 0;
    std::size_t ok = 0, skipped = 0, failed = 0;
    std::size_t correctness_fail = 0;
    bool interrupted = false;
    int exit_code() const; // DESIGN.md: 0 ok/skipped, 1 correctness FAIL, 3 failed, 130 interrupted
};

run_summary execute(const plan& p, run_context& ctx);

// A device whose context a failure left unusable (CUDA's sticky errors: an illegal address, a
// misaligned access): every later call on it fails, so the job group stops here. Isolated, the
// job's process reports it and a fresh process takes the next group; in-process, the run ends.
class sticky_device_error : public device_error {
  public:
    sticky_device_error(std::string variant, const std::string& what)
        : device_error(what), m_variant(std::move(variant)) {}
    const std::string& variant() const { return m_variant; }

  private:
    std::string m_variant;
};

// The command that reruns one job's correctness pass with the same inputs.
std::string repro_command(const job_group& g, const std::string& variant, const std::string& device,
                          std::uint64_t base_seed, const std::string& prefix);

} // namespace fourfold::runner
