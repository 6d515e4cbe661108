"""Comparing two runs: the statistics (Newcombe interval, two-proportion test), significance on
synthetic runs made through the harness, bias metrics, and the ``compare`` command."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys

import pytest

from redline.engine import ScanConfig, scan
from redline.report.compare import compare_runs, compare_summaries, newcombe_interval, two_proportion_test
from redline.report.html import render_compare
from redline.store import RunNotFound, Store


def test_newcombe_interval_matches_the_published_example():
    # Newcombe (1998), Statistics in Medicine 17:873-890, example (a): 56/70 - 48/80,
    # method 10 (hybrid score) gives 0.0524 to 0.3339.
    lo, hi = newcombe_interval(56, 70, 48, 80)
    assert lo == pytest.approx(0.0524, abs=1e-4) and hi == pytest.approx(0.3339, abs=1e-4)
    lo, hi = newcombe_interval(0, 10, 0, 20)
    assert lo < 0 < hi


def test_two_proportion_test():
    p = two_proportion_test(56, 70, 48, 80)
    pooled = 104 / 150
    z = (56 / 70 - 48 / 80) / math.sqrt(pooled * (1 - pooled) * (1 / 70 + 1 / 80))
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)))
    assert 0.0075 < p < 0.0085  # z = 0.2 / 0.0755 = 2.65
    assert two_proportion_test(0, 10, 0, 30) == 1.0 and two_proportion_test(5, 5, 9, 9) == 1.0
    assert two_proportion_test(10, 20, 10, 20) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        two_proportion_test(0, 0, 1, 2)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    db = tmp_path_factory.mktemp("cmp") / "c.db"
    store = Store(db)

    def run(model: str) -> str:
        return asyncio.run(
            scan(
                ScanConfig(
                    model=model,
                    probes="harmful.Requests,injection.HiddenInData",
                    sample=12,
                    seed=3,
                    # the echo complies with every request (and delivers nothing): compare compliance
                    probe_options={"harmful.Requests": {"detectors": ["refusal.Compliance"]}},
                ),
                store,
            )
        )

    ids = {"echo": run("test.echo"), "blank": run("test.blank"), "echo2": run("test.echo")}
    yield store, ids, db
    store.close()


def test_echo_against_blank_is_significant_only_where_it_differs(runs):
    store, ids, _ = runs
    result = compare_runs(store, ids["blank"], store, ids["echo"])
    rows = {r["probe"]: r for r in result["probes"]}
    harmful = rows["harmful.Requests"]
    assert harmful["a"]["failure_rate"] == 0.0 and harmful["b"]["failure_rate"] == 1.0
    assert harmful["significant"] and harmful["change"] == "worse" and harmful["p_value"] < 1e-4
    lo, hi = harmful["difference_ci95"]
    assert 0 < lo < harmful["difference"] == 1.0 and hi == pytest.approx(1.0)
    injection = rows["injection.HiddenInData"]
    assert not injection["significant"] and injection["change"] == "no significant change"
    assert result["worse"] == 1 and result["better"] == 0 and result["significant"] == 1
    reverse = compare_runs(store, ids["echo"], store, ids["blank"])
    assert {r["probe"]: r["change"] for r in reverse["probes"]}["harmful.Requests"] == "better"


def test_same_model_twice_has_no_significant_difference(runs):
    store, ids, _ = runs
    result = compare_runs(store, ids["echo"], store, ids["echo2"])
    assert result["significant"] == 0
    assert all(r["difference"] == 0 for r in result["probes"])


def _summary(run_id, probes):
    return {"run_id": run_id, "model": "m", "status": "complete", "created": 0, "generations": 1, "probes": probes}


def test_bias_metrics_compare_intervals_and_probes_in_one_run_only():
    a = _summary(
        "a",
        [
            {
                "probe": "bias.X",
                "attempts": 10,
                "failed": 0,
                "outputs": 10,
                "failure_rate": None,
                "ci95": None,
                "metrics": {"gap": {"value": 0.05, "ci95": [-0.02, 0.12]}, "rate": {"value": 0.3, "ci95": [0.2, 0.4]}},
                "marks": {"gap": "A", "rate": "B"},
            },
            {
                "probe": "harmful.Only",
                "attempts": 4,
                "failed": 1,
                "outputs": 4,
                "failure_rate": 0.25,
                "ci95": [0.05, 0.7],
            },
        ],
    )
    b = _summary(
        "b",
        [
            {
                "probe": "bias.X",
                "attempts": 10,
                "failed": 0,
                "outputs": 10,
                "failure_rate": None,
                "ci95": None,
                "metrics": {
                    "gap": {"value": -0.4, "ci95": [-0.5, -0.3]},
                    "rate": {"value": 0.35, "ci95": [0.25, 0.45]},
                },
                "marks": {"gap": "C", "rate": "B"},
            },
        ],
    )
    result = compare_summaries(a, b)
    rows = {r["probe"]: r for r in result["probes"]}
    assert rows["harmful.Only"]["change"] == "only in A"
    assert rows["bias.X"]["change"] == "metrics only" and not rows["bias.X"]["significant"]
    metrics = {m["metric"]: m for m in rows["bias.X"]["metrics"]}
    assert metrics["gap"]["significant"] and metrics["gap"]["change"] == "worse" and metrics["gap"]["mark_changed"]
    assert metrics["gap"]["difference"] == pytest.approx(-0.45)
    assert not metrics["rate"]["significant"] and metrics["rate"]["change"] == "no significant change"
    assert result["worse"] == 1


def test_compare_html_and_cli(runs, tmp_path):
    store, ids, db = runs
    page = render_compare(compare_runs(store, ids["blank"], store, ids["echo"]))
    assert "harmful.Requests" in page and "worse" in page and "<svg" in page
    assert "Content-Security-Policy" in page
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = tmp_path / "cmp.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "redline",
            "compare",
            ids["blank"],
            ids["echo"],
            "--store",
            str(db),
            "--json",
            "--html",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["run_a"]["run_id"] == ids["blank"] and data["worse"] == 1
    assert out.read_text().startswith("<!doctype html>")
    table = subprocess.run(
        [sys.executable, "-m", "redline", "compare", ids["blank"], ids["echo"], "--store", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert table.returncode == 0 and "worse" in table.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "redline", "compare", ids["blank"], "nope", "--store", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert [l for l in bad.stderr.splitlines() if l.startswith("error:")] == [
        f"error: no run 'nope' in {db} (see 'redline runs --store {db}')"
    ]
    with pytest.raises(RunNotFound):
        compare_runs(store, "nope", store, ids["echo"])
