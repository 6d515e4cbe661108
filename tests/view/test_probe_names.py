"""Probe names in ``redline view`` wrap at their dots, never inside a word."""

from __future__ import annotations

import re

from helpers.view_runs import client_for
from redline.report.summary import build_summary
from redline.store import Store
from redline.view.app import dotted


def test_a_probe_name_may_break_only_after_its_dots_and_stays_escaped():
    assert dotted("harmful.Requests") == "harmful.<wbr>Requests"
    assert dotted("a<b.c") == "a&lt;b.<wbr>c"
    assert dotted("plain") == "plain"


def test_the_run_and_attempts_pages_name_probes_breakable_at_dots_and_the_style_keeps_words_whole(hostile_store):
    path, run_id = hostile_store
    client = client_for(path)
    with Store(path) as store:
        probes = [p.probe for p in build_summary(store, run_id).probes]
    run_page = client.get(f"/runs/{run_id}").text
    attempts_page = client.get(f"/runs/{run_id}/attempts").text
    for probe in probes:
        assert f'<td class="name">{probe.replace(".", ".<wbr>")}' in run_page
    assert '<td class="name">' in attempts_page and ".<wbr>" in attempts_page
    css = client.get("/static/view.css").text
    rule = re.search(r"td\.name \{([^}]*)\}", css)
    assert rule is not None and "overflow-wrap: normal" in rule.group(1)
