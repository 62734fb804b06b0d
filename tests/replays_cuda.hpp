#pragma once
// Shared by the GPU tests of chains of dependent launches (test_gemv_fp8_cuda.cpp,
// test_dependent_launch_cuda.cpp): a chain captured once and replayed, its inputs poisoned before
// each replay, its outputs the same bits every time.
#include "fourfold/backend/device.hpp"

#include <ATen/ATen.h>
#include <cstddef>
#include <functional>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace fourfold::testing {

// A chain of launches captured once and replayed 3 times, `poison` run before each replay: every
// tensor of `outputs()` the same bits as `expected` (named by `what`), each time. Nothing where
// the device has no graph capture.
inline void expect_replays_give(backend::device& dev, const std::function<void()>& run,
                                const std::function<void()>& poison,
                                const std::function<std::vector<at::Tensor>()>& outputs,
                                const std::vector<at::Tensor>& expected,
                                const std::function<std::string(std::size_t)>& what) {
    if (!dev.caps().graphs)
        return;
    const auto graph = dev.capture(run);
    for (int replay = 0; replay < 3; ++replay) {
        poison();
        graph->replay();
        dev.synchronize();
        const auto y = outputs();
        for (std::size_t i = 0; i < y.size(); ++i)
            ASSERT_TRUE(at::equal(y[i], expected[i]))
                << what(i) << ", replay " << replay << ": max diff "
                << (y[i].to(at::kDouble) - expected[i].to(at::kDouble)).abs().max().item<double>();
    }
}

} // namespace fourfold::testing
