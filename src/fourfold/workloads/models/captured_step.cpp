#include "fourfold/workloads/models/captured_step.hpp"

#include "fourfold/backend/device.hpp"

namespace fourfold::workloads::models {

captured_step::captured_step() = default;
captured_step::~captured_step() = default;

void captured_step::capture(backend::device& dev, const std::function<void()>& body) {
    m_graph = dev.capture(body);
}

void captured_step::run(const std::function<void()>& eager) {
    if (m_graph)
        m_graph->replay();
    else
        eager();
}

} // namespace fourfold::workloads::models
