#pragma once
// The base of a whole-model workload (decode; a VAE's tiled decode or its round trip): what each
// such workload needs besides its model's own code, so that a new one is its model and one file.
//  - One resident model (model_slot.hpp) shared by every job of the same weights on a device,
//    built on a job's first call, freed when a job of other weights asks or the last case of it
//    goes.
//  - A reduced twin on the CPU (a decoder's first layers; a VAE's smaller input) for the float64
//    reference, made once per resident model; the reference is computed once per model and
//    inputs and shared by every variant of a job.
//  - Weights random from a seed, or a checkpoint directory validated whole before anything runs
//    (open_checkpoint).
//  - The skips every such workload words alike: no graph capture for mode=graph, the model and
//    its per-job state over the device's memory.
//  - For measure_throughput: the step timer (measure/step_timer.hpp, the shared stopping rule),
//    a step captured as a graph (captured_step.hpp), and throughput_result's unit and context
//    axis, which the workload states.
#include "fourfold/backend/device.hpp"
#include "fourfold/workloads/models/model_slot.hpp"
#include "fourfold/workloads/models/safetensors.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/Tensor.h>
#include <c10/core/Device.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace fourfold::workloads::models {

// The checkpoint in `directory`, nullptr for random weights (no directory, or random weights
// asked for by name). A directory with a config but no *.safetensors is bad_input unless random
// weights were asked for: measuring it would time random numbers under the checkpoint's name.
std::unique_ptr<checkpoint> open_checkpoint(const std::optional<std::filesystem::path>& directory,
                                            bool has_weights, bool random_weights);

// Why `what` (its weights and `state_name`, the per-job state: a KV cache, a tile's activations)
// does not fit in 92 % of the device's memory; nullopt when it fits.
std::optional<std::string> memory_shortfall(const backend::device& dev, const std::string& what,
                                            double weights_bytes, const std::string& state_name,
                                            double state_bytes);

// "mode=graph: <why>" where the device cannot capture graphs; nullopt where it can.
std::optional<std::string> graph_capture_missing(const backend::device& dev);

// Same shape, dtype and values (a reference's inputs, compared before it is reused).
bool same_tensor_values(const at::Tensor& a, const at::Tensor& b);

// What the slot holds for one model.
template <class Weights> struct resident_model {
    std::shared_ptr<const Weights> weights; // on the job's device
    std::shared_ptr<const Weights> twin;    // the reduced twin on the CPU, made on first use
    at::Tensor reference_inputs;            // what `reference` was computed for (CPU)
    at::Tensor reference;                   // the twin's float64 reference over them
};

// Bound to `Weights`, the model's own weights type (decoder_weights; a VAE's).
template <class Weights> class model_case : public workload_case {
  public:
    using resident = resident_model<Weights>;
    ~model_case() override {
        if (!m_key.empty())
            model_slot::release<resident>(m_key);
    }

    bool uses_shared_model() const override { return true; }

  protected:
    using workload_case::workload_case;

    // What makes the weights (model, dtype, seed or checkpoint): jobs with the same key on one
    // device share one resident copy.
    virtual std::string weights_key() const = 0;
    // The weights on `device`, random or loaded: once per resident model.
    virtual Weights build_weights(c10::Device device) const = 0;
    // The reduced twin of `weights`, on the CPU in the same dtype (the reference upcasts it).
    virtual Weights make_twin(const Weights& weights) const = 0;

    // The resident model on `device`, built when the slot holds another.
    std::shared_ptr<resident> acquire(c10::Device device) const {
        m_key = weights_key() + "|" + device.str();
        auto model = model_slot::acquire<resident>(m_key, [&] {
            auto m = std::make_shared<resident>();
            m->weights = std::make_shared<const Weights>(build_weights(device));
            return m;
        });
        m_last = model;
        return model;
    }

    // The model a variant of this case last ran: a job's reference is planned after its first
    // variant call built the model.
    std::shared_ptr<resident> last_model() const {
        auto model = m_last.lock();
        if (!model)
            throw std::logic_error(args().workload +
                                   ": the reference runs after a variant built the model");
        return model;
    }

    // The twin's float64 reference over `inputs` (CPU), computed by `compute` once per model
    // and inputs: every variant of a job, and every chunk of its reference, reads the same one.
    const at::Tensor& twin_reference(
        resident& model, const at::Tensor& inputs,
        const std::function<at::Tensor(const Weights&, const at::Tensor&)>& compute) const {
        if (!model.twin)
            model.twin = std::make_shared<const Weights>(make_twin(*model.weights));
        if (!model.reference.defined() || !same_tensor_values(model.reference_inputs, inputs)) {
            model.reference = compute(*model.twin, inputs);
            model.reference_inputs = inputs.clone();
        }
        return model.reference;
    }

  private:
    mutable std::string m_key;
    mutable std::weak_ptr<resident> m_last;
};

} // namespace fourfold::workloads::models
