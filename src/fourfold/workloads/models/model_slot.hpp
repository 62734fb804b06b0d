#pragma once
// One whole model lives on the device at a time, shared by every job of it (contexts, modes,
// variants) and dropped when a job of another model asks, so that a run over two 60 GB models
// never holds both. Cases keep only weak references between calls. The slot is one for every
// kind of model (a decoder's weights, a VAE's): the device's memory is one too.
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>

namespace fourfold::workloads::models {

class model_slot {
  public:
    // The model under `key`, built by `build` (after the previous model is freed) when the slot
    // holds another.
    template <class Model>
    static std::shared_ptr<Model> acquire(const std::string& key,
                                          const std::function<std::shared_ptr<Model>()>& build) {
        return std::static_pointer_cast<Model>(acquire_erased(
            typed(typeid(Model), key), [&] { return std::shared_ptr<void>(build()); }));
    }
    // Frees the model under `key` if the slot holds it.
    template <class Model> static void release(const std::string& key) {
        release_erased(typed(typeid(Model), key));
    }
    // Frees whatever model the slot holds (a group of another kind of job is next).
    static void release_all();
    // Whether the slot holds the model under `key` (for tests).
    template <class Model> static bool holds(const std::string& key) {
        return holds_erased(typed(typeid(Model), key));
    }

  private:
    // Two kinds of model never share a key, so a cast back is always to the type stored.
    static std::string typed(const std::type_info& type, const std::string& key);
    static std::shared_ptr<void>
    acquire_erased(const std::string& key, const std::function<std::shared_ptr<void>()>& build);
    static void release_erased(const std::string& key);
    static bool holds_erased(const std::string& key);
};

} // namespace fourfold::workloads::models
