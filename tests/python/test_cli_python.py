"""`fourfold run --python FILE --workload NAME`: the CLI hands the run to the package."""
import json
import os
import sqlite3

import fourfold

HERE = os.path.dirname(os.path.abspath(__file__))
FILE = os.path.join(HERE, "workloads_for_tests.py")
QUICK = ["--min-time", "0.05", "--timeout", "2", "--warmup", "0.01"]


def test_run_python_workload_from_the_cli(db, cli):
    p = cli("run", "--python", FILE, "--workload", "test_scaled_add", "--param", "n=16,32", "--dtype", "fp32",
            "--db", db, "--label", "from_cli", *QUICK)
    assert "test_scaled_add" in p.stdout and "run 1" in p.stdout
    recs = fourfold.open(db).records("from_cli")
    assert len(recs) == 2 * 2 * 3 and all(r.status == "ok" for r in recs)
    run = fourfold.open(db).run("from_cli")
    assert run.command.startswith("fourfold run --python")
    out = json.loads(cli("export", "--db", db, "--format", "json").stdout)
    assert len(out["records"]) == 12


def test_bad_input_from_the_cli_is_one_line_and_exit_2(db, cli):
    cases = [
        (["--workload", "nope"], "nope"),
        (["--workload", "test_scaled_add", "--param", "n=0"], "n"),
        (["--workload", "test_scaled_add", "--dtype", "fp16"], "fp16"),
        (["--workload", "test_scaled_add", "--isolate"], "isolate"),
    ]
    for args, words in cases:
        p = cli("run", "--python", FILE, "--db", db, *args, *QUICK, check=False)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("fourfold: error:") and words in lines[0], p.stderr
    p = cli("run", "--python", os.path.join(HERE, "no_such_file.py"), "--workload", "x", "--db", db, check=False)
    assert p.returncode == 2 and "does not exist" in p.stderr
    assert not os.path.exists(db)


def test_a_correctness_fail_from_the_cli_exits_1(db, cli):
    p = cli("run", "--python", FILE, "--workload", "test_wrong_add", "--ledgers", "correctness", "--dtype", "fp32",
            "--db", db, check=False)
    assert p.returncode == 1, p.stderr
    assert "FAIL" in p.stdout
    n = sqlite3.connect(db).execute("select count(*) from runs").fetchone()[0]
    assert n == 1
