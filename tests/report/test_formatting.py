"""Counts in reports and on the command line read as English: ``1 attempt``, ``2 attempts``."""

from __future__ import annotations

import asyncio
import html

import pytest

from redline.cli.main import main
from redline.engine import ScanConfig, scan
from redline.report.compare import compare_runs
from redline.report.exports import export
from redline.report.formatting import plural
from redline.report.html import render_compare, render_report
from redline.store import Store


def test_plural():
    assert plural(0, "attempt") == "0 attempts"
    assert plural(1, "attempt") == "1 attempt"
    assert plural(2, "attempt") == "2 attempts"
    assert plural(1, "family", "families") == "1 family"
    assert plural(3, "family", "families") == "3 families"
    assert plural(1, "significant change") == "1 significant change"


#: harmful.Requests judged by compliance alone: the echo complies (it delivers nothing, no harm)
ECHO_FAILS = {"harmful.Requests": {"detectors": ["refusal.Compliance"]}}


@pytest.fixture
def one_of_each(tmp_path):
    """A store with a run of one probe and one attempt (``test.echo`` fails it) and a run of the
    same probe on ``test.blank`` with 12 attempts."""
    db = tmp_path / "c.db"
    store = Store(db)
    single = asyncio.run(
        scan(ScanConfig(model="test.echo", probes="harmful.Requests", sample=1, probe_options=ECHO_FAILS), store)
    )
    blank = asyncio.run(
        scan(ScanConfig(model="test.blank", probes="harmful.Requests", sample=12, probe_options=ECHO_FAILS), store)
    )
    echo = asyncio.run(
        scan(ScanConfig(model="test.echo", probes="harmful.Requests", sample=12, probe_options=ECHO_FAILS), store)
    )
    yield store, db, single, blank, echo
    store.close()


def test_markdown_export_counts_one_of_each_in_the_singular(one_of_each):
    store, _, single, _, _ = one_of_each
    md = "".join(export(store, single, "md"))
    assert "· 1 probe · 1 attempt" in md and "1 attempts" not in md
    assert ", 1 of 1 judged output failed" in md
    assert "### First 1 of 1 hit\n" in md


def test_html_report_counts_one_of_each_in_the_singular(one_of_each):
    store, _, single, _, _ = one_of_each
    page = html.unescape(render_report(store, single))
    assert "1 of 1 attempt;" in page
    assert "failed outputs in 1 attempt<" in page
    assert "1 of 1 judged output failed ·" in page
    assert "1 probe in 1 family" in page
    assert "1 attempts" not in page and "1 families" not in page


def test_compare_page_and_cli_count_one_change_in_the_singular(one_of_each, capsys, monkeypatch):
    store, db, _, blank, echo = one_of_each
    page = html.unescape(render_compare(compare_runs(store, blank, store, echo)))
    assert "1 generation per prompt" in page and "generation(s)" not in page
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    with pytest.raises(SystemExit) as info:
        main(["compare", blank, echo, "--store", str(db)])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "1 significant change: 1 worse, 0 better" in out
