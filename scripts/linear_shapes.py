#!/usr/bin/env python3
"""Regenerates data/linear_shapes.csv: the (N, K) weight shapes of the linear layers of real
open models, from the published config.json values below (hidden_size, intermediate_size,
num_attention_heads, num_key_value_heads, head_dim, vocab_size, moe_intermediate_size,
num_experts). One row per distinct (N, K), named for the first model/projection that has it;
`also` lists the other model/projection pairs with the same shape.

    python3 scripts/linear_shapes.py > data/linear_shapes.csv
"""
import sys

# name, Hugging Face repo (the config.json the numbers come from), and the config values.
# kv/q widths are heads * head_dim; MoE models list their router and one expert's projections.
MODELS = [
    dict(model="Llama-3-8B", repo="meta-llama/Meta-Llama-3-8B", hidden=4096, inter=14336,
         heads=32, kv=8, head_dim=128, vocab=128256),
    dict(model="Llama-3-70B", repo="meta-llama/Meta-Llama-3-70B", hidden=8192, inter=28672,
         heads=64, kv=8, head_dim=128, vocab=128256),
    dict(model="Llama-3.2-1B", repo="meta-llama/Llama-3.2-1B", hidden=2048, inter=8192,
         heads=32, kv=8, head_dim=64, vocab=128256),
    dict(model="Llama-3.2-3B", repo="meta-llama/Llama-3.2-3B", hidden=3072, inter=8192,
         heads=24, kv=8, head_dim=128, vocab=128256),
    dict(model="Mistral-7B-v0.1", repo="mistralai/Mistral-7B-v0.1", hidden=4096, inter=14336,
         heads=32, kv=8, head_dim=128, vocab=32000),
    dict(model="Mixtral-8x7B", repo="mistralai/Mixtral-8x7B-v0.1", hidden=4096, inter=None,
         heads=32, kv=8, head_dim=128, vocab=32000, experts=8, moe_inter=14336),
    dict(model="Qwen3-0.6B", repo="Qwen/Qwen3-0.6B", hidden=1024, inter=3072, heads=16, kv=8,
         head_dim=128, vocab=151936),
    dict(model="Qwen3-1.7B", repo="Qwen/Qwen3-1.7B", hidden=2048, inter=6144, heads=16, kv=8,
         head_dim=128, vocab=151936),
    dict(model="Qwen3-4B", repo="Qwen/Qwen3-4B", hidden=2560, inter=9728, heads=32, kv=8,
         head_dim=128, vocab=151936),
    dict(model="Qwen3-8B", repo="Qwen/Qwen3-8B", hidden=4096, inter=12288, heads=32, kv=8,
         head_dim=128, vocab=151936),
    dict(model="Qwen3-14B", repo="Qwen/Qwen3-14B", hidden=5120, inter=17408, heads=40, kv=8,
         head_dim=128, vocab=151936),
    dict(model="Qwen3-32B", repo="Qwen/Qwen3-32B", hidden=5120, inter=25600, heads=64, kv=8,
         head_dim=128, vocab=151936),
    dict(model="Qwen3-30B-A3B", repo="Qwen/Qwen3-30B-A3B", hidden=2048, inter=None, heads=32,
         kv=4, head_dim=128, vocab=151936, experts=128, moe_inter=768),
    dict(model="Qwen3-235B-A22B", repo="Qwen/Qwen3-235B-A22B", hidden=4096, inter=None,
         heads=64, kv=4, head_dim=128, vocab=151936, experts=128, moe_inter=1536),
    dict(model="Gemma-3-270M", repo="google/gemma-3-270m", hidden=640, inter=2048, heads=4,
         kv=1, head_dim=256, vocab=262144),
    dict(model="Gemma-3-1B", repo="google/gemma-3-1b-pt", hidden=1152, inter=6912, heads=4,
         kv=1, head_dim=256, vocab=262144),
    dict(model="Gemma-3-4B", repo="google/gemma-3-4b-pt", hidden=2560, inter=10240, heads=8,
         kv=4, head_dim=256, vocab=262208),
    dict(model="Gemma-3-12B", repo="google/gemma-3-12b-pt", hidden=3840, inter=15360,
         heads=16, kv=8, head_dim=256, vocab=262208),
    dict(model="Gemma-3-27B", repo="google/gemma-3-27b-pt", hidden=5376, inter=21504,
         heads=32, kv=16, head_dim=128, vocab=262208),
    # gpt-oss experts fuse gate and up into one gate_up_proj of 2 x intermediate_size rows
    dict(model="gpt-oss-20b", repo="openai/gpt-oss-20b", hidden=2880, inter=None, heads=64,
         kv=8, head_dim=64, vocab=201088, experts=32, moe_inter=2880, fused_gate_up=True),
    dict(model="gpt-oss-120b", repo="openai/gpt-oss-120b", hidden=2880, inter=None, heads=64,
         kv=8, head_dim=64, vocab=201088, experts=128, moe_inter=2880, fused_gate_up=True),
]


def projections(m):
    h, q, kv = m["hidden"], m["heads"] * m["head_dim"], m["kv"] * m["head_dim"]
    out = [("q_proj", q, h), ("k_proj", kv, h), ("v_proj", kv, h), ("o_proj", h, q)]
    if m.get("inter"):
        i = m["inter"]
        out += [("gate_proj", i, h), ("up_proj", i, h), ("down_proj", h, i)]
    if m.get("experts"):
        e, i = m["experts"], m["moe_inter"]
        out.append(("router", e, h))
        if m.get("fused_gate_up"):
            out.append(("expert_gate_up_proj", 2 * i, h))
        else:
            out += [("expert_gate_proj", i, h), ("expert_up_proj", i, h)]
        out.append(("expert_down_proj", h, i))
    out.append(("lm_head", m["vocab"], h))
    return out


def main():
    rows, index = [], {}
    for m in MODELS:
        for proj, n, k in projections(m):
            key = (n, k)
            if key in index:
                rows[index[key]]["also"].append(f"{m['model']}:{proj}")
                continue
            index[key] = len(rows)
            rows.append(dict(model=m["model"], projection=proj, n=n, k=k,
                             source=f"https://huggingface.co/{m['repo']}/blob/main/config.json",
                             also=[]))
    w = sys.stdout
    w.write("model,projection,n,k,source,also\n")
    for r in rows:
        w.write(f"{r['model']},{r['projection']},{r['n']},{r['k']},{r['source']},"
                f"{';'.join(r['also'])}\n")
    print(f"{len(rows)} distinct shapes", file=sys.stderr)


if __name__ == "__main__":
    main()
