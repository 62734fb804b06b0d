#!/usr/bin/env python3
"""Hugging Face transformers decode on the configuration fourfold's decode workload measures.

The model is built from the config.json that `fourfold decode --model NAME --print-config` prints
(same shapes), with transformers' own random initialisation, in bf16, directly on the GPU. Batch 1,
greedy: prefill of a random prompt of ctx tokens (timed on its own, first token sampled), then N
decode steps, each feeding the argmax of softmax(logits) back, timed per token with CUDA events at
the step boundaries and no host sync between steps -- the way fourfold times its own steps.
tokens/s = 1000 / median ms per token (fourfold's basis). One JSON line per context length.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM


def build(config_path, dtype, attn):
    fields = json.load(open(config_path))
    model_type = fields.pop("model_type")
    fields.pop("architectures", None)
    fields.pop("torch_dtype", None)
    config = AutoConfig.for_model(model_type, **fields)
    t0 = time.time()
    with torch.device("cuda"):
        try:
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn)
        except TypeError:  # transformers 4 spells it torch_dtype
            model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype, attn_implementation=attn)
    model.eval()
    torch.cuda.synchronize()
    return model, config, time.time() - t0


def forward(model, ids, past, keep_last):
    kwargs = dict(input_ids=ids, past_key_values=past, use_cache=True)
    if keep_last:
        kwargs["logits_to_keep"] = 1  # the prefill's other positions' logits are never used
    try:
        return model(**kwargs)
    except TypeError:
        kwargs.pop("logits_to_keep", None)
        return model(**kwargs)


def greedy(logits):
    return torch.softmax(logits[:, -1, :].float(), dim=-1).argmax(dim=-1, keepdim=True)


@torch.inference_mode()
def one_round(model, prompt, steps):
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 2)]
    marks[0].record()
    out = forward(model, prompt, None, True)
    past, nxt = out.past_key_values, greedy(out.logits)
    marks[1].record()
    generated = [nxt]
    for i in range(steps):
        out = forward(model, nxt, past, False)
        past, nxt = out.past_key_values, greedy(out.logits)
        generated.append(nxt)
        marks[i + 2].record()
    torch.cuda.synchronize()
    prefill_ms = marks[0].elapsed_time(marks[1])
    step_ms = [marks[i].elapsed_time(marks[i + 1]) for i in range(1, steps + 1)]
    return prefill_ms, step_ms, torch.cat(generated, dim=1)[0].tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", required=True, help="config.json from fourfold decode --print-config")
    ap.add_argument("--ctx", default="512,2048", help="context lengths, a comma list")
    ap.add_argument("--tokens", type=int, default=32, help="decode steps timed per round")
    ap.add_argument("--rounds", type=int, default=1, help="timed rounds per context (after a short warm-up)")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--attn", default="sdpa", help="attn_implementation (transformers' default: sdpa)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    if not torch.cuda.is_available():
        sys.exit("hf_decode.py: needs a CUDA device")
    torch.manual_seed(args.seed)
    model, config, init_s = build(args.config, getattr(torch, args.dtype), args.attn)
    weights_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    gen = torch.Generator().manual_seed(args.seed)
    for ctx in [int(c) for c in args.ctx.split(",") if c]:
        prompt = torch.randint(0, config.vocab_size, (1, ctx), generator=gen).cuda()
        one_round(model, prompt, 4)  # warm-up: kernels, cuBLAS handles, allocator pools
        prefill, steps, generated = [], [], []
        for _ in range(args.rounds):
            p, s, generated = one_round(model, prompt, args.tokens)
            prefill.append(p)
            steps.extend(s)
        median = statistics.median(steps)
        print(json.dumps({
            "tool": "transformers",
            "model_type": config.model_type,
            "ctx": ctx,
            "decode_steps": args.tokens,
            "rounds": args.rounds,
            "tokens_per_s": 1000.0 / median,
            "tokens_per_s_basis": "1000 / median ms per token",
            "ms_per_token_median": median,
            "ms_per_token_mean": statistics.fmean(steps),
            "prefill_ms": statistics.median(prefill),
            "timing": "CUDA events at each step boundary, no host sync between steps",
            "attn_implementation": getattr(config, "_attn_implementation", args.attn),
            "experts_implementation": getattr(config, "_experts_implementation", None),
            "dtype": args.dtype,
            "weights_bytes": weights_bytes,
            "init_s": init_s,
            "generated_tokens": generated[:16],
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(),
        }), flush=True)
    del model
    torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
