#!/usr/bin/env python3
"""softmax over one row of logits timed by PyTorch's and Triton's own tools, for comparison with
fourfold's event and graph modes in the same call on the same GPU (issue 2).

torch.utils.benchmark: host timer around a loop of calls with a synchronize - launch overhead
included, warm L2. triton.testing.do_bench: CUDA events per call, L2 cleared before each call
(a 256 MB write), so it matches fourfold's event mode with a cold cache."""
import argparse
import json

import torch
import torch.utils.benchmark as tb
import triton.testing

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=1)
parser.add_argument("--vocab", type=int, default=128256)
parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"])
args = parser.parse_args()
dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]

x = torch.randn(args.rows, args.vocab, device="cuda", dtype=dtype) * 2
for _ in range(10):
    torch.softmax(x, -1)
torch.cuda.synchronize()

timer = tb.Timer(stmt="torch.softmax(x, -1)", globals={"x": x, "torch": torch})
m = timer.blocked_autorange(min_run_time=2.0)
tb_us = m.median * 1e6
do_bench_us = triton.testing.do_bench(lambda: torch.softmax(x, -1), warmup=100, rep=2000,
                                      return_mode="median") * 1e3

# CUDA graph of 100 calls replayed, same as fourfold's graph mode with one input set (hot)
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        torch.softmax(x, -1)
torch.cuda.current_stream().wait_stream(s)
with torch.cuda.graph(g):
    for _ in range(100):
        torch.softmax(x, -1)
g.replay()
torch.cuda.synchronize()
times = []
for _ in range(50):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    torch.cuda.synchronize()
    times.append(a.elapsed_time(b) * 1e3 / 100)
times.sort()
graph_us = times[len(times) // 2]

print(json.dumps({"op": f"softmax {args.rows}x{args.vocab} {args.dtype}",
                  "torch": torch.__version__, "device": torch.cuda.get_device_name(),
                  "torch_utils_benchmark_median_us": round(tb_us, 2),
                  "triton_do_bench_median_us": round(do_bench_us, 2),
                  "torch_cuda_graph_100_calls_median_us": round(graph_us, 2)}))
