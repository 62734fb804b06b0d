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

struct run_options {
    std::optional<std::string> suite;
    std::optional<std::string> workload;
    std::vector<std::string> shapes, params, dtypes, variants;
    std::string device = "cpu";
    std::string ledgers = "all"; // each workload measures those of its ledgers it supports
    std::string db = "fourfold.db";
    std::string label;
    std::optional<std::string> timing, cache;
    std::optional<double> min_time_s, timeout_s, max_rel_stdev, warmup_s;
    std::optional<long long> min_samples;
    unsigned long long seed = 0;
    bool seed_given = false;
    bool quiet = false;
    std::string format = "text";
    std::string command_line;
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

// fourfold decode: builds a `run` request for the decode workload (see decode_command.cpp).
struct decode_options {
    std::string model;
    std::string ctx = "512,2048";
    long long tokens = 64;
    std::optional<std::string> mode;
    std::string device = "cpu";
    std::vector<std::string> dtypes, variants;
    std::string ledgers = "throughput,correctness,memory";
    std::optional<long long> init_seed;
    std::string db = "fourfold.db";
    std::string label;
    std::optional<double> min_time_s, timeout_s;
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
// The --help texts of compare and report: the verdict rule and the --allow-diff names.
std::string compare_help_footer();
// Declares `decode` and its options on the command line (main.cpp stays small).
CLI::App* add_decode_command(CLI::App& app, decode_options& o);

} // namespace fourfold::cli
