// The host half of rope_kv: a block a head and token.
#include "fourfold/kernels/rope_kv.hpp"

namespace fourfold::kernels {

std::string rope_kv_plan::describe() const {
    return std::to_string(blocks) + " block(s) of " + std::to_string(threads) +
           (qk_norm ? ", per-head RMSNorm of q and k fused" : "") +
           ", RoPE of q and k, k/v appended at the device-side position" +
           (dependent_launch ? ", dependent launch" : "");
}

rope_kv_plan plan_rope_kv(const rope_kv_args& a, const device_limits& d) {
    rope_kv_plan p;
    if (a.tokens < 1 || a.heads < 1 || a.kv_heads < 1 || a.capacity < 1) {
        p.valid = "tokens, heads, kv_heads and capacity must be at least 1";
        return p;
    }
    if (a.head_dim < 2 || a.head_dim % 2 != 0 || a.head_dim > 1024) {
        p.valid = "head_dim must be even and in 2..1024, not " + std::to_string(a.head_dim);
        return p;
    }
    if (a.heads % a.kv_heads != 0) {
        p.valid = "heads must be a multiple of kv_heads";
        return p;
    }
    if ((a.q_norm == nullptr) != (a.k_norm == nullptr)) {
        p.valid = "q_norm and k_norm are given together or not at all";
        return p;
    }
    if (a.ld_qkv < (a.heads + 2 * a.kv_heads) * a.head_dim) {
        p.valid = "ld_qkv is shorter than a row of q, k and v";
        return p;
    }
    if (!a.pos) {
        p.valid = "the position pointer (device) is required";
        return p;
    }
    p.qk_norm = a.q_norm != nullptr;
    p.threads = static_cast<int>((a.head_dim + 31) / 32 * 32);
    p.blocks = (a.heads + 2 * a.kv_heads) * a.tokens;
    p.dependent_launch = dependent_launch(d);
    return p;
}

} // namespace fourfold::kernels
