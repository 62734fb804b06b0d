#include "fourfold/workloads/models/model_slot.hpp"

#include "fourfold/workloads/workload.hpp"

namespace fourfold::workloads::models {
namespace {

struct slot_state {
    std::string key;
    std::shared_ptr<void> model;
};

slot_state& slot() {
    static slot_state s;
    return s;
}

} // namespace

std::string model_slot::typed(const std::type_info& type, const std::string& key) {
    return std::string(type.name()) + "|" + key;
}

std::shared_ptr<void>
model_slot::acquire_erased(const std::string& key,
                           const std::function<std::shared_ptr<void>()>& build) {
    auto& s = slot();
    if (s.model && s.key == key)
        return s.model;
    s.model.reset(); // frees the previous model before the next one is built
    s.key.clear();
    auto model = build();
    s.model = model;
    s.key = key;
    return model;
}

void model_slot::release_erased(const std::string& key) {
    auto& s = slot();
    if (s.model && s.key == key) {
        s.model.reset();
        s.key.clear();
    }
}

void model_slot::release_all() {
    auto& s = slot();
    s.model.reset();
    s.key.clear();
}

bool model_slot::holds_erased(const std::string& key) {
    const auto& s = slot();
    return s.model && s.key == key;
}

} // namespace fourfold::workloads::models

namespace fourfold::workloads {

void release_shared_model() {
    models::model_slot::release_all();
}

} // namespace fourfold::workloads
