#include "fourfold/backend/device.hpp"
#include "fourfold/backend/provenance.hpp"
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/measure/timing.hpp"
#include "fourfold/report/ledger_tables.hpp"
#include "fourfold/report/progress_line.hpp"
#include "fourfold/report/speedup_summary.hpp"
#include "fourfold/runner/plan.hpp"
#include "fourfold/runner/runner.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/result_store.hpp"
#include "fourfold/suites/suite.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <fmt/format.h>
#include <iostream>
#include <set>
#include <sstream>
#include <sys/ioctl.h>
#include <unistd.h>

namespace fourfold::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) {
    g_interrupted = true;
}

// Writes each record to the store as it arrives and keeps it for the tables printed at the end.
class store_sink final : public runner::record_sink {
  public:
    store_sink(store::result_store& store, std::int64_t run) : m_store(store), m_run(run) {}
    void write(const record& rec) override {
        m_store.add_record(m_run, rec);
        records.push_back(rec);
    }
    std::vector<record> records;

  private:
    store::result_store& m_store;
    std::int64_t m_run;
};

// Seconds one job group takes at the least, from the settings: each variant's warm-up and
// minimum sampling time per timed ledger, and the memory pass's window. The progress line's
// estimate before a group has finished.
double group_budget_s(const runner::job_group& g, const runner::run_settings& s) {
    const auto ledgers = s.ledgers.intersect(g.w->ledgers);
    const auto& stop = s.timing.stop;
    double per_variant = 0;
    if (ledgers.has(ledger::op_time))
        per_variant += s.timing.warmup_s + stop.min_time_s;
    if (ledgers.has(ledger::throughput))
        per_variant += stop.min_time_s;
    if (ledgers.has(ledger::memory))
        per_variant += s.memory_min_window_s;
    return per_variant * static_cast<double>(g.variants.size());
}

// A live line on a terminal: job i of n, the pass, elapsed and an estimate. Silent otherwise.
class terminal_progress final : public runner::progress_listener {
  public:
    terminal_progress(bool enabled, const runner::plan& p)
        : m_enabled(enabled), m_plan(p), m_t0(std::chrono::steady_clock::now()) {}
    void group_started(std::size_t index, std::size_t total, const runner::job_group& g) override {
        m_index = index;
        m_total = total;
        m_title = g.title();
        m_group_start_s = seconds();
        draw("start");
    }
    void pass_started(std::string_view pass) override { draw(pass); }
    void finished() override {
        if (m_enabled)
            std::fprintf(stderr, "\r\033[K");
    }

  private:
    void draw(std::string_view pass) {
        if (!m_enabled)
            return;
        // before a group has finished there is no average to go by: the settings' budget of
        // the groups still to run stands in
        double budget_left = 0;
        for (std::size_t i = m_index; i < m_plan.groups.size(); ++i)
            budget_left += group_budget_s(m_plan.groups[i], m_plan.settings);
        const double elapsed = seconds();
        // a line longer than the terminal wraps, and '\r' would then redraw only its tail
        winsize ws{};
        const std::size_t width =
            ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col - 1 : 0;
        const auto line = report::progress_line(m_index, m_total, m_title, pass, elapsed,
                                                m_group_start_s, width, budget_left);
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        std::fflush(stderr);
    }
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
    }
    bool m_enabled;
    const runner::plan& m_plan;
    std::chrono::steady_clock::time_point m_t0;
    double m_group_start_s = 0;
    std::size_t m_index = 0, m_total = 0;
    std::string m_title;
};

runner::settings_request settings_request_of(const run_options& o, const backend::device& dev) {
    runner::settings_request r;
    r.ledgers = o.ledgers;
    r.timing = o.timing;
    r.cache = o.cache;
    r.min_time_s = o.min_time_s;
    r.timeout_s = o.timeout_s;
    r.max_rel_stdev = o.max_rel_stdev;
    r.warmup_s = o.warmup_s;
    r.min_samples = o.min_samples;
    r.seed = o.seed;
    r.threads = o.threads;
    if (o.suite)
        if (const auto* suite = suites::suite_registry::instance().find(*o.suite))
            r.suite_timeout_s = suite->timeout_for(dev);
    return r;
}

// Why a run that measured nothing measured nothing: its distinct skip reasons, the first few.
std::string nothing_measured(const std::vector<record>& records, std::int64_t run) {
    std::vector<std::string> reasons;
    for (const auto& r : records)
        if (std::find(reasons.begin(), reasons.end(), r.reason) == reasons.end())
            reasons.push_back(r.reason);
    const std::size_t shown = std::min<std::size_t>(reasons.size(), 2);
    std::vector<std::string> first(reasons.begin(), reasons.begin() + static_cast<long>(shown));
    return fmt::format("nothing was measured: all {} record(s) of run {} are skipped ({}{}); the "
                       "store holds them with their reasons",
                       records.size(), run, join(first, "; "),
                       reasons.size() > shown ? fmt::format("; {} more", reasons.size() - shown)
                                              : "");
}

// Installs the run's SIGINT handler and puts the previous one back however the scope ends.
class sigint_guard {
  public:
    sigint_guard() : m_previous(std::signal(SIGINT, on_sigint)) {}
    ~sigint_guard() { std::signal(SIGINT, m_previous); }
    sigint_guard(const sigint_guard&) = delete;
    sigint_guard& operator=(const sigint_guard&) = delete;

  private:
    void (*m_previous)(int);
};

} // namespace

std::string threads_help() {
    return fmt::format("CPU threads libtorch uses, 1..{} (default: libtorch's own choice, {} on "
                       "this machine); recorded in the provenance",
                       runner::k_max_threads, backend::cpu_threads());
}

int run_command(const run_options& o) {
    static const std::set<std::string> k_formats{"text", "md", "csv", "json"};
    if (!k_formats.count(o.format))
        throw bad_input(
            fmt::format("--format '{}' is unknown; valid: text, md, csv, json", o.format));
    // Everything that can be wrong with the request is found before the store is opened.
    if (!o.suite && !o.workload)
        throw bad_input("run needs --suite NAME or --workload NAME; see 'fourfold list'");
    if (o.suite && (!o.shapes.empty() || !o.params.empty()))
        throw bad_input("--shape and --param apply to --workload alone; a suite fixes its own "
                        "(--suite S --workload W keeps the suite's jobs of W)");
    if (o.suite && (!o.dtypes.empty() || !o.variants.empty()))
        throw bad_input("--dtype and --variants apply to --workload alone; a suite fixes its own "
                        "(--suite S --workload W keeps the suite's jobs of W)");
    store::check_label(o.label);
    // before the device opens: it counts the threads it computes on
    if (o.threads)
        backend::set_cpu_threads(runner::parse_threads(*o.threads));
    auto dev = backend::open_device(backend::device_spec::parse(o.device));
    const auto settings = runner::make_settings(settings_request_of(o, *dev), *dev);
    auto specs =
        o.suite ? suites::expand_suite(*o.suite, *dev)
                : runner::expand_request({*o.workload, o.shapes, o.params, o.dtypes, o.variants});
    if (o.suite && o.workload)
        specs = suites::jobs_of_workloads(specs, *o.suite, split(*o.workload, ','));
    const auto plan = runner::make_plan(specs, settings, *dev);
    auto store = store::result_store::open(o.db, store::open_mode::read_write);

    const auto bandwidth = dev->measure_copy_bandwidth();
    auto provenance = backend::collect_provenance(dev.get());
    provenance["settings"] = plan.settings.to_json();
    provenance["bandwidth"] = bandwidth.to_json();
    provenance["request"] = json{{"suite", o.suite.value_or("")},
                                 {"workload", o.workload.value_or("")},
                                 {"groups", plan.groups.size()},
                                 {"jobs", plan.job_count()},
                                 {"records", plan.record_count()}};
    // tells a run still being measured from one whose process died (store::state_of)
    provenance["pid"] = static_cast<std::int64_t>(getpid());
    const auto run_id = store.begin_run(o.label, dev->name(), o.command_line, provenance);

    store_sink sink(store, run_id);
    for (const auto& note : plan.notes)
        std::cerr << "fourfold: " << note << '\n';
    for (const auto& r : plan.skipped)
        sink.write(r);
    terminal_progress progress(!o.quiet && isatty(STDERR_FILENO), plan);
    runner::run_context ctx{*dev, bandwidth, sink, &progress, &g_interrupted};
    g_interrupted = false;
    runner::run_summary summary;
    {
        const sigint_guard guard; // Ctrl-C stops between passes while the run executes
        try {
            summary = runner::execute(plan, ctx);
        } catch (...) {
            store.finish_run(run_id, "failed");
            throw;
        }
    }
    store.finish_run(run_id, summary.interrupted ? "interrupted" : "complete");
    summary.skipped += plan.skipped.size();

    // csv and json print the records alone on stdout, as export does; the lines about the run
    // go to stderr
    const bool records_only = o.format == "csv" || o.format == "json";
    std::ostringstream text;
    if (records_only) {
        store::export_request request;
        request.runs = {std::to_string(run_id)};
        request.format = o.format == "csv" ? store::export_format::csv : store::export_format::json;
        store::export_store(store, request, text);
    } else {
        report::print_ledger_tables(sink.records, text,
                                    o.format == "md" ? report::table_format::markdown
                                                     : report::table_format::text);
        report::print_speedup_summaries(report::summarize_speedups(sink.records), text);
        // fourfold's own kernels against the library's path, where a run has both
        report::print_speedup_summaries(report::summarize_speedups(sink.records, "native", "stock"),
                                        text);
    }
    std::ostringstream about;
    about << fmt::format("device {} ({}); copy bandwidth {:.1f} GB/s ({}); {} CPU thread(s)\n",
                         dev->name(), dev->fingerprint().value("name", std::string("?")),
                         bandwidth.bytes_per_s / 1e9, bandwidth.method, backend::cpu_threads());
    about << fmt::format("records: {} ok, {} skipped, {} failed; correctness FAIL: {}\n",
                         summary.ok, summary.skipped, summary.failed, summary.correctness_fail);
    for (const auto& r : sink.records)
        if (r.which == ledger::correctness && r.figures.value("verdict", "") == "FAIL")
            about << "  reproduce: " << r.figures.value("repro", "") << '\n';
    about << fmt::format("store: {} (run {}{}){}\n", store.path(), run_id,
                         o.label.empty() ? "" : ", label '" + o.label + "'",
                         summary.interrupted
                             ? fmt::format("; interrupted after {} of {} job groups",
                                           summary.groups_done, plan.groups.size())
                             : "");
    write_output("", records_only ? text.str() : text.str() + about.str());
    if (records_only)
        std::cerr << about.str();
    const int code = summary.exit_code();
    if (code == 0 && summary.ok == 0) {
        std::cerr << "fourfold: " << nothing_measured(sink.records, run_id) << '\n';
        return static_cast<int>(exit_code::nothing_measured);
    }
    return code;
}

} // namespace fourfold::cli
