// fourfold: four ledgers for a machine-learning backend (see README.md and DESIGN.md).
// Parses the command line, dispatches, and turns every error into one line and an exit code:
// 2 for bad input or usage, 3 for a device, internal or write error (core/error.hpp).
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/measure/stopping_rule.hpp"
#include "fourfold/measure/timing.hpp"
#include "fourfold/runner/isolation.hpp"
#include "fourfold/runner/plan.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <c10/util/Exception.h>
#include <cctype>
#include <cstdio>
#include <fmt/format.h>
#include <iostream>
#include <utility>
#include <vector>

namespace {

std::string joined_args(int argc, char** argv) {
    std::vector<std::string> parts;
    parts.reserve(static_cast<std::size_t>(argc));
    for (int i = 0; i < argc; ++i)
        parts.emplace_back(argv[i]);
    return fourfold::join(parts, " ");
}

// One line, whatever the message holds (a label with a newline in it, say).
int fail(int code, const std::string& message) {
    std::fprintf(stderr, "fourfold: error: %s\n", fourfold::escape_control(message).c_str());
    return code;
}

const char* k_footer = R"(
Examples:
  fourfold run --suite smoke                      the smoke suite on the CPU into ./fourfold.db
  fourfold run --workload softmax --shape 1x128256 --dtype fp32,bf16 --label before
  fourfold runs                                   the runs in the store: status, records done
  fourfold compare before after                   B against A, ledger by ledger, with verdicts
  fourfold report before after -o report.html     one self-contained HTML file with charts
  fourfold decode --model tiny-llama --ctx 64,256 decode tokens/s of a model preset
  fourfold export --format csv -o all.csv         every record as CSV (or --format json)

Exit codes:
  0    every job ran, or was skipped with its reason, and something was measured
  1    a correctness FAIL (run, decode); with --fail-on-regression a SLOWER, a PASS->FAIL or
       no pair at all (compare)
  2    bad input: one line on stderr names the value and what is valid; the store is untouched
  3    a device, internal or write error (a full disk: no partial output file is left)
  4    nothing was measured: every job was skipped (the records in the store say why)
  130  interrupted: the records measured so far stay in the store)";

// The subcommand the user named (the last one parsed).
CLI::App* chosen(CLI::App& app) {
    CLI::App* sub = &app;
    for (auto* s : app.get_subcommands())
        sub = s;
    return sub;
}

std::string where(CLI::App& app) {
    auto* sub = chosen(app);
    return sub == &app ? "fourfold" : "fourfold " + sub->get_name();
}

// Options given twice and values given empty: bad input in fourfold's words. Options that take
// a list (--param, --dtype, ...) may be repeated; their items are checked below the CLI.
void check_given(CLI::App& app) {
    auto* sub = chosen(app);
    for (const auto* opt : sub->get_options()) {
        if (opt->count() == 0)
            continue;
        const auto name = opt->get_name(false, true);
        const bool repeatable = opt->get_items_expected_max() > 1;
        if (!repeatable && opt->count() > 1) {
            std::vector<std::string> values;
            for (const auto& v : opt->results())
                values.push_back("'" + v + "'");
            throw fourfold::bad_input(
                opt->get_type_size_max() == 0
                    ? fmt::format("{} is given {} times; give it once", name, opt->count())
                    : fmt::format("{} is given {} times ({}); give it once", name, opt->count(),
                                  fourfold::join(values, ", ")));
        }
        for (const auto& v : opt->results())
            if (fourfold::trim(v).empty())
                throw fourfold::bad_input(
                    fmt::format("{} is empty; give a value (or leave {} out for its default): {}",
                                name, name, opt->get_description()));
    }
}

// The commands, in the order they were added (run, runs, compare, ...).
std::string command_names(CLI::App& app) {
    std::vector<std::string> names;
    for (auto* s : app.get_subcommands([](CLI::App*) { return true; }))
        names.push_back(s->get_name());
    return fourfold::join(names, ", ");
}

// CLI11 lists the words it did not expect as it holds them, last first ("-3 --limit" for
// "--limit -3"): each with its place in the command line, in that order again; empty where one
// of them is not found there (a word with a space in it).
std::vector<std::pair<std::size_t, std::string>>
in_command_line_order(const std::string& words, const std::vector<std::string>& args) {
    std::vector<std::pair<std::size_t, std::string>> at;
    for (const auto& w : fourfold::split(words, ' ')) {
        const auto it = std::find(args.begin(), args.end(), w);
        if (it == args.end())
            return {};
        at.emplace_back(static_cast<std::size_t>(it - args.begin()), w);
    }
    std::stable_sort(at.begin(), at.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    return at;
}

// CLI11's message for a command line it could not parse, in fourfold's words. `args`: the
// command line's words after the program's name; where no command was recognised, the first is
// the unknown command (or an option fourfold itself does not have).
std::string parse_message(CLI::App& app, const CLI::ParseError& e,
                          const std::vector<std::string>& args) {
    // (the command is the first word: fourfold itself takes no option with a value)
    const std::string first_word = !args.empty() && args[0][0] != '-' ? args[0] : "";
    const std::string what = e.what();
    const auto help = fmt::format("see '{} --help'", where(app));
    auto after_colon = [&] {
        const auto colon = what.find(": ");
        return colon == std::string::npos ? what : what.substr(colon + 2);
    };
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
        const auto at = in_command_line_order(after_colon(), args);
        std::vector<std::string> listed;
        listed.reserve(at.size());
        for (const auto& [place, w] : at)
            listed.push_back(w);
        const auto words = at.empty() ? after_colon() : fourfold::join(listed, " ");
        const bool several = words.find(' ') != std::string::npos;
        // Options before the command ("fourfold --db x.db runs"): where they go instead.
        const auto* sub = chosen(app);
        const auto command = std::find(args.begin(), args.end(), sub->get_name());
        if (sub != &app && !at.empty() && command != args.end() &&
            at.back().first < static_cast<std::size_t>(command - args.begin())) {
            // (moved after the command, an option it does not have would fail there too)
            for (const auto& w : listed) {
                const bool option = w.size() > 1 && w[0] == '-' &&
                                    std::isdigit(static_cast<unsigned char>(w[1])) == 0;
                if (option && sub->get_option_no_throw(w.substr(0, w.find('='))) == nullptr)
                    return fmt::format("'{}' is not an option of '{}'; {}", w, where(app), help);
            }
            return fmt::format("'{}' {} before the command; options go after it: '{} {}'; {}",
                               words, several ? "come" : "comes", where(app), words, help);
        }
        return fmt::format("'{}' {} of '{}'; {}", words,
                           several ? "are not options or arguments"
                                   : "is not an option or argument",
                           where(app), help);
    }
    if (dynamic_cast<const CLI::RequiredError*>(&e)) {
        if (chosen(app) == &app) {
            if (!first_word.empty())
                return fmt::format("command '{}' is unknown; valid: {}; {}", first_word,
                                   command_names(app), help);
            if (!args.empty()) // an option of no command: fourfold itself has --help, --version
                return fmt::format("'{}' is not an option of 'fourfold' (--help, --version); "
                                   "give a command first ({}); {}",
                                   args[0], command_names(app), help);
            return fmt::format("a command is needed ({}); {}", command_names(app), help);
        }
        const auto name = what.substr(0, what.find(" is required"));
        const auto* opt = chosen(app)->get_option_no_throw(name);
        return fmt::format("'{}' needs {}{}; {}", where(app), name,
                           opt ? " (" + opt->get_description() + ")" : std::string(), help);
    }
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e))
        return fmt::format("{} needs a value; {}", what.substr(0, what.find(':')), help);
    return fmt::format("{}; {}", what, help);
}

} // namespace

namespace fourfold::cli {
bool wants_python_run(int argc, char** argv); // python_command.cpp
int python_run_command(int argc, char** argv);
} // namespace fourfold::cli

int main(int argc, char** argv) {
    using namespace fourfold;
    // The hidden job mode of an isolated run: its request on stdin, frames out on fd 3.
    if (argc == 2 && std::string(argv[1]) == runner::k_job_mode_argument)
        return runner::job_process_main(0, 3);
    // A workload defined in Python: the package's interpreter runs it (python_command.cpp).
    if (cli::wants_python_run(argc, argv))
        return cli::python_run_command(argc, argv);
    CLI::App app{
        "fourfold: did this backend change make my model faster, still correct, and no "
        "bigger in memory? Four separate ledgers: throughput, op_time, correctness, memory."};
    app.require_subcommand(1);
    app.set_version_flag("--version", "fourfold 0.1.0");
    app.footer(k_footer);

    auto* env = app.add_subcommand("env", "provenance of this build and machine");
    bool env_json = false;
    std::optional<std::string> env_device;
    env->add_flag("--json", env_json, "print JSON");
    env->add_option("--device", env_device, "only this device (cpu, cuda[:i], mps)");

    auto* list = app.add_subcommand(
        "list", "suites, workloads, variants, ledgers and what this build supports");
    bool list_json = false;
    list->add_flag("--json", list_json, "print JSON");

    // the defaults the help states are the ones the run uses, read from where they are set
    const measure::stopping_settings k_stop;
    const measure::timing_settings k_timing;
    cli::run_options ro;
    auto* run = app.add_subcommand("run", "measure a suite or a workload into the store");
    run->add_option("--suite", ro.suite, "a named suite (fourfold list)");
    std::string python_file; // handled before parsing: python_command.cpp
    run->add_option("--python", python_file,
                    "FILE.py defining fourfold.Workload classes: the run (with --workload NAME and "
                    "the options here) goes to the Python package's interpreter");
    run->add_option(
        "--workload", ro.workload,
        "one workload (fourfold list); with --suite, the suite's jobs of these workloads "
        "(a comma list)");
    run->add_option("--shape", ro.shapes, "shape(s), e.g. 1x128256 or 1x4096x4096,1x14336x4096")
        ->allow_extra_args(false);
    run->add_option("--param", ro.params, "NAME=VALUE[,VALUE|A..B] (repeatable)")
        ->allow_extra_args(false);
    run->add_option("--dtype", ro.dtypes, "fp32, bf16, fp16, ... (a comma list sweeps)")
        ->allow_extra_args(false);
    run->add_option("--variants", ro.variants, "comma list of variants (default: all)")
        ->allow_extra_args(false);
    run->add_option("--device", ro.device, "cpu | cuda[:i] | mps")->capture_default_str();
    run->add_option("--ledgers", ro.ledgers,
                    "op_time,correctness,memory,throughput or all (each workload measures those it "
                    "supports)")
        ->capture_default_str();
    run->add_option("--db", ro.db, "the SQLite store")->capture_default_str();
    run->add_option("--label", ro.label,
                    "a label for this run (compare and export take it); printable, one line, not "
                    "digits only (those name run ids)");
    run->add_option("--timing", ro.timing,
                    "host | event | batch | graph (default: graph on CUDA, host elsewhere)");
    run->add_option("--cache", ro.cache, "hot | cold (default: cold on CUDA, hot elsewhere)");
    run->add_option("--min-time", ro.min_time_s,
                    fmt::format("seconds of sampling at least (default {:g}; at most --timeout)",
                                k_stop.min_time_s));
    run->add_option("--min-samples", ro.min_samples,
                    fmt::format("samples at least (default {})", k_stop.min_samples));
    run->add_option("--timeout", ro.timeout_s,
                    fmt::format("seconds per job at most (default {:g})", k_stop.timeout_s));
    run->add_option(
        "--max-rel-stdev", ro.max_rel_stdev,
        fmt::format("converged below this relative stdev (default {:g})", k_stop.max_rel_stdev));
    run->add_option("--warmup", ro.warmup_s,
                    fmt::format("seconds of time-based warm-up (default {:g})", k_timing.warmup_s));
    run->add_option(
        "--seed", ro.seed,
        fmt::format("base seed of the inputs, 0..2^64-1 (default {})", runner::k_default_seed));
    run->add_option("--threads", ro.threads, cli::threads_help());
    run->add_flag("--quiet", ro.quiet, "no progress line");
    bool isolate_flag = false, no_isolate_flag = false;
    auto* isolate_opt = run->add_flag(
        "--isolate", isolate_flag,
        "each job group in a process of its own: a crash, a sticky CUDA error, an OOM or a hang "
        "is a failed record and the run goes on (default on CUDA; off on the CPU)");
    auto* no_isolate_opt =
        run->add_flag("--no-isolate", no_isolate_flag, "run every job in this process");
    run->add_option("--watchdog-margin", ro.watchdog_margin_s,
                    fmt::format("isolated: seconds past a step's budget (--timeout, --warmup) "
                                "before its process is stopped (default {:g})",
                                runner::k_default_watchdog_margin_s));
    auto* resume_opt = run->add_option(
        "--resume", ro.resume,
        "RUN (id or label): measure only the jobs the run has no record for, with its own "
        "request and settings, after checking build, device, libtorch and settings are the same");
    run->add_option("--format", ro.format,
                    "text | md | csv | json: how the tables print on stdout (csv and json: the "
                    "run's records as 'fourfold export' writes them)")
        ->capture_default_str();

    cli::runs_options rso;
    auto* runs = app.add_subcommand("runs", "the runs in the store: id, label, status, started, "
                                            "device, build, records done of planned");
    runs->add_option("--db", rso.db, "the SQLite store")->capture_default_str();
    runs->add_flag("--json", rso.json, "print JSON");

    cli::export_options eo;
    auto* exp = app.add_subcommand("export", "the store as JSON or CSV");
    exp->add_option("--db", eo.db, "the SQLite store")->capture_default_str();
    exp->add_option("--run", eo.runs, "run id or label (repeatable; default: every run)")
        ->allow_extra_args(false);
    exp->add_option("--format", eo.format, "json | csv")->required();
    exp->add_flag("--samples", eo.samples, "include raw samples");
    exp->add_option("-o,--output", eo.output, "write to this file instead of stdout");

    cli::compare_options co;
    auto* cmp = app.add_subcommand(
        "compare", "A against B, ledger by ledger: treatment, ratios with CIs, verdicts");
    cmp->add_option("runs", co.runs, "A [B]: run ids or labels; one run needs --baseline-variant")
        ->required();
    cmp->add_option("--db", co.db, "the SQLite store")->capture_default_str();
    cmp->add_option("--allow-diff", co.allow_diff,
                    "declare a difference as the treatment (names below)")
        ->allow_extra_args(false);
    cmp->add_option("--threshold", co.threshold, "practical threshold of the verdicts")
        ->capture_default_str();
    cmp->add_option("--baseline-variant", co.baseline_variant,
                    "one run: compare every variant with this one (e.g. stock)");
    cmp->add_flag("--fail-on-regression", co.fail_on_regression,
                  "exit 1 on any SLOWER or PASS->FAIL, or when no pair was compared");
    cmp->add_option("--format", co.format, "text | md | csv | json")->capture_default_str();
    cmp->add_option("-o,--output", co.output, "write to this file instead of stdout");
    cmp->footer(cli::compare_help_footer());

    cli::report_options rpo;
    auto* rep = app.add_subcommand(
        "report", "one self-contained HTML file (or Markdown, CSV) with charts of runs");
    rep->add_option("runs", rpo.runs, "run ids or labels; later runs are compared with the first")
        ->required();
    rep->add_option("--db", rpo.db, "the SQLite store")->capture_default_str();
    rep->add_option("-o,--output", rpo.output,
                    "report.html | report.md | report.csv (default: HTML on stdout)");
    rep->add_option("--format", rpo.format, "html | md | csv (default: from -o)");
    rep->add_option("--baseline-variant", rpo.baseline_variant,
                    "within each run, the variant the others are compared to")
        ->capture_default_str();
    rep->add_option("--allow-diff", rpo.allow_diff,
                    "as for compare: declared differences between runs")
        ->allow_extra_args(false);
    rep->add_option("--threshold", rpo.threshold, "practical threshold of the verdicts")
        ->capture_default_str();
    rep->footer(cli::compare_help_footer());
    cli::decode_options dopt;
    auto* decode = cli::add_decode_command(app, dopt);

    // A value given twice is reported by check_given, in fourfold's words, not refused by CLI11.
    for (auto* sub : app.get_subcommands([](CLI::App*) { return true; }))
        for (auto* opt : sub->get_options([](CLI::Option*) { return true; }))
            if (opt->get_items_expected_max() <= 1)
                opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    try {
        app.parse(argc, argv);
        check_given(app);
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        std::cout << app.help("", CLI::AppFormatMode::All);
        return 0;
    } catch (const CLI::CallForVersion& e) {
        std::cout << e.what() << '\n';
        return 0;
    } catch (const CLI::ParseError& e) {
        return fail(2, parse_message(app, e, std::vector<std::string>(argv + 1, argv + argc)));
    } catch (const bad_input& e) {
        return fail(2, e.what());
    }

    try {
        if (*env)
            return cli::env_command(env_device, env_json);
        if (*list)
            return cli::list_command(list_json);
        if (*run) {
            ro.command_line = joined_args(argc, argv);
            if (isolate_opt->count() && no_isolate_opt->count())
                throw bad_input("--isolate and --no-isolate contradict each other; give one");
            if (isolate_opt->count())
                ro.isolate = true;
            if (no_isolate_opt->count())
                ro.isolate = false;
            if (resume_opt->count()) {
                // the run's own request and settings are used: none may be given beside it
                std::vector<std::string> given;
                for (const char* name :
                     {"--suite", "--workload", "--shape", "--param", "--dtype", "--variants",
                      "--device", "--ledgers", "--label", "--timing", "--cache", "--min-time",
                      "--min-samples", "--timeout", "--max-rel-stdev", "--warmup", "--seed",
                      "--threads"})
                    if (run->get_option(name)->count())
                        given.emplace_back(name);
                if (!given.empty())
                    throw bad_input(fmt::format(
                        "--resume takes the request and settings of the run it resumes; leave "
                        "out {} (--db, --isolate, --no-isolate, --watchdog-margin, --quiet and "
                        "--format may be given)",
                        join(given, ", ")));
            }
            return cli::run_command(ro);
        }
        if (*runs)
            return cli::runs_command(rso);
        if (*exp)
            return cli::export_command(eo);
        if (*cmp)
            return cli::compare_command(co);
        if (*rep)
            return cli::report_command(rpo);
        if (*decode) {
            dopt.command_line = joined_args(argc, argv);
            return cli::decode_command(dopt);
        }
    } catch (const bad_input& e) {
        return fail(2, e.what());
    } catch (const device_error& e) {
        return fail(3, e.what());
    } catch (const write_error& e) {
        return fail(3, e.what());
    } catch (const c10::Error& e) {
        return fail(3, first_line(e.what_without_backtrace()));
    } catch (const std::exception& e) {
        return fail(3, e.what());
    }
    return fail(2, "no command; see 'fourfold --help'");
}
