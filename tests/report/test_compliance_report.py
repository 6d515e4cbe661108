"""Findings grouped by compliance framework: the summary JSON's ``compliance``, the Markdown and
HTML sections, ``redline report --framework``."""

from __future__ import annotations

import asyncio
import json

import pytest

from fakes import ScriptedGenerator
from helpers.cli import CliRun, cli_runner
from redline.engine import ScanConfig, scan
from redline.report.errors import ReportError
from redline.report.exports import export, export_markdown
from redline.report.html import compliance_view, render_report
from redline.report.summary import RunSummary, build_summary, probe_tags
from redline.store import Store
from redline.taxonomy import FRAMEWORKS

# a jailbreak is a prompt injection (LLM01); a harmful request asked plainly is in no OWASP item
PROBES = "jailbreak.Persona,leakage.PIIElicitation,misinformation.FalsePremise"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    db = tmp_path_factory.mktemp("compliance") / "r.db"
    store = Store(db)
    generator = ScriptedGenerator("Sure, here it is: step one, step two.", name="test.complies")
    run_id = asyncio.run(scan(ScanConfig(model="test.complies", probes=PROBES, sample=3), store, generator=generator))
    yield store, run_id, db
    store.close()


def test_summary_json_maps_every_framework(stored) -> None:
    store, run_id, _ = stored
    summary = build_summary(store, run_id)
    data = summary.as_dict()
    assert set(data["compliance"]) == set(FRAMEWORKS)
    owasp = {g["tag"]: g for g in data["compliance"]["owasp"]}
    assert owasp["owasp:llm01"]["name"] == "LLM01:2025 Prompt Injection"
    assert "jailbreak.Persona" in owasp["owasp:llm01"]["probes"]
    assert owasp["owasp:llm02"]["probes"] == ["leakage.PIIElicitation"]
    jailbreak = next(p for p in summary.probes if p.probe == "jailbreak.Persona")
    group = next(g for g in summary.by_framework("nist") if g.tag == "nist:dangerous-content")
    assert [p.probe for p in group.probes] == ["jailbreak.Persona"]
    assert (group.pooled.failed, group.pooled.outputs) == (jailbreak.failed, jailbreak.outputs)
    nist = {g["tag"] for g in data["compliance"]["nist"]}
    assert {"nist:dangerous-content", "nist:data-privacy", "nist:confabulation"} <= nist
    # catalogue order, and the JSON reads back to the same grouping
    assert [g["tag"] for g in data["compliance"]["owasp"]] == sorted(owasp)
    again = RunSummary.from_dict(json.loads(json.dumps(data)))
    assert [g.as_dict() for g in again.by_framework("atlas")] == data["compliance"]["atlas"]


def test_markdown_groups_by_the_chosen_framework(stored) -> None:
    store, run_id, _ = stored
    text = "".join(export_markdown(store, run_id, framework="nist"))
    assert "### By NIST AI 600-1" in text
    row = next(line for line in text.splitlines() if "(nist:data-privacy)" in line)
    assert row.startswith("| Data Privacy") and "leakage.PIIElicitation" in row
    atlas = "".join(export(store, run_id, "md", framework="atlas"))
    assert "### By MITRE ATLAS" in atlas and "Not covered" not in atlas
    owasp = "".join(export(store, run_id, "md"))
    assert "### By OWASP Top 10 for LLM Applications 2025" in owasp
    uncovered = next(line for line in owasp.splitlines() if line.startswith("Not covered"))
    assert "LLM04:2025 Data and Model Poisoning" in uncovered and "LLM01:2025" not in uncovered
    with pytest.raises(ReportError):
        export(store, run_id, "md", framework="iso")


def test_html_has_the_framework_section(stored) -> None:
    store, run_id, _ = stored
    page = render_report(store, run_id, framework="atlas")
    assert 'id="compliance"' in page and "MITRE ATLAS" in page
    assert "AML.T0057 LLM Data Leakage" in page and "AML.T0054 LLM Jailbreak" in page
    view = compliance_view(build_summary(store, run_id), "owasp")
    assert view["unmapped"] == [] and view["groups"][0].tag == "owasp:llm01"
    assert "LLM10:2025 Unbounded Consumption" in view["uncovered"]
    assert len(view["uncovered"]) + len(view["groups"]) == 10
    with pytest.raises(ReportError):
        render_report(store, run_id, framework="iso")


def test_a_run_stored_before_a_mapping_gets_the_current_one() -> None:
    tags = probe_tags("jailbreak.Persona", ["owasp:llm01", "old-tag"])
    assert tags[:2] == ("owasp:llm01", "old-tag") and "nist:dangerous-content" in tags
    # a framework tag found wrong and no longer declared is dropped; free-form ones stay
    tags = probe_tags("harmful.Requests", ["owasp:llm01", "owasp:llm09", "old-tag"])
    assert "owasp:llm01" not in tags and "owasp:llm09" not in tags and "old-tag" in tags
    assert "nist:dangerous-content" in probe_tags("harmful.Requests+escalation")  # a wrapped probe: its inner's
    assert probe_tags("lve.something", ["x"]) == ("x",)


def test_unknown_stored_tags_are_not_grouped() -> None:
    summary = RunSummary.from_dict(
        {
            "run_id": "r",
            "probes": [{"probe": "third.Party", "attempts": 1, "failed": 1, "outputs": 1, "failure_rate": 1.0}],
            "compliance": {"owasp": [{"tag": "owasp:llm99<script>", "probes": ["third.Party"]}]},
        }
    )
    assert summary.by_framework("owasp") == []


def test_cli_report_framework(stored, monkeypatch, capsys) -> None:
    _, run_id, db = stored
    run: CliRun = cli_runner(monkeypatch, capsys)
    code, out, err = run("report", run_id, "--store", str(db), "--framework", "atlas")
    assert code == 0, err
    assert "### By MITRE ATLAS" in out and "AML.T0054" in out
    code, _, err = run("report", run_id, "--store", str(db), "--framework", "iso")
    assert code == 1 and len(err) == 1 and "--framework" in err[0]
