#pragma once
// A model's step captured once as a graph and replayed: the step's body reads its inputs (a
// token, a position, a tile index) from device tensors and has static shapes, so one capture
// serves every later step. Until capture() the body runs eagerly.
#include <functional>
#include <memory>

namespace fourfold::backend {
class device;
class captured_graph;
} // namespace fourfold::backend

namespace fourfold::workloads::models {

class captured_step {
  public:
    captured_step();
    ~captured_step();
    captured_step(const captured_step&) = delete;
    captured_step& operator=(const captured_step&) = delete;

    // Captures `body` through the device's graph capture (which runs it once to warm up and
    // once under capture: whatever state the body moves on, the caller puts back).
    void capture(backend::device& dev, const std::function<void()>& body);
    bool captured() const { return m_graph != nullptr; }
    // The replay once captured, else `eager`.
    void run(const std::function<void()>& eager);

  private:
    std::unique_ptr<backend::captured_graph> m_graph;
};

} // namespace fourfold::workloads::models
