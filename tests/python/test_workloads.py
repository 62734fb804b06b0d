"""Python-defined workloads: declared, validated and swept by the engine like the C++ ones."""
import os

import pytest
import torch

import fourfold
from conftest import QUICK
from workloads_for_tests import ScaledAdd, WrongAdd


def test_sweep_over_two_params_and_two_dtypes(db):
    recs = fourfold.run(ScaledAdd, params={"n": [64, 128], "scale": 3}, dtypes="fp32,bf16", db=db,
                        label="sweep", **QUICK)
    assert recs.exit_code == 0
    cases = {(r.params["n"], r.params["scale"], r.dtype) for r in recs}
    assert cases == {(n, 3, d) for n in (64, 128) for d in ("fp32", "bf16")}
    # 4 cases x 2 variants x 3 ledgers
    assert len(recs) == 24 and all(r.status == "ok" for r in recs), [r.reason for r in recs if r.reason]
    assert all(r.value == "PASS" for r in recs.of("correctness"))
    t = [r for r in recs.of("op_time") if r.params["n"] == 128 and r.dtype == "bf16" and r.variant == "stock"][0]
    assert t.figures["bytes_moved"] == 2 * 128 * 2  # the declared cost: read and write once
    assert t.figures["facts"]["defined_in"] == "python"
    # the same seed for every variant of a case, as the C++ workloads
    seeds = {r.seed for r in recs if r.params["n"] == 64 and r.dtype == "fp32"}
    assert len(seeds) == 1


def test_a_range_a_shape_and_a_variant_subset(db):
    recs = fourfold.run("test_scaled_add", shapes="32", params={"scale": "1..2"}, variants="fused",
                        ledgers="correctness", db=db)
    assert {(r.params["n"], r.params["scale"], r.variant) for r in recs} == {(32, 1, "fused"), (32, 2, "fused")}


def test_a_wrong_variant_fails_correctness(db):
    recs = fourfold.run(WrongAdd, dtypes="fp32", params={"n": 512}, ledgers="correctness", db=db)
    verdicts = {r.variant: r.value for r in recs}
    assert verdicts == {"stock": "PASS", "fused": "PASS", "wrong": "FAIL"}
    wrong = [r for r in recs if r.variant == "wrong"][0]
    assert wrong.figures["failed_checks"]
    assert "repro" in wrong.figures
    assert recs.exit_code == 1


@pytest.mark.parametrize("kwargs, words", [
    (dict(params={"n": 0}), "n"),
    (dict(params={"n": "many"}), "many"),
    (dict(params={"size": 4}), "size"),
    (dict(dtypes="fp16"), "fp16"),
    (dict(dtypes="fp99"), "fp99"),
    (dict(variants="fast"), "fast"),
    (dict(shapes="4x4"), "shape"),
    (dict(ledgers="throughput"), "throughput"),
    (dict(params={"n": []}), "empty"),
    (dict(params={"n": 1.5}), "float"),
    (dict(seed="-3"), "seed"),
])
def test_bad_values_raise_value_error_naming_them_and_leave_the_store_untouched(db, kwargs, words):
    fourfold.run(ScaledAdd, params={"n": 8}, dtypes="fp32", ledgers="correctness", db=db)
    with open(db, "rb") as f:
        before = f.read()
    args = dict(db=db, **QUICK)
    args.update(kwargs)
    with pytest.raises(ValueError) as e:
        fourfold.run(ScaledAdd, **args)
    assert words in str(e.value), str(e.value)
    with open(db, "rb") as f:
        assert f.read() == before


def test_bad_declarations_raise_value_error(db):
    class NoVariants(fourfold.Workload):
        name = "test_no_variants"

        def inputs(self, case, seed):
            return {"x": torch.ones(1)}

    class BadDtype(ScaledAdd):
        name = "test_bad_dtype"
        dtypes = ("fp33",)

    class BadLedger(ScaledAdd):
        name = "test_bad_ledger"
        ledgers = ("op_time", "speed")

    class Taken(ScaledAdd):
        name = "softmax"

    for cls, words in ((NoVariants, "no variants"), (BadDtype, "fp33"), (BadLedger, "speed"),
                       (Taken, "taken")):
        with pytest.raises(ValueError, match=words):
            fourfold.run(cls, db=db)
    with pytest.raises(ValueError, match="unknown"):
        fourfold.run("no_such_workload", db=db)
    with pytest.raises(ValueError, match="int, a bool or a str"):
        fourfold.param(1.5)
    with pytest.raises(ValueError, match="choices"):
        fourfold.param("a", choices=["b"])
    assert not os.path.exists(db)


def test_a_workload_whose_inputs_raise_fails_its_records(db):
    class Broken(ScaledAdd):
        name = "test_broken_inputs"

        def inputs(self, case, seed):
            raise RuntimeError("no inputs today")

    recs = fourfold.run(Broken, dtypes="fp32", params={"n": 4}, db=db, **QUICK)
    assert recs and all(r.status == "failed" for r in recs)
    assert "no inputs today" in recs[0].reason


def test_a_builtin_workload_run_from_python(db):
    a = fourfold.run("softmax", params={"rows": 2, "vocab": 300}, dtypes="fp32", ledgers="correctness", db=db)
    assert {r.variant for r in a} >= {"stock", "generic"}
    assert all(r.value == "PASS" for r in a if r.status == "ok")
    assert fourfold.open(db).run(a.run).provenance["python"]["torch"] == torch.__version__


def test_unsupported_is_a_skip_with_its_reason(db):
    class NeedsGpu(ScaledAdd):
        name = "test_needs_gpu"

        @fourfold.variant
        def gpu_only(self, case, x):
            raise fourfold.Unsupported("needs a GPU; this device is the CPU")

    recs = fourfold.run(NeedsGpu, dtypes="fp32", params={"n": 4}, variants="gpu_only", db=db, **QUICK)
    assert all(r.status == "skipped" for r in recs)
    assert "needs a GPU" in recs[0].reason
