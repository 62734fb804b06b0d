"""Results back into Python (fourfold.open) and out through the CLI (export, compare, report)."""
import json
import os

import pytest
import torch

import fourfold
from conftest import QUICK
from workloads_for_tests import ScaledAdd


def test_runs_records_and_pandas(db):
    a = fourfold.run(ScaledAdd, params={"n": [16, 32]}, dtypes="fp32", db=db, label="before", **QUICK)
    store = fourfold.open(db)
    runs = store.runs()
    assert [r.id for r in runs] == [a.run] and runs[0].label == "before" and runs[0].state == "complete"
    recs = store.records("before")
    assert [r.id for r in recs] == [r.id for r in a]
    assert recs.of("op_time")[0].samples, "samples are read back"
    pd = pytest.importorskip("pandas")
    df = recs.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == len(recs)
    assert set(df["param.n"]) == {16, 32}
    t = df[df.ledger == "op_time"]
    assert (t.median_us > 0).all() and set(t["mode"]) == {"host"}
    assert "metric.rel_l2" in df.columns
    assert len(store.to_pandas()) == len(recs)


def test_a_missing_store_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist|missing|no such"):
        fourfold.open(str(tmp_path / "none.db")).runs()
    assert not os.path.exists(tmp_path / "none.db")


def test_records_from_python_read_back_by_export_compare_report(db, cli, tmp_path):
    a = fourfold.run(ScaledAdd, params={"n": 64}, dtypes="fp32", db=db, label="py_a", **QUICK)
    b = fourfold.run(ScaledAdd, params={"n": 64}, dtypes="fp32", db=db, label="py_b", **QUICK)
    out = json.loads(cli("export", "--db", db, "--format", "json", "--run", "py_a").stdout)
    assert [r["id"] for r in out["records"]] == [r.id for r in a]
    assert out["records"][0]["workload"] == "test_scaled_add"
    assert out["runs"][0]["provenance"]["python"]["torch"] == torch.__version__
    # two runs of one Python workload: paired by key; the treatment names no difference but the
    # ones every run has
    cmp = cli("compare", "py_a", "py_b", "--db", db, "--format", "json")
    c = json.loads(cmp.stdout)
    text = json.dumps(c)
    assert "test_scaled_add" in text
    # one run's variants against its stock
    within = cli("compare", "py_b", "--baseline-variant", "stock", "--db", db).stdout
    assert "fused" in within
    html = str(tmp_path / "report.html")
    cli("report", "py_a", "py_b", "--db", db, "-o", html)
    page = open(html).read()
    assert "test_scaled_add" in page and "<svg" in page
    md = cli("report", "py_a", "--db", db, "--format", "md", "-o", str(tmp_path / "r.md"))
    assert "test_scaled_add" in open(tmp_path / "r.md").read()
