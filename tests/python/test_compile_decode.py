"""The torch.compile decode peer (bench/compile_decode.py): a Python throughput workload whose
records are filed beside `decode`'s, in one run, and paired by compare."""
import json
import os
import runpy
import subprocess
import sys

import pytest
import torch

import fourfold
from conftest import ROOT

PEER = os.path.join(ROOT, "bench", "compile_decode.py")
QUICK = dict(min_time="0.05", timeout="2", warmup="0.01")
TINY = {"model": "tiny-llama", "ctx": 8, "tokens": 4}


@pytest.fixture(scope="module")
def peer():
    return runpy.run_path(PEER, run_name="compile_decode")["DecodeCompile"]


def test_peer_and_native_decode_in_one_run_compared(db, peer, cli):
    recs = fourfold.run(["decode", peer], params=TINY, dtypes="fp32", ledgers="throughput,memory", db=db,
                        label="peer", **QUICK)
    assert recs.exit_code == 0, [(r.variant, r.reason) for r in recs]
    t = {r.variant: r for r in recs.of("throughput")}
    assert set(t) == {"stock", "generic", "native", "native_fused", "torch_compile", "torch_eager"}
    assert all(r.workload == "decode" for r in t.values())
    assert all(t[v].status == "ok" for v in ("stock", "torch_compile", "torch_eager")), [r.reason for r in t.values()]
    assert t["generic"].status == "skipped"  # decode's own: a dense model has no MoE path to differ in
    assert t["native"].status == "skipped"  # fourfold's kernels: CUDA only
    assert t["native_fused"].status == "skipped"
    assert t["stock"].params == t["torch_compile"].params  # the same case: compare pairs them
    c = t["torch_compile"]
    assert c.figures["defined_as"] == "decode_compile" and c.value > 0 and c.unit == "tokens/s"
    assert c.figures["stop"] in ("converged", "timed_out", "sample_cap")
    if hasattr(torch, "compile"):
        assert c.figures["compiled"] is True
    else:
        assert c.figures["compiled"] is False and "no torch.compile" in c.figures["compile_fallback"]
    assert all(r.status == "ok" for r in recs.of("memory")
               if r.variant not in ("generic", "native", "native_fused"))
    out = cli("compare", "peer", "--baseline-variant", "stock", "--db", db, "--format", "json").stdout
    text = json.dumps(json.loads(out))
    assert "torch_compile" in text and "torch_eager" in text


def test_peer_graph_mode_on_the_cpu_is_a_skip(db, peer):
    recs = fourfold.run(peer, params=dict(TINY, mode="graph"), dtypes="fp32", ledgers="throughput", db=db, **QUICK)
    assert all(r.status == "skipped" for r in recs)
    assert "CUDA graphs" in recs[0].reason


def test_peer_params_are_decodes(peer):
    mine = {p["name"]: p for p in peer.descriptor()["params"]}
    # a decode parameter left out of the job's params at its default (weights=model) is not the
    # peer's: it measures that default, and its records pair with decode's without it
    theirs = {p["name"]: p for p in [w for w in fourfold.workloads() if w["name"] == "decode"][0]["params"]
              if not p.get("omitted_at_default")}
    assert set(mine) == set(theirs)
    for name in mine:
        assert mine[name]["kind"] == theirs[name]["kind"] and mine[name]["default"] == theirs[name]["default"]


def test_standalone(tmp_path):
    env = dict(os.environ)
    p = subprocess.run([sys.executable, PEER, "--ctx", "8", "--tokens", "4", "--rounds", "1"], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    assert [l["variant"] for l in lines] == ["torch_compile", "torch_eager"]
    assert all(l["tokens_per_s"] > 0 for l in lines)
