#!/usr/bin/env python3
"""Reads `fourfold export --format json` on stdin and prints the Markdown rows of
docs/performance.md: the medians of the article suite (run label article-h200) and of the
operator_modes stage (labels ops-graph-hot, ops-event-cold) beside the baseline figures of
REFERENCE_EXPERIMENTS.md. Standard library only."""
import json
import os
import sys

# (what, workload, variant, dtype, params that must match, baseline figure in words)
ROWS = [
    ("softmax 1x128,256 fp32", "softmax", "stock", "fp32", {"rows": 1, "vocab": 128256},
     "33.7 us host; 32.8 us graph same; 44.2 us event"),
    ("softmax 1x128,256 fp32 (composite)", "softmax", "generic", "fp32", {"rows": 1, "vocab": 128256}, "-"),
    ("linear 1x4096x4096 bf16", "linear_decode", "stock", "bf16", {"tokens": 1, "n": 4096, "k": 4096, "bias": False},
     "27.9 us host; 13.4 rotated / 10.9 same / 19.1 event"),
    ("linear 1x1024x4096 bf16", "linear_decode", "stock", "bf16", {"tokens": 1, "n": 1024, "k": 4096, "bias": False},
     "19.0 us host"),
    ("linear 1x14336x4096 bf16", "linear_decode", "stock", "bf16", {"tokens": 1, "n": 14336, "k": 4096, "bias": False},
     "31.4 us host; 31.5 rotated / 30.5 same / 41.3 event"),
    ("linear 1x128256x4096 bf16", "linear_decode", "stock", "bf16", {"tokens": 1, "n": 128256, "k": 4096, "bias": False},
     "248 us host; 249.8 rotated / 248.1 same / 259.4 event"),
    ("linear 1x768x2048 bf16", "linear_decode", "stock", "bf16", {"tokens": 1, "n": 768, "k": 2048, "bias": False},
     "7.4 rotated / 7.1 same / 10.5 event"),
    ("linear 1x4096x4096 bf16 + bias (fused)", "linear_decode", "stock", "bf16", {"tokens": 1, "n": 4096, "k": 4096, "bias": True}, "-"),
    ("linear 1x4096x4096 bf16 matmul + add", "linear_decode", "generic", "bf16", {"tokens": 1, "n": 4096, "k": 4096, "bias": True},
     "+7 to +9 us host on small shapes"),
    ("MoE gate/up, 8 rows over 128 experts (1 token, top 8), 2048->1536, device offsets", "moe_decode", "stock", "bf16",
     {"tokens": 1, "experts": 128, "top_k": 8, "hidden": 2048, "width": 768, "part": "gate_up"},
     "33 us host; 30.9 same / 36.9 event"),
    ("MoE gate/up, 8 rows over 128 experts, host loop over experts", "moe_decode", "generic", "bf16",
     {"tokens": 1, "experts": 128, "top_k": 8, "hidden": 2048, "width": 768, "part": "gate_up"}, "290 us host"),
    ("MoE gate/up, 8 tokens top 8 (64 rows), device offsets", "moe_decode", "stock", "bf16",
     {"tokens": 8, "experts": 128, "top_k": 8, "hidden": 2048, "width": 768, "part": "gate_up"}, "-"),
    ("MoE gate/up, 8 tokens top 8 (64 rows), host loop", "moe_decode", "generic", "bf16",
     {"tokens": 8, "experts": 128, "top_k": 8, "hidden": 2048, "width": 768, "part": "gate_up"}, "-"),
    ("MoE expert FFN Qwen3-30B-A3B, 8 tok, device offsets", "moe_decode", "stock", "bf16",
     {"tokens": 8, "experts": 128, "top_k": 8, "hidden": 2048, "width": 768, "part": "ffn"}, "-"),
    ("MoE expert FFN Qwen3-30B-A3B, 8 tok, host loop", "moe_decode", "generic", "bf16",
     {"tokens": 8, "experts": 128, "top_k": 8, "hidden": 2048, "width": 768, "part": "ffn"}, "-"),
    ("constant pad 1x128x3x64x64 bf16", "pad", "stock", "bf16",
     {"channels": 128, "frames": 3, "height": 64, "width": 64}, "18.9 us host"),
    ("pad by cat (composite) 1x128x3x64x64 bf16", "pad", "generic", "bf16",
     {"channels": 128, "frames": 3, "height": 64, "width": 64}, "-"),
    ("constant pad 1x96x5x130x130 bf16", "pad", "stock", "bf16",
     {"channels": 96, "frames": 5, "height": 130, "width": 130}, "29.7 us graph same"),
    ("_scaled_mm fp8 16x4096x4096 per-tensor (+ activation quantisation)", "fp8_linear", "scaled_mm_tensor", "bf16",
     {"tokens": 16, "n": 4096, "k": 4096}, "17.7 us host (_scaled_mm alone)"),
    ("bf16 linear 16x4096x4096 (fp8's reference point)", "fp8_linear", "bf16", "bf16",
     {"tokens": 16, "n": 4096, "k": 4096}, "-"),
]
LABELS = [(os.environ.get("ARTICLE_LABEL", "article-h200"), "article (graph, rotated/cold)"), ("ops-graph-hot", "graph, same inputs (hot)"),
          ("ops-event-cold", "event, L2 flushed")]


def main():
    doc = json.load(sys.stdin)
    label_of = {r["id"]: r["label"] for r in doc["runs"]}
    found = {}
    for rec in doc["records"]:
        if rec["ledger"] != "op_time" or rec["status"] != "ok":
            continue
        found.setdefault((label_of.get(rec["run"]), rec["workload"], rec["variant"], rec["dtype"]), []).append(rec)

    def cell(label, workload, variant, dtype, params):
        for rec in found.get((label, workload, variant, dtype), []):
            if all(rec["params"].get(k) == v for k, v in params.items()):
                f = rec["figures"]
                text = f"{f['stats']['median']:.1f} us, {f['gb_per_s']:.0f} GB/s"
                if f.get("stop") != "converged":
                    text += f" ({f.get('stop')})"
                if f.get("mode") not in ("graph",):
                    text += f" [{f.get('mode')}]"
                return text
        return "-"

    print("| what | baseline (REFERENCE_EXPERIMENTS.md) | " + " | ".join(t for _, t in LABELS) + " |")
    print("|---|---|" + "---|" * len(LABELS))
    for what, workload, variant, dtype, params, baseline in ROWS:
        cells = [cell(label, workload, variant, dtype, params) for label, _ in LABELS]
        print(f"| {what} | {baseline} | " + " | ".join(cells) + " |")
    print()


if __name__ == "__main__":
    main()
