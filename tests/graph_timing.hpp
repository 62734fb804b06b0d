#pragma once
// Shared by the GPU tests that print a kernel's time (test_moe_cuda.cpp,
// test_decode_attention_cuda.cpp): µs a call of `body`, from one captured graph of `calls` calls,
// the best of 10 replays after a warm one (CUDA events around each replay). A printed figure for
// docs/performance.md, never a timed assertion.
#include "fourfold/backend/device.hpp"

#include <algorithm>
#include <functional>

namespace fourfold::testing {

inline double graph_us_per_call(backend::device& dev, int calls,
                                const std::function<void()>& body) {
    auto graph = dev.capture([&] {
        for (int i = 0; i < calls; ++i)
            body();
    });
    graph->replay(); // warm
    auto start = dev.make_event(), stop = dev.make_event();
    double best = 1e30;
    for (int r = 0; r < 10; ++r) {
        start->record();
        graph->replay();
        stop->record();
        dev.synchronize();
        best = std::min(best, stop->elapsed_ms_since(*start) * 1e3 / calls);
    }
    return best;
}

} // namespace fourfold::testing
