"""fourfold.measure: a callable on the three operator ledgers, through the engine."""
import os
import sqlite3

import pytest
import torch

import fourfold
from conftest import QUICK


def test_softmax_on_three_ledgers(db):
    x = torch.randn(8, 1000)
    recs = fourfold.measure(torch.softmax, x, -1, db=db, label="py_softmax", **QUICK)
    assert recs.exit_code == 0
    assert sorted(r.ledger for r in recs) == ["correctness", "memory", "op_time"]
    assert all(r.status == "ok" for r in recs), [(r.ledger, r.reason) for r in recs]
    t = recs.op_time
    assert t.workload == "py.softmax" and t.variant == "call" and t.dtype == "fp32" and t.device == "cpu"
    assert t.params == {"inputs": "fp32[8x1000] -1"}
    assert t.unit == "us" and t.figures["mode"] == "host"
    assert t.value > 0 and t.figures["stats"]["n"] >= 10 and len(t.samples) == t.figures["stats"]["n"]
    c = recs.correctness
    assert c.value == "PASS"
    assert c.figures["metrics"]["rel_l2"] < 1e-6
    assert "upcast to float64" in c.figures["reference"]["method"]
    m = recs.memory
    assert m.status == "ok" and m.figures["calls"] > 0
    # the Python call's cost, measured, in each record's facts and the run's provenance
    pc = t.figures["facts"]["python_call"]
    assert 0 < pc["overhead_us_median"] < 10000 and pc["calls_measured"] == 2000
    assert "graph" in pc["included_in"]
    run = fourfold.open(db).run("py_softmax")
    assert run.provenance["python"]["torch"] == torch.__version__
    assert run.provenance["python"]["version"].startswith("3.")
    assert run.provenance["request"]["python_call_overhead"]["overhead_us_median"] > 0
    assert run.provenance["request"]["front_end"] == "python"
    assert run.status == "complete"


def test_two_callables_against_a_given_reference(db):
    def manual_attention(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v

    def baddbmm_attention(q, k, v):
        s = torch.baddbmm(torch.zeros(q.shape[0], q.shape[1], k.shape[1]), q, k.transpose(-1, -2),
                          beta=0, alpha=q.shape[-1] ** -0.5)
        return torch.bmm(torch.softmax(s, dim=-1), v)

    q, k, v = (torch.randn(4, 32, 16) for _ in range(3))
    recs = fourfold.measure({"manual": manual_attention, "baddbmm": baddbmm_attention}, q, k, v,
                            reference=manual_attention, db=db, **QUICK)
    assert recs.exit_code == 0
    assert {(r.ledger, r.variant) for r in recs} == {
        (l, v) for l in ("op_time", "correctness", "memory") for v in ("manual", "baddbmm")}
    assert all(r.value == "PASS" for r in recs.of("correctness"))
    assert "manual_attention (the given reference)" in recs.of("correctness")[0].figures["reference"]["method"]


def test_a_wrong_callable_fails_correctness(db):
    x = torch.randn(4, 64)
    recs = fourfold.measure(lambda t: torch.softmax(t, -1) * 1.01, x, name="wrong_softmax",
                            reference=lambda t: torch.softmax(t, -1), ledgers="correctness", db=db)
    assert recs.correctness.value == "FAIL"
    assert recs.exit_code == 1


def test_bf16_input_is_a_bf16_job_with_its_tolerance(db):
    x = torch.randn(2, 512).to(torch.bfloat16)
    recs = fourfold.measure(torch.softmax, x, -1, ledgers=["correctness"], db=db)
    c = recs.correctness
    assert c.dtype == "bf16" and c.value == "PASS"
    assert "bf16" in c.figures["tolerance"]["source"]


def test_a_callable_that_raises_is_a_failed_record(db):
    def broken(x):
        raise RuntimeError("this kernel is broken")

    recs = fourfold.measure(broken, torch.ones(3), db=db, **QUICK)
    assert all(r.status == "failed" for r in recs)
    assert "this kernel is broken" in recs.correctness.reason
    assert recs.exit_code == 3


def test_graph_timing_on_the_cpu_is_a_skip_with_its_reason(db):
    recs = fourfold.measure(torch.relu, torch.randn(100), timing="graph", ledgers="op_time", db=db, **QUICK)
    assert recs.op_time.status == "skipped"
    assert "graph" in recs.op_time.reason
    assert recs.exit_code == 4


@pytest.mark.parametrize("kwargs, words", [
    (dict(timing="warp"), "--timing 'warp'"),
    (dict(ledgers="speed"), "speed"),
    (dict(ledgers=["throughput"]), "throughput"),
    (dict(label="123"), "label"),
    (dict(min_time="-1"), "min-time"),
    (dict(device="tpu"), "tpu"),
    (dict(threads="0"), "threads"),
    (dict(db=""), "db"),
])
def test_bad_arguments_raise_value_error_and_leave_the_store_untouched(db, kwargs, words):
    x = torch.randn(16)
    fourfold.measure(torch.relu, x, db=db, ledgers="correctness")  # one run in the store
    before = os.path.getsize(db), sqlite3.connect(db).execute("select count(*) from runs").fetchone()
    args = dict(db=db, **QUICK)
    args.update(kwargs)
    with pytest.raises(ValueError) as e:
        fourfold.measure(torch.relu, x, **args)
    assert words in str(e.value), str(e.value)
    assert "\n" not in str(e.value)
    if args["db"]:
        after = os.path.getsize(db), sqlite3.connect(db).execute("select count(*) from runs").fetchone()
        assert after == before


def test_bad_arguments_to_measure_itself(db):
    with pytest.raises(ValueError, match="at least one tensor"):
        fourfold.measure(torch.relu, 3.0, db=db)
    with pytest.raises(ValueError, match="not callable"):
        fourfold.measure(torch.relu, torch.ones(2), reference=5, db=db)
    with pytest.raises(ValueError, match="empty dict"):
        fourfold.measure({}, torch.ones(2), db=db)
    with pytest.raises(ValueError, match="taken"):
        fourfold.measure(torch.softmax, torch.ones(2), -1, name="softmax", db=db)
    assert not os.path.exists(db)
