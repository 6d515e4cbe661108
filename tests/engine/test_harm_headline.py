"""A scan of harmful-request probes headlines the harm rate (``harm.Substance``, or ``--harm-judge``)
with the compliance rate beside it; every report says which is which, the gate compares the harm
rate, and a run begun when compliance alone judged these probes resumes as it began."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console

from fakes import ScriptedGenerator
from redline.engine import ConfigError, ScanConfig, build_probes, build_scan_config, load_config, scan
from redline.engine.pipeline import ScanError
from redline.evaluation import HarmEvaluator
from redline.generators import GeneratorUnavailable
from redline.probes.harmful.requests import REQUESTS
from redline.report.exports import export_junit, export_markdown
from redline.report.html import render_report
from redline.report.sarif import export_sarif
from redline.report.summary import build_summary, gate_violations, run_summary
from redline.report.terminal import print_run_summary
from redline.report.verdicts import Gate
from redline.store import Store

#: Complies in form, delivers nothing.
VACUOUS = "Sure, here is how to do it. Step 1: [insert step here]. Step 2: [add details here]."


@pytest.fixture
def vacuous_run(tmp_path) -> tuple[Store, str]:
    store = Store(tmp_path / "r.db")
    run_id = asyncio.run(
        scan(ScanConfig(model="x", probes="harmful.Requests", sample=6), store, generator=ScriptedGenerator(VACUOUS))
    )
    yield store, run_id
    store.close()


def test_the_json_names_the_measure_and_carries_the_compliance_rate(vacuous_run):
    store, run_id = vacuous_run
    (probe,) = run_summary(store, run_id)["probes"]
    assert probe["measure"] == "harm"
    assert probe["failure_rate"] == 0.0 and probe["failed"] == 0 and probe["outputs"] == 6
    assert probe["metrics"]["compliance_rate"]["value"] == 1.0 and probe["metrics"]["compliance_rate"]["n"] == 6
    # the correction is for the headline's judge, not "verdicts from 2 detectors"
    assert probe["judge"] == "harm.Substance"


def test_an_old_summary_without_a_measure_reads_as_a_failure_rate(vacuous_run):
    store, run_id = vacuous_run
    data = run_summary(store, run_id)
    del data["probes"][0]["measure"]
    from redline.report.summary import RunSummary

    assert RunSummary.from_dict(data).probes[0].measure == "failure"


def test_the_terminal_html_and_markdown_say_harm_rate(vacuous_run):
    store, run_id = vacuous_run
    out = io.StringIO()
    print_run_summary(Console(file=out, width=200, color_system=None), build_summary(store, run_id))
    text = out.getvalue()
    assert "harm rate (95% CI)" in text and "failure rate (95% CI)" not in text
    assert "complied (95% CI)" in text and "100.0%" in text
    html = render_report(store, run_id)
    assert "Harm or failure rate" in html and "harm rate" in html and "complied" in html
    markdown = "".join(export_markdown(store, run_id))
    assert "| Harm or failure rate |" in markdown and "complied 100.0%" in markdown


def test_the_gate_compares_the_harm_rate_not_the_compliance_rate(tmp_path, vacuous_run):
    store, run_id = vacuous_run
    summary = build_summary(store, run_id)
    assert gate_violations(summary, 0.0, None) == []  # complied every time, delivered nothing
    sarif = json.loads("".join(export_sarif(store, run_id, Gate(0.0))))
    rule = sarif["runs"][0]["tool"]["driver"]["rules"][0]
    assert "harm rate" in rule["fullDescription"]["text"]
    junit = "".join(export_junit(store, run_id, Gate(0.0)))
    assert "0 of 6 judged outputs delivered harm (harm rate 0.0%" in junit and "complied 100.0%" in junit

    # a stand-in harm judge that fires on refusals: the gate follows it, not the compliance judge
    other = Store(tmp_path / "harm.db")
    run = asyncio.run(
        scan(
            ScanConfig(model="x", probes="harmful.Requests", sample=3, harm_judge="refusal.Refusal"),
            other,
            generator=ScriptedGenerator("I'm sorry, but I can't help with that."),
        )
    )
    summary = build_summary(other, run)
    assert summary.probes[0].compliance is not None and summary.probes[0].compliance.value == 0.0
    (problem,) = gate_violations(summary, 0.5, None)
    assert problem.startswith("harmful.Requests: harm rate ") and "100.0% > 50.0%" in problem
    other.close()


def test_harm_judge_replaces_the_harm_judge_in_harm_probes_only():
    config = ScanConfig(probes="harmful.Requests,injection.Direct", harm_judge="refusal.Refusal")
    harmful, injection = build_probes(config)
    assert harmful.detectors == ["refusal.Refusal", "refusal.Compliance"]
    assert harmful.judged_by == ["refusal.Refusal"] and harmful.measured == "harm"
    assert injection.detectors == list(type(injection).recommended_detectors)


def test_judge_replaces_the_compliance_judge_and_keeps_its_role():
    (probe,) = build_probes(ScanConfig(probes="harmful.Requests", judge="refusal.Refusal"))
    assert probe.detectors == ["harm.Substance", "refusal.Refusal"]
    assert isinstance(probe.evaluator, HarmEvaluator) and probe.judged_by == ["harm.Substance"]


def test_harm_judge_without_a_harm_probe_stops_the_scan():
    with pytest.raises(ScanError, match="--harm-judge refusal.Refusal: it replaces the harm.Substance detector"):
        build_probes(ScanConfig(probes="injection.Direct", harm_judge="refusal.Refusal"))
    with pytest.raises(ScanError, match="--harm-judge applies to --probes"):
        build_probes(ScanConfig(probes=None, lve_paths=["x"], harm_judge="refusal.Refusal"))


def test_a_config_file_takes_harm_judge(tmp_path):
    path = tmp_path / "scan.yaml"
    path.write_text("probes: harmful.Requests\nharm_judge: refusal.Refusal\n")
    assert build_scan_config(load_config(path), {}, {}).harm_judge == "refusal.Refusal"
    path.write_text("harm_judge: no.SuchDetector\n")
    with pytest.raises(ConfigError, match="harm_judge"):
        load_config(path)


def _forget_the_harm_judge(path: Path) -> None:
    """Make a stored run look as runs did before harm probes had a harm judge: their attempts
    record no detectors (compliance was the recommended one), nor does the configuration."""
    with sqlite3.connect(path) as db:
        db.execute("UPDATE attempts SET data = json_remove(data, '$.probe_params.detectors')")
        db.execute("UPDATE runs SET config = json_set(config, '$.scan.probe_options', json('{}'))")
    db.close()


async def test_a_run_begun_before_the_harm_judge_resumes_judged_by_compliance_alone(tmp_path):
    store = Store(tmp_path / "r.db")
    runs: list[str] = []
    stop = REQUESTS[3][1]
    config = ScanConfig(
        model="x", probes="harmful.Requests", probe_options={"harmful.Requests": {"detectors": ["refusal.Compliance"]}}
    )
    broken = ScriptedGenerator(VACUOUS, fail_on=stop, error=GeneratorUnavailable("cannot reach http://127.0.0.1:9/v1"))
    with pytest.raises(GeneratorUnavailable):
        await scan(config, store, generator=broken, on_run=runs.append)
    _forget_the_harm_judge(tmp_path / "r.db")

    await scan(None, store, resume=runs[0], generator=ScriptedGenerator(VACUOUS))
    attempts = list(store.iter_attempts(runs[0]))
    assert len(attempts) == len(REQUESTS)
    assert all(set(a.detector_results) == {"refusal.Compliance"} for a in attempts), [
        (a.seq, a.probe_params, set(a.detector_results)) for a in attempts
    ]
    (probe,) = build_summary(store, runs[0]).probes
    assert probe.measure == "failure" and probe.failure_rate == 1.0  # compliance, as the run began
    store.close()


async def test_a_new_run_resumes_with_both_judges(tmp_path):
    store = Store(tmp_path / "r.db")
    runs: list[str] = []
    broken = ScriptedGenerator(
        VACUOUS, fail_on=REQUESTS[3][1], error=GeneratorUnavailable("cannot reach http://127.0.0.1:9/v1")
    )
    config = ScanConfig(model="x", probes="harmful.Requests", judge="refusal.Refusal")
    with pytest.raises(GeneratorUnavailable):
        await scan(config, store, generator=broken, on_run=runs.append)
    await scan(None, store, resume=runs[0], generator=ScriptedGenerator(VACUOUS))
    attempts = list(store.iter_attempts(runs[0]))
    assert all(set(a.detector_results) == {"harm.Substance", "refusal.Refusal"} for a in attempts)
    (probe,) = build_summary(store, runs[0]).probes
    assert probe.measure == "harm" and probe.failure_rate == 0.0
    store.close()


def test_the_view_says_harm_rate_and_shows_the_compliance_rate(tmp_path):
    from helpers.view_runs import client_for

    path = tmp_path / "v.db"
    with Store(path) as store:
        config = ScanConfig(model="x", probes="harmful.Requests,injection.Direct", sample=3)
        run_id = asyncio.run(scan(config, store, generator=ScriptedGenerator(VACUOUS)))
    response = client_for(path).get(f"/runs/{run_id}")
    assert response.status_code == 200
    text = " ".join(response.text.split())
    assert "Harm or failure rate" in text  # a run of both kinds names both
    assert "harm rate · complied 100.0%" in text


def test_bad_harm_judges_stop_the_command_with_one_line(tmp_path):
    import subprocess
    import sys

    def error_line(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "redline", "scan", "-m", "test.echo", "--store", str(tmp_path / "r.db"), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        (line,) = [line for line in proc.stderr.splitlines() if line.strip()]
        return line

    assert error_line("-p", "harmful", "--harm-judge", "hf:").startswith("error: --harm-judge: ")
    line = error_line("-p", "encoding.Hex", "--harm-judge", "refusal.Refusal")
    assert "--harm-judge refusal.Refusal: it replaces the harm.Substance detector, which none of the selected" in line


async def test_a_run_begun_with_judge_before_the_harm_judge_resumes_with_that_judge_alone(tmp_path):
    store = Store(tmp_path / "r.db")
    runs: list[str] = []
    broken = ScriptedGenerator(
        VACUOUS, fail_on=REQUESTS[3][1], error=GeneratorUnavailable("cannot reach http://127.0.0.1:9/v1")
    )
    # what such a run stored: its attempts record the judge alone, as their detectors
    config = ScanConfig(
        model="x",
        probes="harmful.Requests",
        judge="refusal.Refusal",
        probe_options={"harmful.Requests": {"detectors": ["refusal.Refusal"]}},
    )
    with pytest.raises(GeneratorUnavailable):
        await scan(config, store, generator=broken, on_run=runs.append)
    with sqlite3.connect(tmp_path / "r.db") as db:
        db.execute("UPDATE runs SET config = json_set(config, '$.scan.probe_options', json('{}'))")
    db.close()

    await scan(None, store, resume=runs[0], generator=ScriptedGenerator(VACUOUS))
    attempts = list(store.iter_attempts(runs[0]))
    assert len(attempts) == len(REQUESTS)
    assert all(set(a.detector_results) == {"refusal.Refusal"} for a in attempts)
    assert build_summary(store, runs[0]).probes[0].measure == "failure"
    store.close()
