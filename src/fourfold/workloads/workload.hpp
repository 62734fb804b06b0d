#pragma once
// A workload: a named, parameterised piece of work with variants (DESIGN.md). Each workload is
// one file under ops/ or models/ that registers itself with FOURFOLD_WORKLOAD and declares its
// parameters, variants, dtypes, ledgers, bytes moved and FLOPs, how it builds inputs from a seed,
// how each variant runs, and its float64 reference.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/dtype.hpp"
#include "fourfold/core/json.hpp"
#include "fourfold/core/ledger.hpp"
#include "fourfold/measure/correctness.hpp"
#include "fourfold/measure/timing.hpp"

#include <ATen/Tensor.h>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace fourfold::workloads {

enum class param_kind { integer, boolean, text };

struct param_spec {
    std::string name;
    param_kind kind = param_kind::integer;
    std::string default_value; // in the CLI's text form
    std::string help;
    std::int64_t min = 1;
    std::int64_t max = std::numeric_limits<std::int32_t>::max();
    std::vector<std::string> choices; // text parameters: the allowed values
    // Left out of a job's params (so of its records and its case key) while at its default: a
    // parameter added after records of the workload were stored, whose default is what those
    // records measured, so that they still pair with new ones in compare.
    bool omit_at_default = false;
    json default_json() const; // the default as a job's params hold it
    json to_json() const;
};

// What a variant needs of the build and the device. The runner asks `unavailable()` once before
// a variant runs: a need not met is a skip with its reason, decided here for every workload
// alike (a case adds its own shape-dependent reasons through workload_case::unsupported).
struct variant_needs {
    bool native_kernels = false; // fourfold's CUDA kernels (kernels/), on a CUDA device
    std::vector<backend::device_kind> devices; // the device kinds it runs on; empty: every kind
    std::vector<std::string> features;         // capabilities::features names (grouped_mm, ...)
    int torch_major = 0, torch_minor = 0;      // the oldest libtorch it runs on
    // libtorch ops it calls in the job's dtype (backend/op_support.hpp names): each is tried once
    // per device and dtype, and one without a kernel there makes the variant a skip
    std::vector<std::string> ops;
    json to_json() const;
};

// Why `needs` is not met on this build and device for a job of dtype `t`; nullopt when it is.
std::optional<std::string> unmet(const variant_needs& needs, backend::device& dev, dtype t);

// Frees the whole model kept resident between job groups (models/model_slot.hpp), if any: what
// the runner calls before a group whose case does not use it (workload_case::uses_shared_model).
void release_shared_model();

struct variant_spec {
    std::string name;
    std::string help;
    bool host_sync = false; // synchronises with the host: no graph capture, recorded as such
    bool test_only = false; // registered by a test binary, never offered by the CLI
    variant_needs needs;
    json to_json() const;
};

// The minimum traffic and arithmetic of one call: each input read once, each output written
// once. Achieved bandwidth and % of the device's measured bandwidth derive from it.
struct cost {
    double bytes_read = 0;
    double bytes_written = 0;
    double flops = 0;
    std::string note;
    double bytes() const { return bytes_read + bytes_written; }
    json to_json() const;
};

// A job's inputs as named slots ("x", "weight", "offsets", ...), in the order they were added.
class input_set {
  public:
    input_set& add(std::string name, at::Tensor tensor);
    // The slot `name`; throws std::logic_error naming the slots there are.
    const at::Tensor& operator[](std::string_view name) const;
    bool has(std::string_view name) const;
    const std::vector<std::string>& names() const { return m_names; }
    const std::vector<at::Tensor>& tensors() const { return m_tensors; }
    std::int64_t bytes() const;
    input_set to(const c10::Device& device) const;
    input_set clone() const;

  private:
    std::vector<std::string> m_names;
    std::vector<at::Tensor> m_tensors;
};

// What a variant runs with besides its case and inputs: the device and the stream its native
// kernels launch on, and a place to say which configuration a call chose (a kernel's block size,
// split count, path), which the runner copies into the records' facts.
class call_context {
  public:
    explicit call_context(backend::device& dev, json* facts = nullptr)
        : m_dev(&dev), m_facts(facts) {}
    backend::device& device() const { return *m_dev; }
    // The device's current stream when the call runs (the capture stream during a capture).
    void* stream() const { return m_dev->native_stream(); }
    // Only the correctness pass's call listens; timed calls pass no sink and pay nothing.
    bool wants_facts() const { return m_facts != nullptr; }
    void fact(const std::string& key, json value) const {
        if (m_facts)
            (*m_facts)[key] = std::move(value);
    }

  private:
    backend::device* m_dev;
    json* m_facts;
};

// The float64 reference of one slice of the output: `values` covers [start, start + size(dim))
// along dimension `dim` of the whole output.
struct reference_chunk {
    std::int64_t dim = 0;
    std::int64_t start = 0;
    at::Tensor values;
};

struct reference_plan {
    std::int64_t chunks = 1;
    std::function<reference_chunk(std::int64_t index)> chunk;
    std::int64_t chunk_bytes_bound = measure::k_reference_chunk_bytes;
    std::string method; // what the reference computes, in words
};

// Splits [0, total) along `dim` into chunks whose float64 working set (`bytes_per_unit` per
// unit of the dimension) stays under the bound; `compute(start, length)` gives one chunk.
reference_plan chunked_reference(std::int64_t dim, std::int64_t total, std::int64_t bytes_per_unit,
                                 std::string method,
                                 std::function<at::Tensor(std::int64_t, std::int64_t)> compute);

// Workload-specific correctness figures beside the shared metrics (decode: top-1 agreement and
// KL divergence of logits). Fed the same output slices and reference chunks as the shared error
// accumulator; a check it fails fails the verdict.
class extra_metrics {
  public:
    struct result {
        json metrics = json::object();
        std::vector<std::string> failed_checks;
    };
    virtual ~extra_metrics() = default;
    // `out`: a CPU slice of the output; `ref`: the float64 reference of the same slice, which
    // starts at `start` along dimension `dim` of the whole output.
    virtual void add(const at::Tensor& out, const at::Tensor& ref, std::int64_t dim,
                     std::int64_t start) = 0;
    virtual result finish() = 0;
};

struct case_args {
    std::string workload;
    json params; // canonical values, every declared parameter present
    dtype type = dtype::fp32;
    std::int64_t get_int(const std::string& name) const;
    bool get_bool(const std::string& name) const;
    std::string get_text(const std::string& name) const;
};

// What a whole-model workload's throughput pass produced for one job.
struct throughput_result {
    json figures = json::object(); // tokens_per_s, ms_per_token (stats), prefill_ms, ctx, mode, ...
    std::vector<double> samples_ms;     // ms per step (a token; a VAE's tile), raw
    std::string unit = "tokens/s";      // the rate's unit: the workload's own (frames/s for a VAE)
    std::string step_unit = "ms/token"; // the unit of samples_ms (ms per step of `unit`)
    std::string context_axis = "ctx";   // the job parameter that is its context (empty: none)
};

struct throughput_context {
    backend::device& dev;
    double bandwidth_bytes_per_s = 0; // the run's measured ceiling, for the bandwidth limit
    measure::timing_settings timing;
};

// A workload bound to parameter values and a dtype.
class workload_case {
  public:
    explicit workload_case(const case_args& args) : m_args(args) {}
    virtual ~workload_case() = default;

    const case_args& args() const { return m_args; }
    virtual cost declared_cost() const = 0;
    // Inputs generated on the CPU from the seed (seeded_* in inputs.hpp), in the job's dtype.
    virtual input_set make_inputs(std::uint64_t seed) const = 0;
    virtual reference_plan reference(const input_set& cpu_inputs) const = 0;
    // Why `variant` cannot run on this device and build; nullopt when it can.
    virtual std::optional<std::string> unsupported(const std::string& variant,
                                                   const backend::device& dev) const {
        return std::nullopt;
    }
    virtual measure::tolerance tolerance() const;
    // The tolerance one variant is held to: the case's, unless a variant computes a documented
    // approximation of the function (fp8 weights against the bf16 reference, say).
    virtual measure::tolerance variant_tolerance(const std::string& variant) const {
        return tolerance();
    }
    // The ideal traffic of one variant: the case's, unless variants read the same function's
    // inputs in different storage (fp8 weights are half the bytes of bf16 ones).
    virtual cost variant_cost(const std::string& variant) const { return declared_cost(); }
    // Facts about a variant that every record of it carries under "facts" (storage bytes of its
    // weights, the path it takes, whether it synchronised with the host, ...).
    virtual json variant_facts(const std::string& variant) const { return json::object(); }
    // The throughput ledger, for workloads that declare it: runs the job (prefill, then decode
    // steps) on inputs already on the device and returns its figures.
    virtual throughput_result measure_throughput(const std::string& variant, const input_set& in,
                                                 const throughput_context& ctx) const;
    // Correctness figures of its own beside the shared ones; nullptr for the shared ones only.
    virtual std::unique_ptr<extra_metrics> make_extra_metrics() const { return nullptr; }
    // The same for one variant, given the CPU inputs the reference is computed from: a variant
    // that computes a documented approximation (fp8 weights against the bf16 reference) checks
    // its own error here against the exact product of what it computes. make_extra_metrics()
    // unless the workload says other.
    virtual std::unique_ptr<extra_metrics> make_variant_metrics(const std::string& variant,
                                                                const input_set& cpu_inputs) const {
        return make_extra_metrics();
    }
    // The call the memory pass repeats under the sampler; empty means the variant's function.
    // A whole-model workload whose variant function runs a reduced twin (for correctness)
    // returns the real model's work here. Called before the pass takes its baseline, so that
    // what the case keeps (its weights) is built first.
    virtual std::function<void()> memory_call(const std::string& variant, const input_set& in,
                                              backend::device& dev) const {
        return {};
    }
    // The output dtype (for the tolerance and ULPs); the job dtype unless a workload says other.
    virtual dtype output_dtype() const { return m_args.type; }
    // Whether the case's variants run on the one whole model kept resident between job groups
    // (models/model_slot.hpp: a decoder's, a VAE's weights). The runner frees that model before
    // a group whose case does not, so that no other job measures with it resident.
    virtual bool uses_shared_model() const { return false; }

  private:
    case_args m_args;
};

using variant_fn =
    std::function<at::Tensor(const workload_case&, const call_context&, const input_set&)>;
using case_factory = std::function<std::unique_ptr<workload_case>(const case_args&)>;

struct workload {
    std::string name;
    std::string description;
    std::vector<std::string> shape_params; // --shape AxBxC fills these, in order
    std::vector<param_spec> params;
    std::vector<dtype> dtypes;
    ledger_set ledgers = ledger_set::of({ledger::op_time, ledger::correctness, ledger::memory});
    std::vector<variant_spec> variants;
    std::map<std::string, variant_fn> variant_fns;
    case_factory make_case;

    const variant_spec* find_variant(const std::string& variant) const;
    const param_spec* find_param(const std::string& param) const;
    std::vector<std::string> user_variant_names() const;
    bool supports(dtype t) const;
    // Why `variant` cannot run for case `c` on this build and device (its declared needs, then
    // the case's own reasons); nullopt when it can.
    std::optional<std::string> unavailable(const std::string& variant, const workload_case& c,
                                           backend::device& dev) const;
    at::Tensor run(const std::string& variant, const workload_case& c, const call_context& ctx,
                   const input_set& in) const;
    json to_json() const;
};

class registry {
  public:
    static registry& instance();
    workload& add(std::string name);
    const workload* find(std::string_view name) const;
    std::vector<const workload*> all() const;
    std::string names() const;
    // For test binaries: a variant composed from the workload's own (see tests/).
    void add_test_variant(const std::string& workload_name, variant_spec spec, variant_fn fn);

  private:
    std::map<std::string, std::unique_ptr<workload>, std::less<>> m_workloads;
};

// Fluent registration (google/benchmark style): see ops/softmax.cpp.
template <class Case> class workload_builder {
  public:
    explicit workload_builder(std::string name) : m_w(&registry::instance().add(std::move(name))) {
        if constexpr (!std::is_abstract_v<Case>)
            m_w->make_case = [](const case_args& a) { return std::make_unique<Case>(a); };
    }
    // Cases of one workload that differ by a parameter (moe_decode's part): the factory picks
    // the class, every one a Case, so the variants (members of Case) serve them all.
    workload_builder& make_case(std::function<std::unique_ptr<Case>(const case_args&)> factory) {
        m_w->make_case =
            [factory = std::move(factory)](const case_args& a) -> std::unique_ptr<workload_case> {
            return factory(a);
        };
        return *this;
    }
    workload_builder& describe(std::string text) {
        m_w->description = std::move(text);
        return *this;
    }
    workload_builder& shape(std::vector<std::string> names) {
        m_w->shape_params = std::move(names);
        return *this;
    }
    workload_builder& param_int(std::string name, std::int64_t def, std::string help,
                                std::int64_t min = 1,
                                std::int64_t max = std::numeric_limits<std::int32_t>::max()) {
        m_w->params.push_back({std::move(name),
                               param_kind::integer,
                               std::to_string(def),
                               std::move(help),
                               min,
                               max,
                               {}});
        return *this;
    }
    workload_builder& param_bool(std::string name, bool def, std::string help) {
        m_w->params.push_back({std::move(name),
                               param_kind::boolean,
                               def ? "true" : "false",
                               std::move(help),
                               0,
                               1,
                               {}});
        return *this;
    }
    workload_builder& param_text(std::string name, std::string def,
                                 std::vector<std::string> choices, std::string help) {
        m_w->params.push_back({std::move(name), param_kind::text, std::move(def), std::move(help),
                               0, 0, std::move(choices)});
        return *this;
    }
    // The parameter declared last is left out of a job's params while at its default (see
    // param_spec::omit_at_default).
    workload_builder& omit_at_default() {
        m_w->params.back().omit_at_default = true;
        return *this;
    }
    workload_builder& dtypes(std::vector<dtype> types) {
        m_w->dtypes = std::move(types);
        return *this;
    }
    workload_builder& ledgers(ledger_set set) {
        m_w->ledgers = set;
        return *this;
    }
    using member_variant = at::Tensor (Case::*)(const call_context&, const input_set&) const;
    workload_builder& variant(std::string name, member_variant fn, std::string help,
                              bool host_sync = false, variant_needs needs = {}) {
        m_w->variant_fns[name] = [fn](const workload_case& c, const call_context& ctx,
                                      const input_set& in) {
            return (static_cast<const Case&>(c).*fn)(ctx, in);
        };
        m_w->variants.push_back(
            {std::move(name), std::move(help), host_sync, false, std::move(needs)});
        return *this;
    }
    // A variant of fourfold's own CUDA kernels (see kernels/): a skip with its reason wherever
    // they cannot run (a CPU, MPS, a build without them).
    workload_builder& native_variant(std::string name, member_variant fn, std::string help) {
        variant_needs needs;
        needs.native_kernels = true;
        needs.devices = {backend::device_kind::cuda};
        return variant(std::move(name), fn, std::move(help), false, std::move(needs));
    }

  private:
    workload* m_w;
};

#define FOURFOLD_CONCAT_INNER(a, b) a##b
#define FOURFOLD_CONCAT(a, b) FOURFOLD_CONCAT_INNER(a, b)
// FOURFOLD_WORKLOAD(case_type, "name").describe(...).param_int(...).variant(...);
#define FOURFOLD_WORKLOAD(case_type, name)                                                         \
    [[maybe_unused]] static auto FOURFOLD_CONCAT(fourfold_workload_, __LINE__) =                   \
        ::fourfold::workloads::workload_builder<case_type>(name)

} // namespace fourfold::workloads
