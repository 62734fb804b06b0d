#pragma once
// Decode attention for one query token over a static KV cache (flash-decoding): the query heads
// that share a kv head (GQA) are one block's rows; the cache positions 0..*pos, read FROM THE
// DEVICE, are split in chunks over the blocks of a grid sized for the cache's capacity (chunks
// past the position compute nothing); each block keeps a running (max, sum, weighted values) in
// fp32 per query head, merged over its warps in shared memory. With one chunk the block writes
// the output itself. With more than one, every block writes its partial (max, sum, values) to
// the workspace. Up to k_attention_last_block_max_splits splits, each block then counts in on
// its kv head's count there (threadfence, atomicAdd; blocks past the position count in too) and
// the last merges the live splits' partials by log-sum-exp in split order, writes the output
// and resets the count. With more splits, the splits of a kv head meet at a barrier there
// (reduce.cuh's grid_barrier; the grid is one wave of resident blocks) and each block merges its
// share of the kv head's outputs (one block reading every partial was most of the launch at 65
// splits). Either way the bits do not depend on the order of arrival, it is one launch, and the
// counts are back at 0 for the next launch or a replayed graph. On
// compute capability 9 and up the launch is a programmatic dependent launch: the kernel reads
// *pos early only to prefetch its chunk's cache rows into L2, and reads q, *pos and the cache
// (the row at *pos is the launch before's) after the wait. bf16/fp16/fp32 in and out.
// From sm_90, for caches up to k_attention_cluster_max_capacity, the splits of a kv head are one
// thread-block cluster instead, merged in distributed shared memory (the plan's `cluster`).
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

inline constexpr int k_attention_max_group = 8; // query heads per kv head
// The grid path's threads a block: 8 warps (4 positions a warp of a 32-position chunk, one round
// of loads in flight) up to head_dim 128, 4 warps at head_dim 256 (its registers); two blocks
// resident an SM either way (at most 128 registers a thread at 8 warps).
constexpr int k_attention_threads(std::int64_t head_dim) {
    return head_dim >= 256 ? 128 : 256;
}
inline constexpr int k_attention_blocks_per_sm = 2;
// The grid path's threads a block taking `heads` query heads (block_heads): 8 as above; 4 heads
// take a round of 8 positions a warp, so half the warps cover the same 32-position chunk.
constexpr int k_attention_block_threads(std::int64_t head_dim, int heads) {
    return heads >= 8 ? k_attention_threads(head_dim) : k_attention_threads(head_dim) / 2;
}
inline constexpr std::int64_t k_attention_min_chunk = 32;
inline constexpr std::int64_t k_attention_max_splits = 1024;
// Above this many splits a kv head's splits merge in shares after a barrier; up to it the last
// to count in merges alone (on the H200 the barrier cost more than it saved at 17-18 splits and
// won at 33 and 65: docs/performance.md, session 31).
inline constexpr std::int64_t k_attention_last_block_max_splits = 32;
inline constexpr int k_attention_max_cluster = 8; // portable cluster size
// the cluster path's threads a block: 8 warps (4 at head_dim 256, for its shared memory)
constexpr int k_attention_cluster_threads(std::int64_t head_dim) {
    return head_dim >= 256 ? 128 : 256;
}
inline constexpr std::int64_t k_attention_cluster_max_capacity = 4096; // 512 positions a block

// rope_kv fused into the launch (decode, one token; the grid path, head_dim 32..128): q and the
// token's k and v come from the qkv row (rope_kv_args's layout: heads + 2 kv_heads rows of
// head_dim). Every block norms (q_norm) and rotates its query heads into shared memory; the split
// that holds the position norms (k_norm) and rotates k and writes the k and v rows into the
// caches. rope_kv's arithmetic and roundings throughout (kernels/rope_kv.cu), so the output and
// the cache rows are the same bits as rope_kv then attention. `q` is then unused.
struct decode_attention_rope {
    const void* qkv = nullptr;
    std::int64_t ld_qkv = 0;
    const void* q_norm = nullptr; // head_dim, or nullptr (no q/k norm)
    const void* k_norm = nullptr;
    double eps = 1e-6;
    const void* cos = nullptr; // capacity x head_dim (contiguous), by position
    const void* sin = nullptr;
};

struct decode_attention_args {
    const void* q = nullptr;       // heads x head_dim (contiguous)
    const void* k_cache = nullptr; // kv_heads x capacity x head_dim (contiguous)
    const void* v_cache = nullptr;
    const std::int64_t* pos = nullptr; // device: the last position attended (0..capacity-1)
    void* out = nullptr;               // heads x head_dim (contiguous)
    // plan.workspace_bytes, 16-byte aligned, with more than one split: ZEROED ONCE when
    // allocated (the barriers' arrival counts at plan.counter_offset must start at 0; each launch
    // leaves them at 0 again, so launches on one workspace must not run concurrently)
    float* workspace = nullptr;
    std::int64_t heads = 0, kv_heads = 0, head_dim = 0, capacity = 0;
    double scale = 0; // 0: 1 / sqrt(head_dim)
    elem type = elem::bf16;
    // ask for the cluster path (taken where the device and the cache allow it, see the plan).
    // Off by default: on the H200 it measured no faster than the grid path at 544 positions and
    // slower at 2080 in the decoder (docs/performance.md, session 27).
    bool allow_cluster = false;
    // A probe of the launch's phases (its output then invalid, the split counters left at 0):
    // 1 returns after the dependency wait and the position read, 2 after the block's cache
    // positions (its parts in shared memory), 3 after the block's merged part is stored (grid:
    // the workspace; cluster: its shared memory, before the cluster barrier), 4 (grid path, more
    // than one split) after the count-in or the barrier, before the split merge: the wait for
    // the kv head's last block apart from the merge itself; inside the last block's merge (not
    // the shared merge's; one value of its head's outputs written) 5 after the maxima, the sums
    // and the first splits' values, 6 after every split is added, before the outputs' stores (on
    // other paths 5 and 6 run the launch whole). 0: the launch.
    int probe_stop_after = 0;
    // The grid path's least chunk of cache positions a block, a multiple of 32 (0:
    // k_attention_min_chunk): fewer, longer splits. A tuning probe (the phases test sweeps it);
    // the decoder leaves it at 0.
    std::int64_t min_chunk = 0;
    // with rope.qkv set: rope_kv inside the launch (above); the caches' row at *pos is written
    decode_attention_rope rope;
};

struct decode_attention_plan {
    int threads = 0;
    std::int64_t chunk = 0;  // cache positions a block takes
    std::int64_t splits = 0; // chunks of the capacity: blocks = kv_heads x splits
    std::int64_t blocks = 0;
    // sm_90 on, a cache of at most k_attention_cluster_max_capacity positions and q and the
    // caches 16-byte aligned: a kv head's splits are one thread-block cluster of `cluster`
    // blocks (8 warps each, 16-byte loads of the cache rows) that merge their parts in
    // distributed shared memory, each block writing 1/cluster of the kv head's output: no
    // workspace, no atomics, no memory fence. 0: the grid path below.
    int cluster = 0;
    bool combine = false;       // a second launch merges the splits (never now)
    bool fused_combine = false; // the launch merges the splits itself (splits > 1)
    // with fused_combine: the splits merge in shares after a barrier (splits above
    // k_attention_last_block_max_splits); else the last block of a kv head merges alone
    bool shared_merge = false;
    bool dependent_launch = false; // programmatic dependent launch (compute capability >= 9)
    bool fused_rope = false;       // rope_kv inside the launch (args.rope)
    // with fused_rope: each row's loads (the qkv row, its norm's weight, cos and sin) issued
    // together, one round trip a row where the compiler's order made three (session 42; on the
    // H200, session 43: qwen3-30b-a3b +0.4 % at ctx 512, +0.8 % at 2048, llama3-8b unchanged);
    // FOURFOLD_ATTENTION_ROPE_LOADS=0 keeps that order for A/B runs. The same bits either way.
    bool rope_loads_first = false;
    // the grid path (session 53): the first round's cache rows (a sub-group's k_unroll positions)
    // loaded right after the dependency wait, before the query rows are made (q's loads, or the
    // fused rope's), so that their round trips overlap where the rows waited for the query's
    // barrier; the row at *pos the fused rope writes comes from its shared memory instead of a
    // load after it. At qwen3's and llama3-8b's decode chunks (32 positions) the only round.
    // FOURFOLD_ATTENTION_PRELOAD=0 loads them after the query rows for A/B runs. The same bits.
    bool preload_round = false;
    // Since session 54 (the grid path, caches aligned to attention_vector_bytes;
    // FOURFOLD_ATTENTION_VECTOR_LOADS=0 turns it off): a lane's elements of a cache row in one 4-,
    // 8- or 16-byte load (at head_dim 128 bf16 one 8-byte load where four 2-byte loads were: 32
    // load instructions a round a thread, SASS of session 53). The same floats, so the same bits.
    // Plan with the launch's pointers: the launch refuses caches that lost the alignment. With
    // block_heads 4 only where FOURFOLD_ATTENTION_VECTOR_LOADS=1 asks (that instance has not run
    // on a GPU yet).
    bool vector_loads = false;
    // The query heads a block takes (the grid path; 4 at head_dim 64 or 128 only). 8: a kv
    // head's whole GQA group, its round 4 positions x 8 heads a warp (llama3-8b's groups of 4
    // leave half of the 32 pairs empty). 4: a group in halves of 4 heads, each half's blocks (4
    // warps, a round 8 positions x 4 heads) merging their splits apart: kv_heads x halves x splits
    // blocks, every pair a real score, half the block merge and half the last block's partials;
    // qwen3's 4 kv heads fill twice the SMs. Both halves rope the k and v rows at *pos into their
    // shared memory, the first writes them to the caches. Not block_heads 8's bits (the positions
    // sum in other parts). The plan takes 4 since session 54 where the group has more than 4 heads
    // and the wave keeps block_heads 8's splits (qwen3-30b-a3b at ctx 512, not at 2048);
    // FOURFOLD_ATTENTION_BLOCK_HEADS=4 or 8 forces either.
    int block_heads = k_attention_max_group;
    // per query head and split head_dim values, then the maxima, then the sums (floats); then
    // at counter_offset (16-byte aligned) a barrier per unit (a kv head, or each set of 4 of its
    // query heads with block_heads 4): two 32-bit arrival counts, a generation and 4 unused bytes
    std::int64_t workspace_bytes = 0;
    std::int64_t counter_offset = 0;
    std::string valid;
    std::string describe() const;
};

// The alignment a lane's cache elements need for one vector load on the grid path (head_dim hd,
// element_bytes each): 4, 8 or 16 bytes; 0 where a lane's elements are too few for one.
constexpr int attention_vector_bytes(std::int64_t hd, int element_bytes) {
    const std::int64_t lanes = hd < 32 ? hd : 32;
    const std::int64_t b = hd / lanes * element_bytes;
    return b % 16 == 0 ? 16 : b == 8 || b == 4 ? static_cast<int>(b) : 0;
}

decode_attention_plan plan_decode_attention(const decode_attention_args& a, const device_limits& d);
launch_status launch_decode_attention(const decode_attention_plan& p,
                                      const decode_attention_args& a, stream_t stream);

} // namespace fourfold::kernels
