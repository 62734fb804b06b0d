#pragma once
// `fourfold compare`: A against B, ledger by ledger, each in its own unit. A is the baseline:
// a run (two runs), or one variant of a run (`--baseline-variant`). First the treatment (what
// differs); a difference nobody declared refuses the whole comparison. Ratios are B/A against
// that one baseline; geometric means are taken per workload and variant over pairs of that one
// baseline, and nothing is ever multiplied across baselines.
#include "fourfold/compare/pairing.hpp"
#include "fourfold/compare/provenance_diff.hpp"
#include "fourfold/compare/two_sample.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/store/result_store.hpp"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fourfold::compare {

inline constexpr double k_default_threshold = 0.02;

struct compare_options {
    double threshold = k_default_threshold; // practical threshold of the verdicts, as a fraction
    std::set<std::string> allowed;          // --allow-diff names
    std::string baseline_variant;           // one run: the variant the others are compared to
};

// "2%", "2 %" or "0.02" -> 0.02. Throws bad_input naming the value and the valid forms.
double parse_threshold(const std::string& text);
// Splits "device,dtype" lists, checks every name. Throws bad_input listing the valid names.
std::set<std::string> parse_allowed(const std::vector<std::string>& values);

// A and B differ beyond the declared treatment. A bad_input (exit 2): the message names every
// difference and the --allow-diff that would accept it.
class refused : public bad_input {
  public:
    refused(const std::string& message, std::vector<std::string> missing)
        : bad_input(message), m_missing(std::move(missing)) {}
    const std::vector<std::string>& missing() const { return m_missing; }

  private:
    std::vector<std::string> m_missing;
};

// The identity of a pair for tables: what A and B ran.
struct pair_id {
    ledger which = ledger::op_time;
    job_id a, b;
    bool by_case = false;
    std::vector<std::string> job_diffs;
    std::string variant_text() const; // "stock" or "stock -> native"
    std::string dtype_text() const;   // "bf16" or "fp32 -> bf16"
    std::string device_text() const;  // "cuda:0" or "cpu -> cuda:0"
    json to_json() const;
};

// op_time (µs per call, lower is better) and throughput (tokens/s, higher is better).
struct timed_row {
    pair_id id;
    std::string unit;   // "µs", or the throughput's own unit ("tokens/s", "frames/s")
    double a_value = 0; // median µs per call, or tokens/s
    double b_value = 0;
    std::int64_t n_a = 0, n_b = 0;
    ratio_estimate ratio;    // B/A of `unit`: time ratio for op_time, rate ratio for throughput
    std::optional<u_test> u; // absent without raw samples
    double noise_a = 0, noise_b = 0; // relative_noise of the samples (the verdict must clear it)
    // the host round trip measured beside A's and B's timings (mean of before and after, µs),
    // where both records carry it
    std::optional<double> round_trip_a, round_trip_b;
    verdict decision = verdict::unclear;
    std::string mode;                 // op_time: "graph/cold"; throughput: the decode mode
    std::string ctx;                  // throughput: the context (its value on `context_axis`)
    std::string context_axis = "ctx"; // throughput: the job parameter the context is
    std::string note;
    json to_json() const;
};

struct correctness_row {
    pair_id id;
    std::string verdict_a, verdict_b;
    std::string transition; // "PASS", "FAIL", "PASS->FAIL", "FAIL->PASS"
    json metrics_a, metrics_b;
    bool regression() const { return transition == "PASS->FAIL"; }
    json to_json() const;
};

struct memory_level {
    std::string level; // driver, reserved, allocated, outside
    std::optional<double> a_bytes, b_bytes;
    std::string why_a, why_b; // why a figure is unavailable
    std::optional<double> delta_bytes() const;
};

struct memory_row {
    pair_id id;
    std::vector<memory_level> levels;
    json to_json() const;
};

// A pair where A or B was skipped or failed: reported as such, never as a figure.
struct not_compared_row {
    pair_id id;
    record_status a = record_status::ok, b = record_status::ok;
    std::string reason_a, reason_b;
    json to_json() const;
};

struct unpaired_row {
    char side = 'A';
    ledger which = ledger::op_time;
    job_id job;
    record_status status = record_status::ok;
    std::string why;
    json to_json() const;
};

// A geometric mean of B/A ratios over the pairs of one workload and one variant (pair), all
// against the one baseline of the comparison.
struct geomean_row {
    ledger which = ledger::op_time;
    std::string workload, variant; // variant: "native" or "stock -> native"
    std::size_t n = 0;
    double value = 0;
    json to_json() const;
};

// What each run measured of the machine beside its jobs, not a treatment: the copy bandwidth
// (run provenance) and the host round trip (median over the run's timed records). When one
// moved between A and B by more than the threshold the machine changed, and a time bound by it
// may show the machine, not the change.
struct environment_row {
    std::string what, unit, how;
    std::optional<double> a, b;
    std::string if_moved;                 // what a move means for the verdicts
    std::optional<double> change() const; // b / a - 1
    bool moved(double threshold) const;
    json to_json(double threshold) const;
};

struct treatment {
    provenance_diff provenance;                                     // two runs only
    std::map<std::string, std::size_t> job_diffs;                   // name -> number of pairs
    std::map<std::string, std::set<std::string>> job_diff_examples; // name -> "fp32 -> bf16"
    std::set<std::string> declared;                                 // --allow-diff names given
    std::set<std::string> declared_but_equal;
    // One run only: differences that come with the variant, no declaration needed. A variant
    // that cannot be captured in a graph (it syncs with the host) is timed in event mode
    // beside graph-timed ones; its rows name both modes.
    std::set<std::string> with_variant;
    std::set<std::string> names() const; // every named difference
};

struct comparison {
    store::run_row a, b; // b == a in one-run mode
    bool one_run = false;
    compare_options options;
    treatment what;
    std::size_t pairs_by_key = 0, pairs_by_case = 0;
    std::vector<timed_row> op_time, throughput;
    std::vector<correctness_row> correctness;
    std::vector<memory_row> memory;
    std::vector<not_compared_row> not_compared;
    std::vector<unpaired_row> unpaired;
    std::vector<geomean_row> geomeans;
    std::vector<environment_row> environment; // two runs only

    // "run 3 'before'" or "variant 'stock' of run 3 'before'"
    std::string baseline_text() const;
    std::string treated_text() const;
    bool has_regression() const; // any SLOWER or PASS->FAIL
    std::size_t count(ledger l, verdict v) const;
    json to_json() const;
};

// "run 3 'label' (cpu, 2026-11-29T...)": how a run is named in every output.
std::string run_text(const store::run_row& r);

// Throws refused when A and B differ beyond options.allowed.
comparison compare_runs(const store::run_row& a, const std::vector<store::stored_record>& ra,
                        const store::run_row& b, const std::vector<store::stored_record>& rb,
                        const compare_options& options);
comparison compare_variants(const store::run_row& run,
                            const std::vector<store::stored_record>& records,
                            const compare_options& options);
// `fourfold compare A [B]`: one run needs options.baseline_variant; two runs must not have one.
comparison compare_in_store(const store::result_store& store, const std::vector<std::string>& runs,
                            const compare_options& options);

} // namespace fourfold::compare
