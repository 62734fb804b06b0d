// The host half of decode attention: how the cache is split over the blocks.
#include "fourfold/kernels/decode_attention.hpp"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

namespace fourfold::kernels {

std::string decode_attention_plan::describe() const {
    std::string s = std::to_string(blocks) + " block(s) of " + std::to_string(threads) + ", " +
                    std::to_string(splits) + " split(s) of " + std::to_string(chunk) +
                    " cache positions";
    if (cluster > 0)
        s += ", a cluster of " + std::to_string(cluster) +
             " block(s) a kv head, merged in distributed shared memory";
    else
        s += combine         ? ", log-sum-exp combine (second launch)"
             : shared_merge  ? ", log-sum-exp combine fused (a kv head's splits meet at a barrier, "
                               "each merges a share)"
             : fused_combine ? ", log-sum-exp combine fused (the last block of a kv head merges)"
                             : ", no combine";
    if (fused_rope)
        s += std::string(", RoPE (q/k norms) and the KV append fused") +
             (rope_loads_first ? "" : " (its loads in the compiler's order)");
    if (block_heads != k_attention_max_group && cluster == 0)
        s += ", " + std::to_string(block_heads) + " query heads a block";
    if (preload_round)
        s += ", the first round's cache rows loaded before the query's";
    if (vector_loads)
        s += ", the cache rows in vector loads";
    if (dependent_launch)
        s += ", dependent launch";
    return s;
}

decode_attention_plan plan_decode_attention(const decode_attention_args& a,
                                            const device_limits& d) {
    decode_attention_plan p;
    if (a.heads < 1 || a.kv_heads < 1 || a.capacity < 1) {
        p.valid = "heads, kv_heads and capacity must be at least 1";
        return p;
    }
    if (a.heads % a.kv_heads != 0 || a.heads / a.kv_heads > k_attention_max_group) {
        p.valid = "heads must be a multiple of kv_heads, at most " +
                  std::to_string(k_attention_max_group) + " query heads per kv head";
        return p;
    }
    const auto hd = a.head_dim;
    if (hd != 16 && hd != 32 && hd != 64 && hd != 128 && hd != 256) {
        p.valid = "head_dim must be 16, 32, 64, 128 or 256, not " + std::to_string(hd);
        return p;
    }
    if (!a.pos) {
        p.valid = "the position pointer (device) is required";
        return p;
    }
    if (!(a.scale >= 0)) {
        p.valid = "scale must be >= 0 (0: 1/sqrt(head_dim))";
        return p;
    }
    if (a.min_chunk < 0 || a.min_chunk % k_attention_min_chunk != 0) {
        p.valid = "min_chunk must be 0 (the default) or a positive multiple of " +
                  std::to_string(k_attention_min_chunk) + ", not " + std::to_string(a.min_chunk);
        return p;
    }
    if (a.rope.qkv) {
        if (hd < 32 || hd > 128) {
            p.valid = "rope fused into decode attention takes head_dim 32, 64 or 128, not " +
                      std::to_string(hd);
            return p;
        }
        if ((a.rope.q_norm == nullptr) != (a.rope.k_norm == nullptr)) {
            p.valid = "rope: q_norm and k_norm are given together or not at all";
            return p;
        }
        if (!a.rope.cos || !a.rope.sin) {
            p.valid = "rope: the cos and sin tables are required";
            return p;
        }
        if (a.rope.ld_qkv < (a.heads + 2 * a.kv_heads) * hd) {
            p.valid = "rope: ld_qkv is shorter than a row of q, k and v";
            return p;
        }
        p.fused_rope = true;
        p.rope_loads_first = !switch_is("FOURFOLD_ATTENTION_ROPE_LOADS", "0");
    }
    const auto aligned = [](const void* p) {
        return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
    };
    if (a.allow_cluster && !p.fused_rope && d.clusters() &&
        a.capacity <= k_attention_cluster_max_capacity && aligned(a.q) && aligned(a.k_cache) &&
        aligned(a.v_cache)) {
        // Up to k_attention_max_cluster splits of about 32 positions or more, one cluster a kv
        // head: llama3-8b at 576 positions is 8 splits of 72 (64 blocks), at 2112 8 of 264.
        p.splits = std::clamp<std::int64_t>((a.capacity + k_attention_min_chunk - 1) /
                                                k_attention_min_chunk,
                                            1, k_attention_max_cluster);
        p.chunk = (a.capacity + p.splits - 1) / p.splits;
        p.splits = (a.capacity + p.chunk - 1) / p.chunk;
        p.cluster = static_cast<int>(p.splits);
        p.threads = k_attention_cluster_threads(hd);
        p.blocks = a.kv_heads * p.splits;
        p.dependent_launch = dependent_launch(d);
        return p;
    }
    // Chunks of at least 32 positions (4 a warp of 8 at head_dim <= 128: one round of 4 loads in
    // flight), as many as give one wave of resident blocks (k_attention_blocks_per_sm) over the
    // kv heads; a chunk then is ceil(capacity / splits) rounded up to 32. llama3-8b (8 kv heads)
    // on 132 SMs: a cache of 576 positions is 18 splits of 32 (144 blocks), 2112 is 33 splits
    // of 64 (264 blocks); qwen3-30b-a3b (4 kv heads) at 2080: 65 splits of 32.
    // (Chunks of 64 where 32 would be more than 32 splits measured 1.0 us a launch faster at
    // qwen3-30b-a3b's 2080 positions in the timed test, and 0.8 % slower in its decode step:
    // not taken; docs/performance.md, session 32.)
    // A kv head's query heads in blocks of 4 (block_heads 4, head_dim 64 or 128: each set of 4 a
    // unit whose splits merge apart) where its group has more than 4 and that keeps the splits of
    // block_heads 8: qwen3-30b-a3b (groups of 8, 4 kv heads) at 544 positions runs 136 blocks of
    // 4 warps where 68 of 8 ran (H100, session 54: attention 8.0 -> 7.2 us warm, the decode +1.0
    // %). At 2080 the 8 units' wave holds 33 splits of 64 where 4 units held 65 of 32 (attention
    // 10.0 -> 11.0 us, the decode -0.6 %): 8 a block there. llama3-8b's groups of 4 gain nothing
    // (7.37 -> 7.34 us at 576, 10.8 -> 11.0 at 2112). FOURFOLD_ATTENTION_BLOCK_HEADS=4 or 8 forces
    // either.
    const std::int64_t group = a.heads / a.kv_heads;
    const std::int64_t least = a.min_chunk > 0 ? a.min_chunk : k_attention_min_chunk;
    const std::int64_t by_chunk = (a.capacity + least - 1) / least;
    const auto units_of = [&](int heads) { return a.kv_heads * ((group + heads - 1) / heads); };
    const auto splits_of = [&](int heads) {
        const std::int64_t cap = std::clamp<std::int64_t>(
            k_attention_blocks_per_sm * std::int64_t{d.sm_count} / units_of(heads), 1,
            k_attention_max_splits);
        const std::int64_t splits = std::max<std::int64_t>(1, std::min(by_chunk, cap));
        std::int64_t chunk = (a.capacity + splits - 1) / splits;
        chunk = std::max(least, (chunk + k_attention_min_chunk - 1) / k_attention_min_chunk *
                                    k_attention_min_chunk);
        return std::pair{(a.capacity + chunk - 1) / chunk, chunk};
    };
    const bool forced4 = switch_is("FOURFOLD_ATTENTION_BLOCK_HEADS", "4");
    const bool forced8 = switch_is("FOURFOLD_ATTENTION_BLOCK_HEADS", "8");
    const bool gains = group > 4 && splits_of(4).first >= splits_of(k_attention_max_group).first;
    if ((hd == 64 || hd == 128) && (forced4 || (gains && !forced8)))
        p.block_heads = 4;
    const std::int64_t units = units_of(p.block_heads);
    std::tie(p.splits, p.chunk) = splits_of(p.block_heads);
    p.blocks = units * p.splits;
    p.threads = k_attention_block_threads(hd, p.block_heads);
    p.combine = false;
    p.fused_combine = p.splits > 1;
    p.shared_merge = p.splits > k_attention_last_block_max_splits;
    p.preload_round = !switch_is("FOURFOLD_ATTENTION_PRELOAD", "0");
    // a lane's elements in one 4-, 8- or 16-byte load where both caches are aligned to it
    // (session 54, H100: attention 8.04 -> 7.93 us warm at qwen3's 544 positions, 10.75 -> 10.36
    // at llama3-8b's 2112; the decode +0.1-0.4 %); FOURFOLD_ATTENTION_VECTOR_LOADS=0 turns it off.
    // Not yet with 4 query heads a block, whose vector instance has not run on a GPU (session 54's
    // device time ended first): FOURFOLD_ATTENTION_VECTOR_LOADS=1 takes it there too (a trial).
    const bool vector = switch_is("FOURFOLD_ATTENTION_VECTOR_LOADS", "1") ||
                        (p.block_heads == k_attention_max_group &&
                         !switch_is("FOURFOLD_ATTENTION_VECTOR_LOADS", "0"));
    if (const int vb = attention_vector_bytes(hd, static_cast<int>(elem_bytes(a.type)));
        vb > 0 && vector)
        p.vector_loads = reinterpret_cast<std::uintptr_t>(a.k_cache) % vb == 0 &&
                         reinterpret_cast<std::uintptr_t>(a.v_cache) % vb == 0;
    p.dependent_launch = dependent_launch(d);
    if (p.fused_combine) {
        // per query head and split: head_dim values, max and sum; then a barrier per kv head
        // (16 bytes: two counts and a generation; the last-block merge counts in the first).
        // With shared_merge the splits wait for each other: units x splits is at most one
        // wave of k_attention_blocks_per_sm blocks an SM (the cap above), all resident at once.
        const std::int64_t partials =
            a.heads * p.splits * (2 + hd) * static_cast<std::int64_t>(sizeof(float));
        p.counter_offset = (partials + 15) / 16 * 16;
        p.workspace_bytes = p.counter_offset + units * std::int64_t{16};
    }
    return p;
}

} // namespace fourfold::kernels
