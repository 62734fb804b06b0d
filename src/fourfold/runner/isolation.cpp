#include "fourfold/runner/isolation.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/runner/channel.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <poll.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace fourfold::runner {
namespace {

using clock_type = std::chrono::steady_clock;

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    if (const char* abbrev = sigabbrev_np(sig))
        return fmt::format("SIG{} ({})", abbrev, strsignal(sig));
#endif
    return fmt::format("signal {} ({})", sig, strsignal(sig));
}

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

// ---- the parent ------------------------------------------------------------------------------

// What became of one job process.
struct process_outcome {
    bool done = false;        // it sent "done": the group ran to its end (or to an interrupt)
    bool interrupted = false; // it stopped on SIGINT
    std::string reason;       // why it did not finish, for the failed records
    json cause = json::object();
    std::string pass;    // the pass it was in when it ended
    std::string variant; // the variant it was running then (empty: unknown or interleaved)
};

// A job process started and waiting for its request: the exec, libtorch's load and the static
// registries are done, nothing of the device is touched yet (the device opens once the request
// names it). One such process is started while the previous one runs its group, so that a group
// waits only for its device to open: the standby holds no device context and no device memory,
// so it cannot move what the running group measures.
struct job_process {
    pid_t pid = -1;
    int to_child = -1;   // its stdin: the request
    int from_child = -1; // its fd 3: the frames
};

job_process spawn_job_process(const std::string& binary) {
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0)
        throw device_error(fmt::format("isolation: pipe: {}", std::strerror(errno)));
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        close(to_child[0]);
        close(to_child[1]);
        throw device_error(fmt::format("isolation: pipe: {}", std::strerror(errno)));
    }
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
            close(fd);
        throw device_error(fmt::format("isolation: fork: {}", std::strerror(errno)));
    }
    if (pid == 0) { // async-signal-safe calls only, until exec
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); // a parent killed takes its job process along
#endif
        if (getppid() != parent)
            _exit(127);
        dup2(to_child[0], STDIN_FILENO);
        dup2(from_child[1], 3);
        dup2(STDERR_FILENO, STDOUT_FILENO); // stdout is the parent's (tables, JSON)
        char* argv[] = {const_cast<char*>(binary.c_str()), const_cast<char*>(k_job_mode_argument),
                        nullptr};
        execv(binary.c_str(), argv);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    return {pid, to_child[1], from_child[0]};
}

// The standby job process of a run (see job_process); discarded, killed and reaped, at its end.
class job_processes {
  public:
    explicit job_processes(std::string binary) : m_binary(std::move(binary)) {}
    job_processes(const job_processes&) = delete;
    job_processes& operator=(const job_processes&) = delete;
    ~job_processes() { discard(); }

    // The standby if one is waiting, else a process started now.
    job_process take() {
        if (m_standby) {
            const auto p = *m_standby;
            m_standby.reset();
            return p;
        }
        return spawn_job_process(m_binary);
    }
    // Starts the next group's process while the current one runs (its failure to start shows
    // when it is taken: the request's write fails and the channel ends at once).
    void prepare_next() {
        if (!m_standby)
            m_standby = spawn_job_process(m_binary);
    }
    void discard() {
        if (!m_standby)
            return;
        kill(m_standby->pid, SIGKILL);
        close(m_standby->to_child);
        close(m_standby->from_child);
        int status = 0;
        while (waitpid(m_standby->pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_standby.reset();
    }

  private:
    std::string m_binary;
    std::optional<job_process> m_standby;
};

class group_supervisor {
  public:
    group_supervisor(const plan& p, run_context& ctx, const isolation_settings& iso,
                     const job_group& g, run_summary& summary, job_processes& processes)
        : m_plan(p), m_ctx(ctx), m_iso(iso), m_g(g), m_summary(summary), m_processes(processes) {
        auto ledgers = p.settings.ledgers.intersect(g.w->ledgers);
        if (g.only_ledgers)
            ledgers = ledgers.intersect(*g.only_ledgers);
        m_ledgers = ledgers.list();
        for (const auto& v : g.variants)
            m_keys[g.job(v, ctx.dev.name()).key()] = v;
    }

    // False when the run was interrupted.
    bool run() {
        std::set<std::string> culprits;
        for (std::size_t attempt = 0; attempt <= m_g.variants.size(); ++attempt) {
            std::vector<std::string> to_run;
            ledger_set needed;
            for (const auto& v : m_g.variants) {
                if (culprits.count(v))
                    continue;
                bool missing = false;
                for (const auto l : m_ledgers)
                    if (!m_have.count({l, v})) {
                        missing = true;
                        needed.add(l);
                    }
                if (missing)
                    to_run.push_back(v);
            }
            if (to_run.empty())
                return true;
            const auto out = run_process(to_run, needed);
            if (out.interrupted) {
                m_summary.interrupted = true;
                return false;
            }
            if (out.done)
                return true; // whatever it did not record, it had no record for (cannot be)
            const bool known = !out.variant.empty() &&
                               std::find(to_run.begin(), to_run.end(), out.variant) != to_run.end();
            if (known) {
                fail_missing({out.variant}, std::nullopt, out);
                culprits.insert(out.variant);
                continue; // the group's other variants in a fresh process
            }
            if (out.pass == "op_time") { // interleaved: every variant's op_time is lost
                fail_missing(to_run, ledger::op_time, out);
                continue;
            }
            fail_missing(to_run, std::nullopt, out);
            return true;
        }
        return true;
    }

  private:
    void emit(const record& r) {
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
        m_have.insert({r.which, r.job.variant});
    }

    void fail_missing(const std::vector<std::string>& variants, std::optional<ledger> only,
                      const process_outcome& out) {
        for (const auto& v : variants)
            for (const auto l : m_ledgers) {
                if ((only && l != *only) || m_have.count({l, v}))
                    continue;
                auto r = record::failed(l, m_g.job(v, m_ctx.dev.name()), out.reason);
                if (!m_g.note.empty())
                    r.figures["job_note"] = m_g.note;
                auto cause = out.cause;
                cause["pass"] = out.pass;
                cause["variant"] = out.variant;
                r.figures["isolation"] = std::move(cause);
                if (l == ledger::memory)
                    if (const auto it = m_memory_seen.find(v); it != m_memory_seen.end())
                        r.figures["before_failure"] = it->second; // what the sampler saw
                emit(r);
            }
    }

    // The seconds a step may take before the watchdog stops the process.
    double step_limit(const std::string& pass, std::size_t variants) const {
        const auto& t = m_plan.settings.timing;
        const double per_variant =
            t.stop.timeout_s + t.warmup_s + m_plan.settings.memory_min_window_s;
        const double n = pass == "op_time" ? static_cast<double>(variants) : 1.0;
        return m_iso.watchdog_margin_s + n * per_variant;
    }

    std::string where(const std::string& pass, const std::string& variant) const {
        if (pass.empty())
            return "while starting";
        if (variant.empty())
            return pass == "op_time" ? "in the op_time pass (its variants interleave)"
                                     : fmt::format("in the {} pass", pass);
        return fmt::format("in the {} pass of variant {}", pass, variant);
    }

    process_outcome run_process(const std::vector<std::string>& variants,
                                const ledger_set& needed) {
        process_outcome out;
        json request{{"device", m_iso.device},
                     {"threads", m_plan.settings.threads},
                     {"settings", to_json(m_iso.settings)},
                     {"ledgers", needed.names()},
                     {"bandwidth", m_ctx.bandwidth.to_json()},
                     {"repro_prefix", m_ctx.repro_prefix},
                     {"workload", m_g.w->name},
                     {"params", m_g.args.params},
                     {"dtype", std::string(to_string(m_g.args.type))},
                     {"variants", variants},
                     {"note", m_g.note},
                     {"seed", m_g.seed}};
        const std::string binary = m_iso.binary;
        const auto child = m_processes.take();
        const pid_t pid = child.pid;
        const int from_child = child.from_child;
        // the request is small; a process that died at once makes this write fail, not kill us
        const auto previous_pipe = std::signal(SIGPIPE, SIG_IGN);
        write_frame(child.to_child, request);
        close(child.to_child);
        std::signal(SIGPIPE, previous_pipe);
        m_processes.prepare_next(); // starts while this one runs (no device touched until used)

        frame_reader reader;
        // to start: the binary, libtorch and the device (a CUDA context) load first
        double limit_s = k_start_allowance_s + m_iso.watchdog_margin_s;
        auto deadline = clock_type::now() + to_duration(limit_s);
        std::optional<clock_type::time_point> termed;
        bool killed = false, forwarded_sigint = false, broken = false;
        std::string fault, fault_variant;
        bool have_fault = false;
        char buffer[65536];
        for (;;) {
            if (!forwarded_sigint && m_ctx.interrupted && m_ctx.interrupted->load()) {
                kill(pid, SIGINT); // it stops between passes, as the run does
                forwarded_sigint = true;
            }
            const auto now = clock_type::now();
            if (!termed && now > deadline) {
                kill(pid, SIGTERM);
                termed = now;
            } else if (termed && !killed && seconds_since(*termed) > k_term_grace_s) {
                kill(pid, SIGKILL);
                killed = true;
            }
            pollfd pfd{from_child, POLLIN, 0};
            const int ready = poll(&pfd, 1, 50);
            if (ready < 0 && errno == EINTR)
                continue;
            if (ready <= 0)
                continue;
            const auto n = read(from_child, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break; // EOF: the process closed the channel (it ended)
            reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
            while (auto frame = reader.next()) {
                const auto type = frame->value("t", std::string());
                if (type == "step") {
                    const auto pass = frame->value("pass", std::string());
                    if (pass != out.pass && m_ctx.progress)
                        m_ctx.progress->pass_started(pass);
                    out.pass = pass;
                    out.variant = frame->value("variant", std::string());
                    limit_s = step_limit(pass, variants.size());
                } else if (type == "record") {
                    try {
                        const auto r = record_from_json(frame->value("r", json::object()));
                        const auto it = m_keys.find(r.job.key());
                        if (it == m_keys.end())
                            throw std::invalid_argument(
                                "a record of a job its group does not hold");
                        if (!m_have.count({r.which, r.job.variant}))
                            emit(r); // a rerun's records that were stored before are dropped
                    } catch (const std::invalid_argument& e) {
                        broken = true;
                        fault = e.what();
                    }
                } else if (type == "memory") {
                    m_memory_seen[frame->value("variant", std::string())] =
                        frame->value("seen", json::object());
                } else if (type == "fault") {
                    have_fault = true;
                    fault = frame->value("reason", std::string("an unnamed fault"));
                    fault_variant = frame->value("variant", std::string());
                    if (fault_variant.empty())
                        fault_variant = out.variant;
                } else if (type == "done") {
                    out.done = true;
                    out.interrupted = frame->value("interrupted", false);
                } else if (type != "ready") {
                    broken = true;
                    fault = fmt::format("a frame of unknown type '{}'", type);
                }
                if (broken)
                    break;
                deadline = clock_type::now() + to_duration(limit_s);
            }
            if (!reader.error().empty()) {
                broken = true;
                fault = reader.error();
            }
            if (broken) {
                kill(pid, SIGKILL);
                killed = true;
                break;
            }
        }
        close(from_child);
        int status = 0;
        const auto waiting = clock_type::now();
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (!killed && seconds_since(waiting) > k_term_grace_s) {
                kill(pid, SIGKILL);
                killed = true;
            }
            usleep(10000);
        }
        if (out.done) {
            if (out.interrupted || (m_ctx.interrupted && m_ctx.interrupted->load()))
                out.interrupted = true;
            return out;
        }
        if (m_ctx.interrupted && m_ctx.interrupted->load() && !termed && !broken) {
            out.interrupted = true; // stopped by the SIGINT the run got
            return out;
        }
        const auto at = where(out.pass, out.variant);
        if (broken) {
            out.reason = fmt::format("the job's process broke the channel to the parent ({}) {}; "
                                     "it was killed",
                                     fault, at);
            out.cause = json{{"cause", "channel"}};
        } else if (have_fault) {
            out.variant = fault_variant;
            out.reason = fault;
            out.cause = json{{"cause", "device"}};
        } else if (termed) {
            out.reason = fmt::format(
                "the job's process passed the watchdog's limit of {:g} s {} (the step's budget "
                "from --timeout {:g} s and --warmup {:g} s, plus the margin {:g} s); {}",
                limit_s, at, m_plan.settings.timing.stop.timeout_s, m_plan.settings.timing.warmup_s,
                m_iso.watchdog_margin_s,
                killed ? fmt::format("it did not stop at SIGTERM and was killed by SIGKILL {:g} s "
                                     "later",
                                     k_term_grace_s)
                       : std::string("it was stopped by SIGTERM"));
            out.cause = json{{"cause", "watchdog"},
                             {"limit_s", limit_s},
                             {"signal", killed ? "SIGKILL" : "SIGTERM"}};
        } else if (WIFSIGNALED(status)) {
            const int sig = WTERMSIG(status);
            out.reason = fmt::format("the job's process died by {} {}{}", signal_name(sig), at,
                                     sig == SIGKILL ? " (killed from outside: the kernel's "
                                                      "out-of-memory killer, or a user)"
                                                    : "");
            out.cause = json{{"cause", "signal"}, {"signal", signal_name(sig)}};
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out.pass.empty()) {
            out.reason = fmt::format("the job's process could not start ({} in job mode)", binary);
            out.cause = json{{"cause", "start"}};
        } else {
            out.reason = fmt::format("the job's process exited with code {} {} without finishing "
                                     "its group (its last words are on stderr)",
                                     WIFEXITED(status) ? WEXITSTATUS(status) : -1, at);
            out.cause = json{{"cause", "exit"}};
        }
        return out;
    }

    static clock_type::duration to_duration(double s) {
        return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
    }

    const plan& m_plan;
    run_context& m_ctx;
    const isolation_settings& m_iso;
    const job_group& m_g;
    run_summary& m_summary;
    job_processes& m_processes;
    std::vector<ledger> m_ledgers;
    std::map<std::string, std::string> m_keys; // job key -> variant
    std::set<std::pair<ledger, std::string>> m_have;
    std::map<std::string, json> m_memory_seen;
};

// ---- the job's process -----------------------------------------------------------------------

std::atomic<bool> g_job_interrupted{false};
extern "C" void on_job_sigint(int) {
    g_job_interrupted = true;
}

class channel_sink final : public record_sink, public progress_listener {
  public:
    explicit channel_sink(int fd) : m_fd(fd) {}
    void write(const record& rec) override {
        send(json{{"t", "record"}, {"r", record_to_json(rec)}});
    }
    void variant_started(std::string_view pass, const std::string& variant) override {
        send(json{{"t", "step"}, {"pass", std::string(pass)}, {"variant", variant}});
    }
    void memory_seen(const std::string& variant, const json& seen) override {
        send(json{{"t", "memory"}, {"variant", variant}, {"seen", seen}});
    }
    void send(const json& frame) {
        if (!write_frame(m_fd, frame))
            _exit(3); // the parent is gone: nothing this process measures can be kept
    }

  private:
    int m_fd;
};

json read_request(int fd) {
    frame_reader reader;
    char buffer[65536];
    for (;;) {
        if (auto frame = reader.next())
            return *frame;
        if (!reader.error().empty())
            throw bad_input("the job request is broken: " + reader.error());
        const auto n = read(fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw bad_input("the job request ended before its frame was whole ('fourfold __job' "
                            "is started by 'fourfold run --isolate', not by hand)");
        reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
}

} // namespace

std::string this_executable() {
    char path[4096];
    const auto n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0)
        return {};
    return std::string(path, static_cast<std::size_t>(n));
}

run_summary execute_isolated(const plan& p, run_context& ctx, const isolation_settings& iso) {
    run_summary summary;
    job_processes processes(iso.binary);
    for (std::size_t i = 0; i < p.groups.size(); ++i) {
        if (ctx.interrupted && ctx.interrupted->load()) {
            summary.interrupted = true;
            break;
        }
        const auto& g = p.groups[i];
        if (ctx.progress)
            ctx.progress->group_started(i, p.groups.size(), g);
        if (!group_supervisor(p, ctx, iso, g, summary, processes).run())
            break;
        ++summary.groups_done;
    }
    if (ctx.interrupted && ctx.interrupted->load())
        summary.interrupted = true;
    if (ctx.progress)
        ctx.progress->finished();
    return summary;
}

int job_process_main(int in_fd, int out_fd) {
    channel_sink channel(out_fd);
    std::string variant;
    try {
        const auto request = read_request(in_fd);
        std::signal(SIGINT, on_job_sigint);
        auto settings_req = settings_request_from_json(request.value("settings", json::object()));
        settings_req.ledgers = request.value("ledgers", std::string("all"));
        const int threads = request.value("threads", 0);
        if (threads > 0)
            backend::set_cpu_threads(threads);
        auto dev = backend::open_device(
            backend::device_spec::parse(request.value("device", std::string("cpu"))));
        const auto settings = make_settings(settings_req, *dev);
        job_spec spec;
        spec.workload = request.value("workload", std::string());
        spec.params = request.value("params", json::object());
        const auto type = parse_dtype(request.value("dtype", std::string()));
        if (!type)
            throw bad_input("the job request names an unknown dtype");
        spec.type = *type;
        spec.variants = request.value("variants", std::vector<std::string>{});
        spec.note = request.value("note", std::string());
        const auto job_plan = make_plan({spec}, settings, *dev);
        if (job_plan.groups.size() != 1 ||
            job_plan.groups.front().seed != request.value("seed", std::uint64_t{0}))
            throw bad_input("the job's process planned another group than its parent (a "
                            "different binary or device?)");
        backend::bandwidth_figure bandwidth;
        const auto b = request.value("bandwidth", json::object());
        bandwidth.bytes_per_s = b.value("bytes_per_s", 0.0);
        bandwidth.bytes_moved = b.value("bytes_moved", std::int64_t{0});
        bandwidth.method = b.value("method", std::string());
        run_context ctx{*dev,
                        bandwidth,
                        channel,
                        &channel,
                        &g_job_interrupted,
                        request.value("repro_prefix", std::string("fourfold run"))};
        channel.send(json{{"t", "ready"}});
        const auto summary = execute(job_plan, ctx);
        channel.send(json{{"t", "done"}, {"interrupted", summary.interrupted}});
        return 0;
    } catch (const sticky_device_error& e) {
        channel.send(json{{"t", "fault"}, {"variant", e.variant()}, {"reason", e.what()}});
        return 3;
    } catch (const bad_input& e) {
        channel.send(
            json{{"t", "fault"},
                 {"reason", fmt::format("the job's process refused its request: {}", e.what())}});
        return 2;
    } catch (const std::exception& e) {
        channel.send(
            json{{"t", "fault"},
                 {"reason", fmt::format("the job's process failed: {}", first_line(e.what()))}});
        return 3;
    }
}

} // namespace fourfold::runner
