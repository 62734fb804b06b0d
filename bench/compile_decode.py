#!/usr/bin/env python3
"""The torch.compile peer of fourfold's decode workload: the same Llama-architecture decoder
(shapes from the same config.json: a preset's data/models/<name>/config.json, or a model
directory's), written in plain PyTorch, its decode step compiled with torch.compile, at batch 1,
greedy: a prefill of ctx prompt tokens, then `tokens` decode steps, each feeding the argmax of
softmax(logits) back on the device (no host sync between steps).

Two ways to run it (the fourfold package importable: PYTHONPATH=build/python):
  standalone   python3 bench/compile_decode.py --model tiny-llama --ctx 32 --tokens 8 [--device cuda]
               prints one JSON line per variant (tokens/s from the median ms per token, host
               clock with the device synchronised per step: a rough figure, for a look)
  in the store fourfold run --python bench/compile_decode.py --workload decode,decode_compile \\
                   --param model=llama3-8b --param ctx=512 --param tokens=64 --dtype bf16 \\
                   --device cuda --ledgers throughput,memory
               the workload `decode_compile` (peer_of = "decode"): the engine's step timer, its
               stopping rule and memory pass; its records are filed under `decode` with the same
               params, so `fourfold compare RUN --baseline-variant stock` puts fourfold's decoder
               and torch.compile side by side in one run (one provenance).

Variants: torch_compile (torch.compile of the decode step; mode=eager -> mode "default",
mode=graph -> "reduce-overhead", CUDA graphs) and torch_eager (the same code uncompiled). Where
torch.compile is absent (torch 1.13, Debian's) torch_compile runs eager and its record says so
(figures.compiled = false, figures.compile_fallback the reason). The weights are random (from
init_seed, not fourfold's generator: the numbers differ, the shapes and work do not), so this
peer has no correctness ledger: only throughput and memory.
"""
import argparse
import json
import math
import os
import sys
import time

import torch

import fourfold

HERE = os.path.dirname(os.path.abspath(__file__))
PRESETS = os.path.join(HERE, "..", "data", "models")


def load_config(model):
    path = model
    if not os.path.isdir(path):
        path = os.path.join(PRESETS, model)
    cfg_path = os.path.join(path, "config.json")
    if not os.path.isfile(cfg_path):
        presets = sorted(d for d in os.listdir(PRESETS) if os.path.isfile(os.path.join(PRESETS, d, "config.json")))
        raise ValueError(f"model '{model}' is neither a preset ({', '.join(presets)}) nor a directory with a config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "llama":
        raise fourfold.Unsupported(
            f"model '{model}' is a {cfg.get('model_type')} model; this peer implements the Llama architecture only")
    return cfg


def rope_inv_freq(cfg):
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) == "llama3":  # Llama 3's frequency-dependent scaling
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        lo_w, hi_w = old / lo, old / hi
        smooth = (old / wavelen - lo) / (hi - lo)
        scaled = torch.where(wavelen > lo_w, inv / factor, inv)
        mid = (wavelen <= lo_w) & (wavelen >= hi_w)
        inv = torch.where(mid, (1 - smooth) * inv / factor + smooth * inv, scaled)
    return inv


class Decoder:
    """A Llama decoder with a static KV cache of `capacity` positions (static shapes, so a
    compiled step is compiled once)."""

    def __init__(self, cfg, dtype, device, capacity, seed):
        g = torch.Generator(device=device).manual_seed(seed)  # on the device: an 8B model in seconds
        H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
        self.nh, self.nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.hd = H // self.nh
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        self.capacity, self.device, self.dtype = capacity, device, dtype

        # Weights [in, out], multiplied as x @ W. (gpt-fast's form, [out, in] through F.linear with q,
        # k and v in one matrix and inductor's coordinate-descent tuning, ran 130.8 tokens/s against
        # this form's 137.1, H200, builds ba5ea3b and 528a6b2: not the gap to the 202.3 of
        # REFERENCE_EXPERIMENTS.md's script, so the faster form stays the peer.)
        def w(*shape, scale=None):
            scale = scale or 1.0 / math.sqrt(shape[0])
            t = torch.empty(*shape, dtype=torch.float32, device=device)
            t.normal_(0.0, scale, generator=g)
            return t.to(dtype)

        self.embed = w(V, H, scale=1.0)
        self.layers = []
        for _ in range(cfg["num_hidden_layers"]):
            self.layers.append(dict(
                attn_norm=torch.ones(H, dtype=dtype, device=device),
                wq=w(H, self.nh * self.hd), wk=w(H, self.nkv * self.hd), wv=w(H, self.nkv * self.hd),
                wo=w(self.nh * self.hd, H), mlp_norm=torch.ones(H, dtype=dtype, device=device),
                w_gate=w(H, I), w_up=w(H, I), w_down=w(I, H)))
        self.norm = torch.ones(H, dtype=dtype, device=device)
        self.lm_head = self.embed.t() if cfg.get("tie_word_embeddings") else w(H, V)
        inv = rope_inv_freq(cfg)
        ang = torch.arange(capacity, dtype=torch.float64)[:, None] * inv[None, :]
        self.cos = torch.cos(ang).to(device=device, dtype=torch.float32)
        self.sin = torch.sin(ang).to(device=device, dtype=torch.float32)
        # One K and one V cache tensor a layer, as gpt-fast's KVCache modules hold them. (Until
        # session 44 they were slices of one [layers, ...] tensor: written in place through a view
        # of a graph input, which functionalisation may turn into a whole new base a layer, the
        # 38 MB of both caches rewritten 32 times a step at llama3-8b ctx 512. Not measured: the
        # peer ran 130.8-137.1 tokens/s where REFERENCE_EXPERIMENTS.md's script ran 202.3.)
        L = len(self.layers)
        self.k_cache = [torch.zeros(self.nkv, capacity, self.hd, dtype=dtype, device=device)
                        for _ in range(L)]
        self.v_cache = [torch.zeros_like(c) for c in self.k_cache]
        self.positions = torch.arange(capacity, device=device)

    def mark_static(self):
        """Marks every tensor the step reads or writes as a static address for torch.compile's
        CUDA graphs (gpt-fast's module buffers are); returns how many, 0 where torch lacks it."""
        mark = getattr(getattr(torch, "_dynamo", None), "mark_static_address", None)
        if mark is None:
            return 0
        tensors = [self.embed, self.norm, self.lm_head, self.cos, self.sin, self.positions]
        tensors.extend(self.k_cache)
        tensors.extend(self.v_cache)
        for l in self.layers:
            tensors.extend(l.values())
        seen = set()
        for t in tensors:
            if t._base is not None or t.data_ptr() in seen:  # a view (a tied LM head): its base is marked
                continue
            seen.add(t.data_ptr())
            mark(t)
        return len(seen)

    def weight_bytes(self):
        n = self.embed.numel() + (0 if self.lm_head.data_ptr() == self.embed.data_ptr() else self.lm_head.numel())
        for l in self.layers:
            n += sum(t.numel() for t in l.values())
        return n * self.embed.element_size()

    def _rms(self, x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * w

    def _rope(self, x, pos):  # x [T, heads, hd], pos [T]
        cos, sin = self.cos[pos][:, None, :], self.sin[pos][:, None, :]
        xf = x.float()
        x1, x2 = xf[..., : self.hd // 2], xf[..., self.hd // 2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)

    def forward(self, ids, pos):
        """ids [T] int64 on the device, pos [T] their positions: the logits of the last one."""
        T = ids.shape[0]
        x = self.embed[ids]
        valid = self.positions[None, :] <= pos[:, None]  # [T, capacity]
        mask = torch.zeros(T, self.capacity, dtype=torch.float32, device=ids.device).masked_fill(~valid, float("-inf"))
        rep = self.nh // self.nkv
        scale = 1.0 / math.sqrt(self.hd)
        for i, l in enumerate(self.layers):
            h = self._rms(x, l["attn_norm"])
            q = self._rope((h @ l["wq"]).view(T, self.nh, self.hd), pos)
            k = self._rope((h @ l["wk"]).view(T, self.nkv, self.hd), pos)
            v = (h @ l["wv"]).view(T, self.nkv, self.hd)
            self.k_cache[i].index_copy_(1, pos, k.transpose(0, 1))
            self.v_cache[i].index_copy_(1, pos, v.transpose(0, 1))
            # grouped-query attention without copying the cache: query head h reads kv head h // rep
            qg = q.transpose(0, 1).reshape(self.nkv, rep * T, self.hd)
            s = (qg @ self.k_cache[i].transpose(1, 2)).float().view(self.nkv, rep, T, self.capacity) * scale + mask
            p = torch.softmax(s, dim=-1).to(x.dtype).view(self.nkv, rep * T, self.capacity)
            a = (p @ self.v_cache[i]).view(self.nh, T, self.hd).transpose(0, 1).reshape(T, self.nh * self.hd)
            x = x + a @ l["wo"]
            h = self._rms(x, l["mlp_norm"])
            x = x + (torch.nn.functional.silu(h @ l["w_gate"]) * (h @ l["w_up"])) @ l["w_down"]
        return self._rms(x[-1:], self.norm) @ self.lm_head  # [1, V]


def greedy(logits):
    return torch.softmax(logits.float(), dim=-1).argmax(dim=-1)  # [1]


class Session:
    """One decode as fourfold's decode runs it: prefill the prompt, then steps of one token."""

    def __init__(self, model, prompt, compiled_step):
        self.m, self.prompt = model, prompt
        self.ctx = prompt.shape[0]
        self.token = torch.zeros(1, dtype=torch.int64, device=prompt.device)
        self.pos = torch.zeros(1, dtype=torch.int64, device=prompt.device)
        self.step_fn = compiled_step

    def prefill(self):
        logits = self.m.forward(self.prompt, self.m.positions[: self.ctx])
        self.token.copy_(greedy(logits))
        self.pos.fill_(self.ctx)
        return logits

    def step(self, i=0):
        logits = self.step_fn(self.token, self.pos)
        self.token.copy_(greedy(logits))
        self.pos.add_(1)
        return logits


def compile_step(model, variant, mode):
    """The decode step of `variant`, and what the record says about it."""
    step = model.forward
    if variant == "torch_eager":
        return step, {"compiled": False, "engine": "PyTorch eager"}
    if not hasattr(torch, "compile"):
        return step, {"compiled": False, "engine": "PyTorch eager (fallback)",
                      "compile_fallback": f"torch {torch.__version__} has no torch.compile; ran eager"}
    compile_mode = "reduce-overhead" if mode == "graph" else "default"
    about = {"compiled": True, "engine": "torch.compile", "compile_mode": compile_mode}
    if mode == "graph":
        # The weights and the KV cache are plain tensors reached through the model object, so
        # torch.compile sees them as graph inputs, and CUDA graphs refuse an input the step
        # mutates (the cache's index_copy_: "skipping cudagraphs due to mutated inputs", which
        # ran the step without graphs at 112 tokens/s on the H200, 2026-12-01). Marked as
        # static addresses they are what gpt-fast's module buffers are: captured in place.
        marked = model.mark_static()
        about["static_addresses"] = marked
    return torch.compile(step, mode=compile_mode, fullgraph=True), about


class DecodeCompile(fourfold.Workload):
    """torch.compile's decode of fourfold's decoder configuration (peer of `decode`)"""

    name = "decode_compile"
    peer_of = "decode"  # filed under decode's name with its params: compare pairs them by case
    # decode's own parameters, names, kinds and defaults alike (workloads/models/decode.cpp)
    params = {
        "model": fourfold.param("tiny-llama", help="a preset or a directory with a Hugging Face config.json (Llama)"),
        "ctx": fourfold.param(512, min=1, max=1 << 20, help="context length: prompt tokens prefilled"),
        "tokens": fourfold.param(64, min=1, max=1 << 16, help="decode steps timed per round"),
        "mode": fourfold.param("eager", choices=["eager", "graph"],
                               help="eager: torch.compile mode 'default'; graph: 'reduce-overhead' (CUDA graphs)"),
        "init_seed": fourfold.param(1, min=0, max=2 ** 31 - 1, help="seed of the random weights and the prompt"),
    }
    dtypes = ("bf16", "fp16", "fp32")
    ledgers = ("throughput", "memory")

    def __init__(self):
        self._model_key, self._model, self._steps = None, None, {}

    def model(self, case, device):
        key = (case.model, case.ctx, case.tokens, case.init_seed, case.dtype, str(device))
        if key != self._model_key:
            self._model = self._steps = None
            cfg = load_config(case.model)
            self._model = Decoder(cfg, case.torch_dtype, device, case.ctx + case.tokens + 1, case.init_seed)
            self._model_key, self._steps = key, {}
        return self._model

    def step_of(self, case, variant, model):
        if variant not in self._steps:
            self._steps[variant] = compile_step(model, variant, case.mode)
        return self._steps[variant]

    def inputs(self, case, seed):
        cfg = load_config(case.model)
        g = torch.Generator().manual_seed(case.init_seed)
        return {"prompt": torch.randint(0, cfg["vocab_size"], (case.ctx,), generator=g)}

    def _session(self, case, variant, prompt):
        if case.mode == "graph" and prompt.device.type != "cuda":
            raise fourfold.Unsupported("mode=graph needs CUDA graphs (torch.compile 'reduce-overhead'); "
                                       f"this device is {prompt.device}")
        m = self.model(case, prompt.device)
        step, about = self.step_of(case, variant, m)
        return Session(m, prompt, step), about, m

    def session(self, case, variant, prompt):
        s, about, m = self._session(case, variant, prompt)
        s.prefill()  # compiles the step's first call outside the timing (the warm-up round too)
        s.step()
        figures = dict(about, ctx=case.ctx, decode_steps=case.tokens, mode=case.mode, weights="random",
                       host_paced=not (about.get("compiled") and case.mode == "graph"),
                       bytes_read_per_token=m.weight_bytes(), torch=torch.__version__)
        return fourfold.Steps(lead_in=s.prefill, step=s.step, steps=case.tokens, figures=figures)

    def facts(self, case, variant):
        return {"peer": "torch.compile decode (bench/compile_decode.py)", "compile_available": hasattr(torch, "compile")}

    def _decode(self, case, variant, prompt):
        s, _, _ = self._session(case, variant, prompt)
        logits = s.prefill()
        for i in range(case.tokens):
            logits = s.step(i)
        return logits.float()

    @fourfold.variant(help="the decode step through torch.compile (eager where torch has no torch.compile, said in the record)")
    def torch_compile(self, case, prompt):
        return self._decode(case, "torch_compile", prompt)

    @fourfold.variant(help="the same decode step, uncompiled PyTorch")
    def torch_eager(self, case, prompt):
        return self._decode(case, "torch_eager", prompt)


def main(argv=None):
    p = argparse.ArgumentParser(description="torch.compile decode peer (standalone look; see the docstring for the store)")
    p.add_argument("--model", default="tiny-llama")
    p.add_argument("--ctx", type=int, default=32)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--mode", default="eager", choices=["eager", "graph"])
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args(argv)
    w = DecodeCompile()
    case = fourfold.Case("decode_compile", dict(model=a.model, ctx=a.ctx, tokens=a.tokens, mode=a.mode, init_seed=1), a.dtype)
    prompt = w.inputs(case, 0)["prompt"].to(a.device)
    dev = torch.device(a.device)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    for variant in ("torch_compile", "torch_eager"):
        steps = w.session(case, variant, prompt)
        ms = []
        for _ in range(a.rounds):
            steps.lead_in()
            for i in range(steps.steps):
                sync()
                t0 = time.perf_counter()
                steps.step(i)
                sync()
                ms.append((time.perf_counter() - t0) * 1e3)
        ms.sort()
        med = ms[len(ms) // 2]
        print(json.dumps(dict(variant=variant, tokens_per_s=1000.0 / med, ms_per_token_median=med, steps=len(ms),
                              **{k: v for k, v in steps.figures.items() if k != "bytes_read_per_token"})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
