"""bench/gpu/timeline_table.py, the in-graph kernel table of stage s49_timeline, on traces written
the way bench/gpu/kernel_timeline.cpp writes them (tab-separated, one row a kernel): replays cut
by the graph's node count, each kernel's exposed time, gap and overlap, and the exposed times of a
replay adding up to its span."""
import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
import timeline_table as tt  # noqa: E402

HEADER = "start_ns\tend_ns\tgraph_id\tgraph_node_id\tstream\tgrid\tblock\tsmem\tregisters\tname\n"


def trace(path, replays, drop=None):
    """A graph of three kernels a layer, two layers, `replays` times: the attention starts 1 µs
    before the qkv GEMV ends (a dependent launch's overlap), the o GEMV 0.5 µs after the attention
    ends (a gap); a kernel outside the graph first. `drop`: (replay, node) left out."""
    rows, t = [], 1_000
    rows.append((t, t + 500, 0, 0, 1, 32, "fill<float>"))
    t += 10_000
    for r in range(replays):
        for layer in range(2):
            node = layer * 3
            qkv = (t, t + 5_000)
            attention = (qkv[1] - 1_000, qkv[1] + 7_000)
            o = (attention[1] + 500, attention[1] + 6_500)
            for i, (s, e, grid, name) in enumerate(
                ((*qkv, 528, "gemv_balanced<__nv_bfloat16, 1, 1>"),
                 (*attention, 72, "fourfold::kernels::(anonymous namespace)::attention<128>"),
                 (*o, 132, "gemv_cs<__nv_bfloat16, 1, 16>"))):
                if drop != (r, node + i + 1):
                    rows.append((s, e, 3, node + i + 1, grid, 256, name))
            t = o[1]
        t += 3_000
    with open(path, "w") as f:
        f.write(HEADER)
        for s, e, g, n, grid, block, name in rows:
            f.write(f"{s}\t{e}\t{g}\t{n}\t7\t{grid}\t{block}\t0\t64\t{name}\n")


def test_a_replays_exposed_times_add_up_to_its_span(tmp_path):
    path = tmp_path / "tl.1.tsv"
    trace(path, 10)
    rows = tt.read([str(path)])
    graphs = [r for r in rows if r["graph"][1] != 0]
    nodes, replays = tt.replays_of(graphs)
    assert nodes == 6 and len(replays) == 10
    steps, first, last = tt.walk(replays[0])
    assert sum(exposed for _, _, _, exposed in steps) == last - first == 37_000
    by_name = {}
    for r, gap, overlap, exposed in steps[:3]:
        by_name[r["name"].split("<")[0].rsplit("::", 1)[-1]] = (gap, overlap, exposed)
    assert by_name["gemv_balanced"] == (0, 0, 5_000)
    assert by_name["attention"] == (0, 1_000, 7_000)  # 8 µs alone, 1 of them beside the qkv GEMV
    assert by_name["gemv_cs"] == (500, 0, 6_500)  # the gap before it is its own


def test_a_replay_short_of_a_record_is_left_out(tmp_path):
    path = tmp_path / "tl.2.tsv"
    trace(path, 10, drop=(9, 4))  # the last replay's second qkv GEMV
    graphs = [r for r in tt.read([str(path)]) if r["graph"][1] != 0]
    nodes, replays = tt.replays_of(graphs)
    assert nodes == 6 and len(replays) == 9


def test_the_table_prints_each_kind_and_says_when_no_graph_replayed_enough(tmp_path, capsys,
                                                                          monkeypatch):
    path = tmp_path / "tl.3.tsv"
    trace(path, 10)
    monkeypatch.setattr(sys, "argv", ["timeline_table.py", "--nodes", "3", str(path)])
    assert tt.main() == 0
    out = capsys.readouterr().out
    assert "6 kernels a replay, 10 replays, median span 37.0 µs" in out
    # per step: two of each kind, 1 µs of overlap each attention, 0.5 µs of gap each o GEMV
    assert "| `attention<128>` | 72 x 256 | 2 | 8.00 | 0.00 | 2.00 | **14.0** | 7.00 | 37.8 % |" in out
    assert "| `gemv_cs<bf16, 1, 16>` | 132 x 256 | 2 | 6.00 | 1.00 | 0.00 | **13.0** | 6.50 | 35.1 % |" in out
    assert "| (sum of the medians) | | 6 | | | | 37.0 | | |" in out
    monkeypatch.setattr(sys, "argv", ["timeline_table.py", "--min-replays", "11", str(path)])
    assert tt.main() == 1
    assert "no graph replayed 11 times or more" in capsys.readouterr().out
