// fourfold decode: the decode workload over a model and context lengths, through the same plan,
// runner, store and tables as `fourfold run` (it builds a run request; no second code path).
#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/workloads/models/model_config.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>

namespace fourfold::cli {

CLI::App* add_decode_command(CLI::App& app, decode_options& o) {
    auto* d = app.add_subcommand(
        "decode", "decode tokens/s of a model at given context lengths (the decode workload: "
                  "throughput, correctness and memory ledgers)");
    d->add_option("--model", o.model,
                  "a preset (" + join(workloads::models::preset_names(), ", ") +
                      ") or a directory with a Hugging Face config.json and *.safetensors")
        ->required();
    d->add_flag("--random-weights", o.random_weights,
                "a directory's model with seeded random weights of its shapes, its checkpoint (or "
                "its lack of one) set aside; presets always have random weights");
    d->add_option("--ctx", o.ctx, "context lengths (prompt tokens before decoding), a comma list")
        ->capture_default_str();
    d->add_option("--tokens", o.tokens, "decode steps timed per round")->capture_default_str();
    d->add_option("--mode", o.mode,
                  "eager | graph, or both as a list (default: eager,graph on "
                  "CUDA, eager elsewhere)");
    d->add_option("--device", o.device, "cpu | cuda[:i] | mps")->capture_default_str();
    d->add_option("--dtype", o.dtypes, "bf16, fp16, fp32 (a comma list sweeps; default bf16)")
        ->allow_extra_args(false);
    d->add_option("--variants", o.variants,
                  "stock, generic, native, native_fused (default: stock and generic for MoE "
                  "models, stock for dense ones)")
        ->allow_extra_args(false);
    d->add_option("--weights", o.weights,
                  "how the projections are stored: model (the job's dtype) or fp8_row (e4m3 with a "
                  "float32 scale a row, E3; stock dequantises, native runs the FP8 GEMV); a comma "
                  "list sweeps");
    d->add_option("--ledgers", o.ledgers, "throughput,correctness,memory or a subset")
        ->capture_default_str();
    d->add_option("--init-seed", o.init_seed,
                  "seed of the random weights and the prompt, 0..2147483647 (default 1)");
    d->add_option("--db", o.db, "the SQLite store")->capture_default_str();
    d->add_option(
        "--label", o.label,
        "a label for this run; printable, one line, not digits only (those name run ids)");
    d->add_option("--min-time", o.min_time_s,
                  "seconds of timed decode rounds at least (default 0.5)");
    d->add_option("--timeout", o.timeout_s, "seconds of timed decode rounds at most (default 15)");
    d->add_option("--threads", o.threads, threads_help());
    d->add_flag("--quiet", o.quiet, "no progress line");
    d->add_option("--format", o.format,
                  "text | md | csv | json: how the tables print on stdout (csv and json: the "
                  "run's records as 'fourfold export' writes them)")
        ->capture_default_str();
    d->add_flag("--print-config", o.print_config,
                "print the model's Hugging Face config.json (for transformers) and exit");
    return d;
}

int decode_command(const decode_options& o) {
    std::vector<std::string> models;
    for (const auto& m : split(o.model, ',')) {
        if (trim(m).empty())
            throw bad_input(fmt::format("--model '{}' has an empty item; give a comma list of "
                                        "presets or directories with none empty",
                                        o.model));
        models.push_back(trim(m));
    }
    if (o.print_config) {
        if (models.size() != 1)
            throw bad_input("--print-config takes one --model");
        std::cout << workloads::models::resolve_model(models[0]).config.to_hf_config().dump(2)
                  << '\n';
        return 0;
    }
    std::uint64_t tokens = 0;
    if (!parse_uint(o.tokens, tokens) || tokens < 1 || tokens > (1u << 16))
        throw bad_input(
            fmt::format("--tokens '{}' is out of range; valid: 1..{}", o.tokens, 1u << 16));
    // random weights are asked for by name: a directory's model gets them only with the flag
    if (o.random_weights)
        for (auto& m : models)
            m = workloads::models::with_random_weights(m);

    run_options r;
    r.workload = "decode";
    r.params = {"model=" + join(models, ","), "ctx=" + o.ctx, fmt::format("tokens={}", tokens)};
    const bool cuda = starts_with(o.device, "cuda");
    r.params.push_back("mode=" + o.mode.value_or(cuda ? "eager,graph" : "eager"));
    if (o.init_seed)
        r.params.push_back("init_seed=" + *o.init_seed);
    if (o.weights)
        r.params.push_back("weights=" + *o.weights);
    r.dtypes = o.dtypes;
    r.variants = o.variants;
    if (r.variants.empty()) {
        // generic differs from stock only in MoE layers: dense models get stock alone.
        bool any_moe = false;
        for (const auto& m : models)
            any_moe = any_moe || workloads::models::resolve_model(m).config.has_moe();
        r.variants = {any_moe ? "stock,generic" : "stock"};
    }
    r.device = o.device;
    r.ledgers = o.ledgers;
    r.db = o.db;
    r.label = o.label;
    r.min_time_s = o.min_time_s;
    r.timeout_s = o.timeout_s;
    r.threads = o.threads;
    r.quiet = o.quiet;
    r.format = o.format;
    r.command_line = o.command_line;
    return run_command(r);
}

} // namespace fourfold::cli
