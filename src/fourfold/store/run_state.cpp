#include "fourfold/store/run_state.hpp"

#include <cerrno>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <signal.h>
#include <unistd.h>

namespace fourfold::store {
namespace {

std::string this_host() {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

// A live process under that id that is not fourfold took the id over after the run's died.
// Where /proc cannot tell, the process is taken for the run's.
bool runs_fourfold(std::int64_t pid) {
    std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
    if (!in)
        return true;
    const std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    return cmdline.find("fourfold") != std::string::npos;
}

} // namespace

run_state state_of(const run_row& r) {
    if (r.status == "complete") {
        const auto resumed = r.provenance.value("/request/resumed"_json_pointer, json::array());
        if (resumed.is_array() && !resumed.empty() && resumed.back().is_object())
            return {"complete",
                    fmt::format("resumed at {} ({} time(s)); the records before stand",
                                resumed.back().value("at", std::string("?")), resumed.size())};
        return {"complete", ""};
    }
    if (r.status == "interrupted")
        return {"interrupted", "stopped by SIGINT; the records stored before stand, the jobs after "
                               "are missing"};
    if (r.status == "failed")
        return {"failed", "stopped on an error; the records stored before stand"};
    if (r.status != "running")
        return {r.status, "a status this build does not know"};
    const auto host = r.provenance.value("/host/hostname"_json_pointer, std::string());
    const auto pid = r.provenance.value("pid", std::int64_t{0});
    if (pid <= 0 || host != this_host())
        return {"not finished",
                fmt::format("still running{}, or its process ended without closing the run",
                            host.empty() ? "" : " on host " + host)};
    // kill(pid, 0) probes without signalling; EPERM means a live process of another user
    if ((kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) && runs_fourfold(pid))
        return {"running", fmt::format("its process {} is alive on this host", pid)};
    return {"ended unfinished",
            fmt::format("its process {} is gone without closing the run (crashed or killed); the "
                        "records it stored stand, the jobs after are missing",
                        pid)};
}

json run_listing::to_json() const {
    return json{{"id", run.id},
                {"label", run.label},
                {"status", state.word},
                {"why", state.why},
                {"started_at", run.started_at},
                {"finished_at", run.finished_at},
                {"device", run.device},
                {"build", build},
                {"records", records},
                {"records_planned", planned ? json(*planned) : json(nullptr)}};
}

std::vector<run_listing> list_runs(const result_store& store) {
    const auto counts = store.record_counts();
    std::vector<run_listing> out;
    for (auto& r : store.runs()) {
        run_listing l;
        l.state = state_of(r);
        const auto it = counts.find(r.id);
        l.records = it == counts.end() ? 0 : it->second;
        const auto& p = r.provenance;
        if (const auto planned = p.value("/request/records"_json_pointer, json());
            planned.is_number_integer())
            l.planned = planned.get<std::int64_t>();
        l.build = p.value("/fourfold/git_sha"_json_pointer, std::string("?"));
        if (p.value("/fourfold/git_dirty"_json_pointer, json()) == json(true))
            l.build += " (dirty)";
        l.run = std::move(r);
        out.push_back(std::move(l));
    }
    return out;
}

} // namespace fourfold::store
