#include "fourfold/runner/runner.hpp"

#include "fourfold/backend/memory_probe.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/figures.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/measure/correctness.hpp"
#include "fourfold/measure/memory_figures.hpp"
#include "fourfold/measure/memory_sampler.hpp"
#include "fourfold/measure/timing.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <c10/util/Exception.h>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <torch/version.h>

namespace fourfold::runner {
namespace {

using clock_type = std::chrono::steady_clock;

// The host round trip measured before and after a job's timings, as its record carries it.
fourfold::round_trip_figure round_trip_of(double before_us, double after_us) {
    return {before_us, after_us, measure::k_round_trip_reps};
}

// Why a call could not run: `unsupported` for what this build/device lacks (fourfold's own
// unsupported_here, thrown where the cause is known: a skip with its reason), otherwise a
// failure. What a libtorch op lacks for a dtype is found before the call, by the variant's
// declared ops (backend/op_support.hpp), never by reading an error's text.
struct call_failure {
    bool unsupported = false;
    std::string reason;
};

call_failure classify(const std::exception& e) {
    if (dynamic_cast<const unsupported_here*>(&e))
        return {true, first_line(e.what())};
    if (const auto* ce = dynamic_cast<const c10::Error*>(&e))
        return {false, first_line(ce->what_without_backtrace())};
    return {false, first_line(e.what())};
}

// The rotation for a cold cache in batch/graph mode: enough copies of the inputs that the bytes
// a call touches exceed, over all copies, three times the last-level cache, bounded by a quarter
// of device memory. A call may touch less than its inputs hold (an MoE step reads only the
// experts its tokens reach), and only what it touches can stay cached between replays.
int rotation_sets(const measure::timing_settings& t, const backend::capabilities& caps,
                  std::int64_t set_bytes, std::int64_t touched_bytes) {
    if (t.cache != measure::cache_mode::cold)
        return 1;
    if (t.mode != measure::timing_mode::batch && t.mode != measure::timing_mode::graph)
        return 1;
    if (set_bytes <= 0)
        return 1;
    touched_bytes = std::clamp<std::int64_t>(touched_bytes, 1, set_bytes);
    const auto want = (3 * caps.cache_bytes + touched_bytes - 1) / touched_bytes;
    const auto room = std::max<std::int64_t>(1, caps.memory_bytes / 4 / set_bytes);
    // each set is read at least once per sample, so the count also bounds calls per sample
    const auto most = std::min<std::int64_t>(room, t.max_calls_per_sample);
    return static_cast<int>(std::clamp<std::int64_t>(want, 1, most));
}

// Workload calls made so far by this process (every group, every variant): the first call of a
// job is its one-time work's only chance to show (library autotuning such as cudnn.benchmark's
// algorithm search, lazy module loading, workspaces kept for later calls) only if it is also the
// process's first call of that kind, which the memory record says.
std::int64_t g_calls_in_process = 0;

// The memory levels around one call (a variant's first, in the correctness pass, when the job
// measures memory): the baseline before it, the peaks and the sampled timeline during it.
class call_watch {
  public:
    explicit call_watch(backend::device& dev)
        : m_dev(dev), m_probe(dev.memory()), m_sampler(m_probe, m_probe.target_poll_hz()) {
        m_dev.synchronize();
        m_baseline = m_probe.now();
        m_probe.reset_peaks();
        m_sampler.start();
    }
    json finish(std::int64_t calls_before, std::int64_t inputs_bytes) {
        m_dev.synchronize();
        const auto last = m_probe.now();
        const auto report = m_sampler.stop();
        measure::memory_reading reading{m_probe.driver_level(),
                                        m_probe.device_wide(),
                                        m_probe.unavailable(),
                                        m_baseline,
                                        last,
                                        m_probe.counter_peaks(),
                                        report,
                                        1,
                                        inputs_bytes};
        auto f = measure::memory_figures(reading);
        f["calls_before_in_process"] = calls_before;
        f["what"] = "the variant's first call (the correctness pass's), watched from just before "
                    "it: one-time work shows here, not in the steady-state peaks, where no call "
                    "before it in this process (calls_before_in_process) did that work already";
        return f;
    }

  private:
    backend::device& m_dev;
    backend::memory_probe& m_probe;
    measure::memory_sampler m_sampler;
    backend::memory_sample m_baseline;
};

json sample_json(const backend::memory_sample& s) {
    auto level = [](const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); };
    return json{{"driver_bytes", level(s.driver)},
                {"reserved_bytes", level(s.reserved)},
                {"allocated_bytes", level(s.allocated)}};
}

class group_runner {
  public:
    group_runner(const plan& p, run_context& ctx, const job_group& g, run_summary& summary)
        : m_plan(p), m_ctx(ctx), m_g(g), m_summary(summary), m_ledgers(p.settings.ledgers) {}

    void run() {
        auto& dev = m_ctx.dev;
        m_ledgers = m_ledgers.intersect(m_g.w->ledgers);
        if (m_g.only_ledgers)
            m_ledgers = m_ledgers.intersect(*m_g.only_ledgers);
        std::vector<std::string> runnable;
        for (const auto& v : m_g.variants) {
            if (const auto why = m_g.w->unavailable(v, *m_g.c, dev)) {
                skip_all(v, *why);
                continue;
            }
            runnable.push_back(v);
        }
        if (runnable.empty())
            return;
        workloads::input_set cpu_inputs, dev_inputs;
        if (!guarded(runnable, std::nullopt, "inputs", [&] {
                cpu_inputs = m_g.c->make_inputs(m_g.seed);
                dev_inputs = cpu_inputs.to(dev.torch_device());
                m_ctx.dev.synchronize();
            }))
            return;
        // Correctness first: it also proves each variant runs at all.
        runnable = correctness_pass(runnable, cpu_inputs, dev_inputs);
        if (interrupted() || runnable.empty())
            return;
        if (m_ledgers.has(ledger::op_time)) {
            progress("op_time");
            running("");
            timing_pass(runnable, dev_inputs);
        }
        if (interrupted())
            return;
        if (m_ledgers.has(ledger::throughput)) {
            progress("throughput");
            for (const auto& v : runnable) {
                running(v);
                throughput_pass(v, dev_inputs);
                if (interrupted())
                    return;
            }
        }
        if (interrupted())
            return;
        if (m_ledgers.has(ledger::memory)) {
            progress("memory");
            for (const auto& v : runnable) {
                running(v);
                memory_pass(v, dev_inputs);
                if (interrupted())
                    return;
            }
        }
    }

  private:
    bool interrupted() const { return m_ctx.interrupted && m_ctx.interrupted->load(); }
    void progress(std::string_view pass) {
        m_pass = std::string(pass);
        if (m_ctx.progress)
            m_ctx.progress->pass_started(pass);
    }
    void running(const std::string& variant) {
        if (m_ctx.progress)
            m_ctx.progress->variant_started(m_pass, variant);
    }

    // After a failure on a CUDA device: a context that fails even to synchronise is broken for
    // good (a sticky error); nothing more can run in it.
    void check_device(const std::vector<std::string>& variants, const std::string& reason) {
        if (m_ctx.dev.spec().kind != backend::device_kind::cuda)
            return;
        try {
            m_ctx.dev.synchronize();
        } catch (const std::exception& e) {
            throw sticky_device_error(variants.size() == 1 ? variants.front() : std::string(),
                                      fmt::format("{} (the device's context is unusable after "
                                                  "it: a sticky error)",
                                                  reason));
        }
    }

    void emit(record r) {
        if (!m_g.note.empty())
            r.figures["job_note"] = m_g.note; // e.g. "reduced for the CPU"
        if (r.status == record_status::ok) {
            auto facts = m_g.c->variant_facts(r.job.variant);
            // what the variant's call said of itself (a kernel's configuration)
            if (const auto it = m_call_facts.find(r.job.variant); it != m_call_facts.end())
                for (auto f = it->second.begin(); f != it->second.end(); ++f)
                    facts[f.key()] = f.value();
            if (!facts.empty())
                r.figures["facts"] = std::move(facts);
        }
        m_ctx.sink.write(r);
        switch (r.status) {
        case record_status::ok:
            ++m_summary.ok;
            break;
        case record_status::skipped:
            ++m_summary.skipped;
            break;
        case record_status::failed:
            ++m_summary.failed;
            break;
        }
        if (r.which == ledger::correctness && r.status == record_status::ok &&
            r.figures.value("verdict", "") == "FAIL")
            ++m_summary.correctness_fail;
    }

    job_id id(const std::string& variant) const { return m_g.job(variant, m_ctx.dev.name()); }

    // Runs `body`; what it throws becomes, for each of `variants`, a skipped record (fourfold's
    // unsupported_here) or a failed one, on `only` or, without it, on every ledger of the run;
    // `what` names the step in the reason. bad_input is the request's, not the job's: it
    // passes through and stops the run. True when `body` returned.
    template <class Body>
    bool guarded(const std::vector<std::string>& variants, std::optional<ledger> only,
                 const std::string& what, Body&& body) {
        try {
            body();
            return true;
        } catch (const bad_input&) {
            throw;
        } catch (const sticky_device_error&) {
            throw;
        } catch (const std::exception& e) {
            const auto f = classify(e);
            const auto reason = what.empty() ? f.reason : what + ": " + f.reason;
            check_device(variants, reason);
            for (const auto& v : variants) {
                if (!only)
                    f.unsupported ? skip_all(v, reason) : fail_all(v, reason);
                else
                    emit(f.unsupported ? record::skipped(*only, id(v), reason)
                                       : record::failed(*only, id(v), reason));
            }
            return false;
        }
    }

    void skip_all(const std::string& variant, const std::string& reason) {
        for (const auto l : m_ledgers.list())
            emit(record::skipped(l, id(variant), reason));
    }
    void fail_all(const std::string& variant, const std::string& reason) {
        for (const auto l : m_ledgers.list())
            emit(record::failed(l, id(variant), reason));
    }

    // Runs each variant once; returns those that ran. Fills the correctness ledger if asked.
    std::vector<std::string> correctness_pass(const std::vector<std::string>& variants,
                                              const workloads::input_set& cpu_inputs,
                                              const workloads::input_set& dev_inputs) {
        const bool check = m_ledgers.has(ledger::correctness);
        if (check)
            progress("correctness");
        std::vector<std::string> ran;
        std::map<std::string, at::Tensor> outputs;
        for (const auto& v : variants) {
            running(v);
            const bool ok = guarded({v}, std::nullopt, "", [&] {
                json said = json::object();
                const workloads::call_context call(m_ctx.dev, &said);
                std::optional<call_watch> watch;
                if (m_ledgers.has(ledger::memory))
                    watch.emplace(m_ctx.dev);
                const auto before = g_calls_in_process++;
                auto out = m_g.w->run(v, *m_g.c, call, dev_inputs);
                m_call_facts[v] = std::move(said);
                m_ctx.dev.synchronize();
                if (watch)
                    m_first_call[v] = watch->finish(before, dev_inputs.bytes());
                if (check)
                    outputs[v] = out.to(at::kCPU);
            });
            if (ok)
                ran.push_back(v);
        }
        if (!check || ran.empty())
            return ran;
        compare_to_reference(outputs, cpu_inputs);
        return ran;
    }

    void compare_to_reference(const std::map<std::string, at::Tensor>& outputs,
                              const workloads::input_set& cpu_inputs) {
        std::map<std::string, measure::tolerance> tol;
        std::map<std::string, measure::error_accumulator> acc;
        std::map<std::string, std::unique_ptr<workloads::extra_metrics>> extra;
        for (const auto& [v, out] : outputs) {
            tol.emplace(v, m_g.c->variant_tolerance(v));
            acc.emplace(v, measure::error_accumulator(m_g.c->output_dtype(), out.sizes().vec(),
                                                      tol.at(v), measure::rms_of_finite(out)));
            if (auto e = m_g.c->make_variant_metrics(v, cpu_inputs))
                extra.emplace(v, std::move(e));
        }
        workloads::reference_plan ref;
        std::vector<std::string> compared;
        compared.reserve(outputs.size());
        for (const auto& [v, out] : outputs)
            compared.push_back(v);
        if (!guarded(compared, ledger::correctness, "reference", [&] {
                ref = m_g.c->reference(cpu_inputs);
                for (std::int64_t i = 0; i < ref.chunks; ++i) {
                    const auto chunk = ref.chunk(i);
                    const auto length = chunk.values.size(chunk.dim);
                    for (auto& [v, a] : acc)
                        a.add(outputs.at(v).narrow(chunk.dim, chunk.start, length), chunk.values,
                              chunk.dim, chunk.start);
                    for (auto& [v, e] : extra)
                        e->add(outputs.at(v).narrow(chunk.dim, chunk.start, length), chunk.values,
                               chunk.dim, chunk.start);
                }
            }))
            return;
        for (const auto& [v, a] : acc) {
            auto result = a.finish();
            if (const auto it = extra.find(v); it != extra.end()) {
                auto more = it->second->finish();
                for (auto m = more.metrics.begin(); m != more.metrics.end(); ++m)
                    result.metrics[m.key()] = m.value();
                for (auto& check : more.failed_checks)
                    result.failed_checks.push_back(std::move(check));
                if (!more.failed_checks.empty())
                    result.pass = false;
            }
            auto r = record::make(ledger::correctness, id(v));
            r.figures = result.to_json();
            r.figures["tolerance"] = tol.at(v).to_json();
            r.figures["reference"] = json{{"dtype", "fp64"},
                                          {"device", "cpu"},
                                          {"method", ref.method},
                                          {"chunks", ref.chunks},
                                          {"chunk_bytes_bound", ref.chunk_bytes_bound}};
            r.figures["output_dtype"] = std::string(to_string(m_g.c->output_dtype()));
            r.figures["repro"] =
                repro_command(m_g, v, m_ctx.dev.name(), m_plan.settings.seed, m_ctx.repro_prefix);
            emit(r);
        }
    }

    void timing_pass(const std::vector<std::string>& variants,
                     const workloads::input_set& dev_inputs) {
        const auto& t = m_plan.settings.timing;
        // what one call reads of its inputs: the declared traffic (of the variant that reads
        // least, so that every variant's reads rotate out of the cache), at most the inputs
        double least_read = static_cast<double>(dev_inputs.bytes());
        for (const auto& v : variants)
            least_read = std::min(least_read, m_g.c->variant_cost(v).bytes_read);
        const auto touched = static_cast<std::int64_t>(least_read);
        const int sets = rotation_sets(t, m_ctx.dev.caps(), dev_inputs.bytes(), touched);
        std::vector<workloads::input_set> rotation{dev_inputs};
        std::vector<measure::timing_candidate> candidates;
        guarded(variants, ledger::op_time, "", [&] {
            for (int s = 1; s < sets; ++s)
                rotation.push_back(dev_inputs.clone());
            for (const auto& v : variants) {
                const auto* spec = m_g.w->find_variant(v);
                measure::timing_candidate c;
                c.name = v;
                c.input_sets = sets;
                c.capturable = !spec->host_sync;
                if (spec->host_sync)
                    c.not_capturable_reason = "the variant synchronises with the host";
                c.call = [this, v, &rotation](int set) {
                    const workloads::call_context call(m_ctx.dev);
                    (void)m_g.w->run(v, *m_g.c, call, rotation[static_cast<std::size_t>(set)]);
                };
                candidates.push_back(std::move(c));
            }
            const double round_trip_before = measure::host_round_trip_us(m_ctx.dev);
            const auto results = measure::measure_interleaved(m_ctx.dev, candidates, t);
            const auto round_trip =
                round_trip_of(round_trip_before, measure::host_round_trip_us(m_ctx.dev));
            for (const auto& res : results) {
                const auto cost = m_g.c->variant_cost(res.name);
                auto r = record::make(ledger::op_time, id(res.name));
                r.figures = res.to_json();
                auto o = op_time_figures::from(r.figures); // mode, cache, stop, stats
                const double median_s = res.stats.median * 1e-6;
                o.bytes_moved = cost.bytes();
                o.flops = cost.flops;
                o.gb_per_s = median_s > 0 ? cost.bytes() / median_s / 1e9 : 0;
                o.tflop_per_s = median_s > 0 ? cost.flops / median_s / 1e12 : 0;
                o.bandwidth_ceiling_gb_per_s = m_ctx.bandwidth.bytes_per_s / 1e9;
                o.pct_of_bandwidth = m_ctx.bandwidth.bytes_per_s > 0
                                         ? 100.0 * o.gb_per_s * 1e9 / m_ctx.bandwidth.bytes_per_s
                                         : 0;
                o.host_sync = m_g.w->find_variant(res.name)->host_sync;
                o.host_round_trip = round_trip;
                o.cache_bytes = static_cast<double>(m_ctx.dev.caps().cache_bytes);
                o.write(r.figures);
                r.figures["cost_note"] = cost.note;
                const auto rotated =
                    static_cast<double>(res.input_sets_used) * static_cast<double>(touched);
                r.figures["rotation_bytes"] = rotated; // bytes the rotation's calls touch together
                if (res.input_sets_used > 1 &&
                    rotated < 3.0 * static_cast<double>(m_ctx.dev.caps().cache_bytes))
                    r.figures["note"] =
                        fmt::format("{}{}cold cache only in part: {} input sets touching {} each "
                                    "rotate through {}, "
                                    "less than 3x the {} cache",
                                    r.figures.value("note", ""),
                                    r.figures.contains("note") ? "; " : "", res.input_sets_used,
                                    human_bytes(static_cast<double>(touched)), human_bytes(rotated),
                                    human_bytes(static_cast<double>(m_ctx.dev.caps().cache_bytes)));
                r.samples = res.samples_us;
                emit(r);
            }
        });
    }

    void throughput_pass(const std::string& variant, const workloads::input_set& dev_inputs) {
        guarded({variant}, ledger::throughput, "", [&] {
            workloads::throughput_context tc{m_ctx.dev, m_ctx.bandwidth.bytes_per_s,
                                             m_plan.settings.timing};
            const double round_trip_before = measure::host_round_trip_us(m_ctx.dev);
            auto res = m_g.c->measure_throughput(variant, dev_inputs, tc);
            const auto round_trip =
                round_trip_of(round_trip_before, measure::host_round_trip_us(m_ctx.dev));
            auto r = record::make(ledger::throughput, id(variant));
            r.figures = std::move(res.figures);
            auto t = throughput_figures::from(r.figures); // rate, step stats, mode, stop, ...
            t.unit = res.unit;
            t.step_unit = res.step_unit;
            t.context_axis = res.context_axis;
            if (!res.context_axis.empty() && m_g.args.params.contains(res.context_axis))
                t.context = m_g.args.params[res.context_axis];
            t.host_sync = m_g.w->find_variant(variant)->host_sync;
            t.host_round_trip = round_trip;
            t.write(r.figures);
            r.unit = t.unit;
            r.samples = std::move(res.samples_ms);
            r.samples_unit = t.step_unit;
            emit(r);
        });
    }

    void memory_pass(const std::string& variant, const workloads::input_set& dev_inputs) {
        auto& dev = m_ctx.dev;
        auto& probe = dev.memory();
        guarded({variant}, ledger::memory, "", [&] {
            // What libtorch caches (cuBLAS workspaces, free blocks) and the flush buffer go
            // before the job builds what it keeps: a CUDA graph that memory_call captures holds
            // the raw address of the cuBLAS workspace it was captured with, so freeing the
            // workspaces under a live graph is a use after free (a 30B MoE decode in graph mode
            // crashed the H200 run of build dc4c406 with the release after the capture).
            dev.synchronize();
            dev.release_scratch();
            probe.release_cached();
            auto call = m_g.c->memory_call(variant, dev_inputs, dev);
            if (!call)
                call = [&] {
                    const workloads::call_context ctx(dev);
                    (void)m_g.w->run(variant, *m_g.c, ctx, dev_inputs);
                };
            dev.synchronize();
            const auto baseline = probe.now();
            probe.reset_peaks();
            json seen{{"baseline", sample_json(baseline)}, {"calls", 0}};
            if (m_ctx.progress)
                m_ctx.progress->memory_seen(variant, seen);
            auto last_told = clock_type::now();
            measure::memory_sampler sampler(probe, probe.target_poll_hz());
            sampler.start();
            const auto t0 = clock_type::now();
            std::int64_t calls = 0;
            do {
                call();
                dev.synchronize();
                ++calls;
                // at most ten a second: what a process that dies later in the pass leaves
                if (m_ctx.progress &&
                    clock_type::now() - last_told > std::chrono::milliseconds(100)) {
                    seen["calls"] = calls;
                    seen["last"] = sample_json(probe.now());
                    m_ctx.progress->memory_seen(variant, seen);
                    last_told = clock_type::now();
                }
            } while ((std::chrono::duration<double>(clock_type::now() - t0).count() <
                          m_plan.settings.memory_min_window_s ||
                      sampler.polls() < 20) &&
                     calls < 100000);
            const auto last = probe.now();
            const auto report = sampler.stop();
            const auto counters = probe.counter_peaks();

            measure::memory_reading reading{probe.driver_level(),
                                            probe.device_wide(),
                                            probe.unavailable(),
                                            baseline,
                                            last,
                                            counters,
                                            report,
                                            calls,
                                            dev_inputs.bytes()};
            auto r = record::make(ledger::memory, id(variant));
            r.figures = measure::memory_figures(reading);
            if (const auto it = m_first_call.find(variant); it != m_first_call.end())
                r.figures["first_call"] = it->second;
            emit(r);
        });
    }

    const plan& m_plan;
    run_context& m_ctx;
    const job_group& m_g;
    run_summary& m_summary;
    ledger_set m_ledgers;
    std::map<std::string, json> m_call_facts; // per variant, from its correctness-pass call
    std::map<std::string, json> m_first_call; // per variant: memory around that call
    std::string m_pass = "inputs";
};

} // namespace

int run_summary::exit_code() const {
    if (interrupted)
        return 130;
    if (failed > 0)
        return static_cast<int>(exit_code::internal);
    if (correctness_fail > 0)
        return static_cast<int>(exit_code::check_failed);
    return 0;
}

std::string repro_command(const job_group& g, const std::string& variant, const std::string& device,
                          std::uint64_t base_seed, const std::string& prefix) {
    std::string cmd = fmt::format("{} --workload {}", prefix, g.w->name);
    for (auto it = g.args.params.begin(); it != g.args.params.end(); ++it) {
        const auto& v = it.value();
        cmd += fmt::format(" --param {}={}", it.key(),
                           v.is_string() ? v.get<std::string>() : v.dump());
    }
    cmd += fmt::format(" --dtype {} --device {} --variants {} --ledgers correctness --seed {}",
                       to_string(g.args.type), device, variant, base_seed);
    return cmd;
}

run_summary execute(const plan& p, run_context& ctx) {
    run_summary summary;
    for (std::size_t i = 0; i < p.groups.size(); ++i) {
        if (ctx.interrupted && ctx.interrupted->load()) {
            summary.interrupted = true;
            break;
        }
        const auto& g = p.groups[i];
        if (!g.c->uses_shared_model())
            workloads::release_shared_model(); // a model group before it: measure without it
        if (ctx.progress)
            ctx.progress->group_started(i, p.groups.size(), g);
        group_runner(p, ctx, g, summary).run();
        ++summary.groups_done;
    }
    if (ctx.interrupted && ctx.interrupted->load())
        summary.interrupted = true;
    if (ctx.progress)
        ctx.progress->finished();
    return summary;
}

} // namespace fourfold::runner
