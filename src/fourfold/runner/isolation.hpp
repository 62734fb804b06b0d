#pragma once
// Isolation: each job group runs in a process of its own (the fourfold binary itself, exec'd in
// its hidden job mode, so that it has its own CUDA context: a context does not survive a fork).
// The parent keeps the store, the plan and the progress line; the job's process gets its group
// as one frame on stdin and streams back, over one pipe of framed JSON (channel.hpp), the steps
// it starts, what the memory pass has seen so far and each record the moment it exists. A process
// that dies by a signal, reports a sticky device error, breaks the channel or passes the
// watchdog's limit (the job's timeout plus a margin; SIGTERM, then SIGKILL) leaves one failed
// record per job it had not finished, with the reason; the group's other variants go on in a
// fresh process, and so does the next group.
#include "fourfold/runner/plan.hpp"
#include "fourfold/runner/runner.hpp"
#include "fourfold/runner/settings_request.hpp"

#include <string>

namespace fourfold::runner {

// Seconds added to a step's own budget before the watchdog stops a job's process.
inline constexpr double k_default_watchdog_margin_s = 300;
// Seconds a job's process has, beside the margin, to load and send its first frame.
inline constexpr double k_start_allowance_s = 120;
// Seconds a process stopped by SIGTERM has to end before SIGKILL.
inline constexpr double k_term_grace_s = 5;

struct isolation_settings {
    std::string binary; // the fourfold executable the job processes run
    std::string device; // the device's resolved name ("cpu", "cuda:0")
    settings_request settings;
    double watchdog_margin_s = k_default_watchdog_margin_s;
};

// This process's executable (Linux: /proc/self/exe); empty where it cannot be found.
std::string this_executable();

// Runs the plan's job groups each in a process of its own; records reach ctx.sink in the parent.
run_summary execute_isolated(const plan& p, run_context& ctx, const isolation_settings& iso);

// The job's process: reads its request from `in_fd`, runs its group with the runner of this
// process, writes frames to `out_fd`. Returns the process's exit status.
int job_process_main(int in_fd, int out_fd);

// The hidden argument that starts the job mode: `fourfold __job`.
inline constexpr const char* k_job_mode_argument = "__job";

} // namespace fourfold::runner
