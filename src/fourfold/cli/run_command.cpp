#include "fourfold/backend/device.hpp"
#include "fourfold/backend/provenance.hpp"
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/measure/timing.hpp"
#include "fourfold/report/ledger_tables.hpp"
#include "fourfold/report/speedup_summary.hpp"
#include "fourfold/report/progress_line.hpp"
#include "fourfold/runner/plan.hpp"
#include "fourfold/runner/runner.hpp"
#include "fourfold/store/result_store.hpp"
#include "fourfold/suites/suite.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <fmt/format.h>
#include <iostream>
#include <sys/ioctl.h>
#include <unistd.h>

namespace fourfold::cli {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted = true; }

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

// A live line on a terminal: job i of n, the pass, elapsed and an estimate. Silent otherwise.
class terminal_progress final : public runner::progress_listener {
public:
    explicit terminal_progress(bool enabled) : m_enabled(enabled), m_t0(std::chrono::steady_clock::now()) {}
    void group_started(std::size_t index, std::size_t total, const runner::job_group& g) override {
        m_index = index;
        m_total = total;
        m_title = g.title();
        m_group_start_s = seconds();
        draw("start");
    }
    void pass_started(std::string_view pass) override { draw(pass); }
    void finished() override {
        if (m_enabled) std::fprintf(stderr, "\r\033[K");
    }

private:
    void draw(std::string_view pass) {
        if (!m_enabled) return;
        const double elapsed = seconds();
        // a line longer than the terminal wraps, and '\r' would then redraw only its tail
        winsize ws{};
        const std::size_t width =
            ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col - 1 : 0;
        const auto line =
            report::progress_line(m_index, m_total, m_title, pass, elapsed, m_group_start_s, width);
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        std::fflush(stderr);
    }
    double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count();
    }
    bool m_enabled;
    std::chrono::steady_clock::time_point m_t0;
    double m_group_start_s = 0;
    std::size_t m_index = 0, m_total = 0;
    std::string m_title;
};

runner::run_settings settings_from(const run_options& o, const backend::device& dev) {
    runner::run_settings s;
    s.ledgers = runner::parse_ledgers(o.ledgers);
    s.timing = measure::timing_settings::defaults_for(dev.caps());
    if (o.suite)
        if (const auto* suite = suites::suite_registry::instance().find(*o.suite);
            suite && suite->timeout_for(dev) > 0)
            s.timing.stop.timeout_s = suite->timeout_for(dev);
    if (o.timing) {
        const auto m = measure::parse_timing_mode(*o.timing);
        if (!m) throw bad_input(fmt::format("--timing '{}' is unknown; valid: host, event, batch, graph", *o.timing));
        s.timing.mode = *m;
        // an explicit mode without --cache gets the cache state that mode means by default
        if (!o.cache) s.timing.cache = *m == measure::timing_mode::event || *m == measure::timing_mode::graph
                                           ? (dev.caps().cache_flush || *m == measure::timing_mode::graph
                                                  ? measure::cache_mode::cold : measure::cache_mode::hot)
                                           : measure::cache_mode::hot;
    }
    if (o.cache) {
        const auto c = measure::parse_cache_mode(*o.cache);
        if (!c) throw bad_input(fmt::format("--cache '{}' is unknown; valid: hot, cold", *o.cache));
        s.timing.cache = *c;
    }
    auto positive = [](const char* name, double v) {
        if (!(v > 0) || v > 86400)
            throw bad_input(fmt::format("{} {} is out of range; give seconds in (0, 86400]", name, v));
        return v;
    };
    if (o.min_time_s) s.timing.stop.min_time_s = positive("--min-time", *o.min_time_s);
    if (o.timeout_s) s.timing.stop.timeout_s = positive("--timeout", *o.timeout_s);
    if (o.warmup_s) s.timing.warmup_s = positive("--warmup", *o.warmup_s);
    if (o.max_rel_stdev) {
        if (!(*o.max_rel_stdev > 0) || *o.max_rel_stdev >= 1)
            throw bad_input(fmt::format("--max-rel-stdev {} is out of range; valid: (0, 1)", *o.max_rel_stdev));
        s.timing.stop.max_rel_stdev = *o.max_rel_stdev;
    }
    if (o.min_samples) {
        if (*o.min_samples < 1 || *o.min_samples > 1000000)
            throw bad_input(fmt::format("--min-samples {} is out of range; valid: 1..1000000", *o.min_samples));
        s.timing.stop.min_samples = *o.min_samples;
    }
    if (o.seed_given) s.seed = o.seed;
    return s;
}

} // namespace

int run_command(const run_options& o) {
    if (o.format != "text" && o.format != "md")
        throw bad_input(fmt::format("--format '{}' is unknown; valid: text, md", o.format));
    // Everything that can be wrong with the request is found before the store is opened.
    auto dev = backend::open_device(backend::device_spec::parse(o.device));
    const auto settings = settings_from(o, *dev);
    std::vector<runner::job_spec> specs;
    if (o.suite) {
        specs = suites::expand_suite(*o.suite, *dev);
        if (!o.dtypes.empty() || !o.variants.empty() || !o.shapes.empty() || !o.params.empty())
            throw bad_input("--dtype, --variants, --shape and --param apply to --workload alone; a "
                            "suite fixes its own (--suite with --workload W keeps the suite's jobs of W)");
        if (o.workload) specs = suites::jobs_of_workloads(specs, *o.suite, split(*o.workload, ','));
    } else {
        specs = runner::expand_request({*o.workload, o.shapes, o.params, o.dtypes, o.variants});
    }
    const auto plan = runner::make_plan(specs, settings, *dev);
    auto store = store::result_store::open(o.db, store::open_mode::read_write);

    const auto bandwidth = dev->measure_copy_bandwidth();
    auto provenance = backend::collect_provenance(dev.get());
    provenance["settings"] = settings.to_json();
    provenance["bandwidth"] = bandwidth.to_json();
    provenance["request"] = json{{"suite", o.suite.value_or("")},
                                 {"workload", o.workload.value_or("")},
                                 {"groups", plan.groups.size()},
                                 {"jobs", plan.job_count()}};
    // tells a run still being measured from one whose process died (store::state_of)
    provenance["pid"] = static_cast<std::int64_t>(getpid());
    const auto run_id = store.begin_run(o.label, dev->name(), o.command_line, provenance);

    store_sink sink(store, run_id);
    terminal_progress progress(!o.quiet && isatty(STDERR_FILENO));
    runner::run_context ctx{*dev, bandwidth, sink, &progress, &g_interrupted};
    g_interrupted = false;
    const auto previous = std::signal(SIGINT, on_sigint);
    runner::run_summary summary;
    try {
        summary = runner::execute(plan, ctx);
    } catch (...) {
        std::signal(SIGINT, previous);
        store.finish_run(run_id, "failed");
        throw;
    }
    std::signal(SIGINT, previous);
    store.finish_run(run_id, summary.interrupted ? "interrupted" : "complete");

    report::print_ledger_tables(sink.records, std::cout,
                                o.format == "md" ? report::table_format::markdown
                                                 : report::table_format::text);
    report::print_speedup_summaries(report::summarize_speedups(sink.records), std::cout);
    // fourfold's own kernels against the library's path, where a run has both
    report::print_speedup_summaries(report::summarize_speedups(sink.records, "native", "stock"),
                                    std::cout);
    std::cout << fmt::format("device {} ({}); copy bandwidth {:.1f} GB/s ({})\n", dev->name(),
                             dev->fingerprint().value("name", std::string("?")),
                             bandwidth.bytes_per_s / 1e9, bandwidth.method);
    std::cout << fmt::format("records: {} ok, {} skipped, {} failed; correctness FAIL: {}\n",
                             summary.ok, summary.skipped, summary.failed, summary.correctness_fail);
    for (const auto& r : sink.records)
        if (r.which == ledger::correctness && r.figures.value("verdict", "") == "FAIL")
            std::cout << "  reproduce: " << r.figures.value("repro", "") << '\n';
    std::cout << fmt::format("store: {} (run {}{}){}\n", store.path(), run_id,
                             o.label.empty() ? "" : ", label '" + o.label + "'",
                             summary.interrupted ? fmt::format("; interrupted after {} of {} job groups",
                                                               summary.groups_done, plan.groups.size())
                                                 : "");
    return summary.exit_code();
}

} // namespace fourfold::cli
