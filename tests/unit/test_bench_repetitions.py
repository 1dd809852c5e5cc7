"""``bench/peers.py``: each issue-37 ratio also read repetition by repetition (issue 37).

A repetition runs every server back to back, so the ratio of two servers within one repetition
compares runs that shared the machine's state; a verdict met in some repetitions and missed in
others is the machine's noise, one missed in all of them is not.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench import peers


def run(rps: float, p99: float = 10.0) -> dict[str, Any]:
    return {"rps": rps, "p50_ms": 1.0, "p99_ms": p99, "mean_ms": 1.0, "cpu_us_per_req": None, "other_cpu_pct": None,
            "errors": 0}  # fmt: skip


def test_ratios_pair_the_runs_of_one_repetition() -> None:
    ours = [run(90), run(120), run(80)]
    other = [run(100), run(100), run(160)]
    assert peers.rep_ratios(ours, other, "rps") == pytest.approx([0.9, 1.2, 0.5])
    assert peers.rep_ratios(ours, other[:2], "rps") == []  # a repetition missing: no pairs
    assert peers.rep_ratios(None, other, "rps") == []
    assert peers.rep_ratios([run(90)], [run(0)], "rps") == []  # no ratio of a run that served nothing


def test_each_target_says_in_how_many_repetitions_it_held(capsys: pytest.CaptureFixture[str]) -> None:
    measured = {
        ("ours-wsgi", "tools/call", 1): [run(95), run(85), run(91)],
        ("bare", "tools/call", 1): [run(100), run(100), run(100)],
        ("ours-asgi", "tools/call", 32): [run(130, 20.0), run(125, 9.0), run(110, 12.0)],
        ("mcpz", "tools/call", 32): [run(100, 10.0), run(100, 10.0), run(100, 10.0)],
        ("ours-wsgi", "tools/list", 1): [run(140), run(160), run(130)],
        ("ours-lean", "tools/list", 1): [run(155), run(150), run(120)],
        ("mcpz", "tools/list", 1): [run(100), run(100), run(100)],
    }
    order = ["bare", "ours-asgi", "ours-wsgi", "ours-lean", "mcpz"]
    rows = [{"server": n, "method": m, "concurrency": c, **peers.median_of(r)} for (n, m, c), r in measured.items()]
    targets = {t["target"]: t for t in peers.print_issue37(order, rows, measured, {})}

    wsgi = targets["ours-wsgi tools/call c=1 / bare (gunicorn sync)"]
    assert wsgi["repetitions"] == pytest.approx([0.95, 0.85, 0.91])
    assert wsgi["met_in"] == 2
    assert wsgi["met"] is True  # the median run's 0.91
    rate = targets["ours-asgi tools/call c=32 / django-mcpz"]
    assert rate["met_in"] == 2  # 1.30 and 1.25, not 1.10
    tail = targets["ours-asgi tools/call c=32 p99 / django-mcpz's p99"]
    assert tail["repetitions"] == pytest.approx([2.0, 0.9, 1.2])
    assert tail["met_in"] == 1
    best = targets["best of ours tools/list c=1 / django-mcpz"]
    assert best["repetitions"] == pytest.approx([1.55, 1.6, 1.3])  # the best of ours in each repetition
    assert best["met_in"] == 2
    assert "repetitions 0.85-0.95, met in 2 of 3" in capsys.readouterr().out
