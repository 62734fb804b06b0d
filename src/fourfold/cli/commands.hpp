#pragma once
// The subcommands behind `fourfold`: each parses nothing itself (main.cpp does), calls the layers
// below, prints, and returns an exit code.
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace fourfold::cli {

// Option values stay text until the layers below parse them: every message about a value is
// fourfold's own (runner::make_settings), never the command-line library's.
struct run_options {
    std::optional<std::string> suite;
    std::optional<std::string> workload;
    std::vector<std::string> shapes, params, dtypes, variants;
    std::string device = "cpu";
    std::string ledgers = "all"; // each workload measures those of its ledgers it supports
    std::string db = "fourfold.db";
    std::string label;
    std::optional<std::string> timing, cache;
    std::optional<std::string> min_time_s, timeout_s, max_rel_stdev, warmup_s, min_samples;
    std::optional<std::string> seed, threads;
    bool quiet = false;
    std::string format = "text"; // text | md | csv | json
    std::string command_line;
    // each job group in a process of its own (runner/isolation.hpp); unset: on for CUDA only
    std::optional<bool> isolate;
    std::optional<std::string> watchdog_margin_s;
    std::optional<std::string> resume; // a run id or label: measure what it has no record for
};

struct export_options {
    std::string db = "fourfold.db";
    std::vector<std::string> runs;
    std::string format;
    bool samples = false;
    std::string output;
};

struct compare_options {
    std::string db = "fourfold.db";
    std::vector<std::string> runs; // A [B]
    std::vector<std::string> allow_diff;
    std::string threshold = "2%";
    std::string baseline_variant;
    bool fail_on_regression = false;
    std::string format = "text";
    std::string output;
};

struct report_options {
    std::string db = "fourfold.db";
    std::vector<std::string> runs;
    std::vector<std::string> allow_diff;
    std::string threshold = "2%";
    std::string baseline_variant = "stock";
    std::string format; // empty: from the -o extension, else html
    std::string output;
};

struct runs_options {
    std::string db = "fourfold.db";
    bool json = false;
};

// fourfold decode: builds a `run` request for the decode workload (see decode_command.cpp).
struct decode_options {
    std::string model;
    std::string ctx = "512,2048";
    std::string tokens = "64";
    std::optional<std::string> mode;
    std::string device = "cpu";
    std::vector<std::string> dtypes, variants;
    std::string ledgers = "throughput,correctness,memory";
    std::optional<std::string> init_seed;
    std::optional<std::string> weights; // the decode workload's `weights` (its default when unset)
    bool random_weights = false;
    std::string db = "fourfold.db";
    std::string label;
    std::optional<std::string> min_time_s, timeout_s, threads;
    bool quiet = false;
    std::string format = "text";
    bool print_config = false;
    std::string command_line;
};

int run_command(const run_options& o);
int decode_command(const decode_options& o);
int env_command(const std::optional<std::string>& device, bool as_json);
int list_command(bool as_json);
int export_command(const export_options& o);
int compare_command(const compare_options& o);
int report_command(const report_options& o);
int runs_command(const runs_options& o);
// Writes a command's output to `path` whole or not at all (or to stdout when `path` is empty):
// write_error, exit 3, when the disk refuses it. check_output refuses, before any work, a path
// that is the store or cannot be created.
void check_output(const std::string& path, const std::string& store_path);
void write_output(const std::string& path, const std::string& text);
// The --threads help: the range and this machine's default.
std::string threads_help();
// The --help texts of compare and report: the verdict rule and the --allow-diff names.
std::string compare_help_footer();
// Declares `decode` and its options on the command line (main.cpp stays small).
CLI::App* add_decode_command(CLI::App& app, decode_options& o);

} // namespace fourfold::cli
