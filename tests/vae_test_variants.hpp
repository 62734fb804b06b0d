#pragma once
// Test-only variants of the VAE workloads, shared by the CPU and the GPU test binaries.
#include "fourfold/workloads/models/vae_case.hpp"
#include "fourfold/workloads/models/vae_session.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <utility>
#include <vector>

namespace fourfold::testing {

using workloads::models::pad_function;
using workloads::models::vae_pad_seam;

// The report's MPS bug in two forms: every pad on the wrong side (the causal time pad behind
// the frame, the downsamplers' (0, 1, 0, 1) on the left and top), and the right side with the
// wrong value.
inline void register_wrong_pads() {
    static const bool once = [] {
        auto& reg = workloads::registry::instance();
        auto seam = [](const pad_function& pad) {
            return [pad](const workloads::workload_case& c, const workloads::call_context& ctx,
                         const workloads::input_set& in) {
                return dynamic_cast<const vae_pad_seam&>(c).run_with_pad(ctx, in, pad);
            };
        };
        const pad_function wrong_side = [](const at::Tensor& x, c10::IntArrayRef pads,
                                           double value) {
            std::vector<std::int64_t> swapped(pads.begin(), pads.end());
            for (std::size_t i = 0; i + 1 < swapped.size(); i += 2)
                std::swap(swapped[i], swapped[i + 1]);
            return at::constant_pad_nd(x, swapped, value);
        };
        const pad_function wrong_value = [](const at::Tensor& x, c10::IntArrayRef pads, double) {
            return at::constant_pad_nd(x, pads, 1.0);
        };
        // (named fields: a braced pair leaves host_sync, test_only and needs to
        // -Wmissing-field-initializers)
        const auto spec = [](const char* name, const char* help) {
            workloads::variant_spec s;
            s.name = name;
            s.help = help;
            return s;
        };
        for (const char* w : {"vae_roundtrip", "vae_decode"}) {
            reg.add_test_variant(w, spec("wrong_pad_side", "every pad on the other side"),
                                 seam(wrong_side));
            reg.add_test_variant(w, spec("wrong_pad_value", "pads of ones"), seam(wrong_value));
        }
        return true;
    }();
    (void)once;
}

} // namespace fourfold::testing
