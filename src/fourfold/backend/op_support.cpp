#include "fourfold/backend/op_support.hpp"

#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/core/text.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <mutex>
#include <torch/version.h>

namespace fourfold::backend {
namespace {

using probe = std::function<void(const at::TensorOptions&)>;

// Each probe is the op on the smallest input that reaches its kernel for the dtype.
const std::map<std::string, probe, std::less<>>& probes() {
    static const std::map<std::string, probe, std::less<>> k{
        {"matmul",
         [](const at::TensorOptions& o) {
             (void)at::matmul(at::ones({2, 8}, o), at::ones({8, 2}, o));
         }},
        {"linear",
         [](const at::TensorOptions& o) {
             (void)at::linear(at::ones({2, 8}, o), at::ones({4, 8}, o), at::ones({4}, o));
         }},
        {"softmax",
         [](const at::TensorOptions& o) {
             (void)at::softmax(at::ones({2, 8}, o), -1);
         }},
        {"exp",
         [](const at::TensorOptions& o) {
             (void)at::ones({2, 8}, o).exp();
         }},
        {"max",
         [](const at::TensorOptions& o) {
             (void)at::ones({2, 8}, o).max(-1, true);
         }},
        {"sum",
         [](const at::TensorOptions& o) {
             (void)at::ones({2, 8}, o).sum(-1, true);
         }},
        {"silu",
         [](const at::TensorOptions& o) {
             (void)at::silu(at::ones({2, 8}, o));
         }},
        {"topk",
         [](const at::TensorOptions& o) {
             (void)at::topk(at::ones({2, 8}, o), 2, -1);
         }},
        {"index",
         [](const at::TensorOptions& o) {
             const auto x = at::ones({4, 8}, o);
             const auto i = at::zeros({2}, o.dtype(at::kLong));
             (void)x.index_select(0, i);
             (void)at::empty_like(x).index_copy_(0, at::arange(4, o.dtype(at::kLong)), x);
         }},
        {"constant_pad",
         [](const at::TensorOptions& o) {
             (void)at::constant_pad_nd(at::ones({1, 2, 2, 4, 4}, o), {1, 1, 1, 1, 2, 0}, 0);
         }},
        {"conv3d",
         [](const at::TensorOptions& o) {
             (void)at::conv3d(at::ones({1, 2, 3, 4, 4}, o), at::ones({2, 2, 3, 3, 3}, o),
                              at::ones({2}, o));
         }},
        {"conv2d",
         [](const at::TensorOptions& o) {
             (void)at::conv2d(at::ones({1, 2, 4, 4}, o), at::ones({2, 2, 3, 3}, o),
                              at::ones({2}, o), {2, 2});
         }},
        {"upsample_nearest",
         [](const at::TensorOptions& o) {
             (void)at::upsample_nearest2d(at::ones({1, 2, 4, 4}, o), {8, 8});
         }},
        {"cat",
         [](const at::TensorOptions& o) {
             (void)at::cat({at::ones({2, 2}, o), at::zeros({2, 2}, o)}, 1);
         }},
    };
    return k;
}

} // namespace

std::vector<std::string> known_ops() {
    std::vector<std::string> out;
    for (const auto& [name, p] : probes())
        out.push_back(name);
    return out;
}

std::optional<std::string> op_unsupported(device& dev, std::string_view op, dtype t) {
    const auto it = probes().find(op);
    if (it == probes().end())
        throw std::logic_error(
            fmt::format("no probe for op '{}'; known: {}", op, join(known_ops(), ", ")));
    static std::mutex mutex;
    static std::map<std::string, std::optional<std::string>> answers;
    const auto key = fmt::format("{}|{}|{}", dev.name(), op, to_string(t));
    std::lock_guard lock(mutex);
    if (const auto a = answers.find(key); a != answers.end())
        return a->second;
    std::optional<std::string> why;
    const auto st = to_scalar_type(t);
    if (!st) {
        why = fmt::format("this build cannot hold {}", to_string(t));
    } else {
        try {
            it->second(at::TensorOptions().dtype(*st).device(dev.torch_device()));
            dev.synchronize();
        } catch (const c10::Error& e) {
            why = fmt::format("libtorch {}.{} has no {} kernel for {} on {} ({})",
                              TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, op, to_string(t),
                              dev.name(), first_line(e.what_without_backtrace()));
        }
    }
    answers.emplace(key, why);
    return why;
}

} // namespace fourfold::backend
