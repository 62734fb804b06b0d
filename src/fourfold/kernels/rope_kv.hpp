#pragma once
// The attention inputs of a decode step in one launch: from the fused q/k/v projection's output
// (tokens x (heads + 2 kv_heads) x head_dim), Qwen3's per-head RMSNorm of q and k (optional),
// the rotary embedding of q and k (Hugging Face's rotate_half, the cos/sin tables indexed by
// position), q written out, k and v appended to one layer's static KV cache. Token t sits at
// position *pos + t, read FROM THE DEVICE, so one captured step serves every position. All in
// fp32, rounded once to the element type. A block a head (q heads, then k heads, then v heads)
// and a token; positions at or past the capacity write nothing. On compute capability 9 and up
// a dependent launch: the norm weights and (at *pos as a hint) the cos/sin rows go to L2 before
// the wait, everything else is read after it.
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

struct rope_kv_args {
    const void* qkv = nullptr;    // tokens x (heads + 2 kv_heads) * head_dim, row stride ld_qkv
    const void* q_norm = nullptr; // head_dim, or nullptr (no q/k norm)
    const void* k_norm = nullptr; // head_dim, or nullptr
    double eps = 1e-6;
    const void* cos = nullptr; // capacity x head_dim (contiguous), by position
    const void* sin = nullptr;
    const std::int64_t* pos = nullptr; // device: the position of token 0
    void* q_out = nullptr;             // tokens x heads x head_dim (contiguous)
    void* k_cache = nullptr;           // kv_heads x capacity x head_dim (one layer, contiguous)
    void* v_cache = nullptr;
    std::int64_t tokens = 1, heads = 0, kv_heads = 0, head_dim = 0, capacity = 0;
    std::int64_t ld_qkv = 0;
    elem type = elem::bf16;
};

struct rope_kv_plan {
    int threads = 0;         // a head's elements, rounded up to a warp
    std::int64_t blocks = 0; // (heads + 2 kv_heads) x tokens
    bool qk_norm = false;
    bool dependent_launch = false; // programmatic dependent launch (compute capability >= 9)
    std::string valid;
    std::string describe() const;
};

rope_kv_plan plan_rope_kv(const rope_kv_args& a, const device_limits& d);
launch_status launch_rope_kv(const rope_kv_plan& p, const rope_kv_args& a, stream_t stream);

} // namespace fourfold::kernels
