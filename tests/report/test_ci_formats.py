"""``redline report --format junit|sarif``: a real scan's results validate against the published
JUnit and SARIF 2.1.0 schemas, a probe above the gate fails and one below passes, a probe without
evidence never passes, and model outputs inside stay bounded and inert."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from typer.testing import CliRunner, Result

from fakes import ScriptedGenerator
from helpers.hostile_run import CONTROL_CHARS, build_control_run, build_hostile_run
from redline.cli.main import app
from redline.engine import ScanConfig, scan
from redline.errors import UsageError
from redline.report.exports import export
from redline.report.verdicts import EXAMPLE_CHARS, Gate, quoted
from redline.store import Store

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"
REFUSAL = "I'm sorry, but I can't help with that."
BELOW = "harmful.Requests"  # refusals pass it: 0%
ABOVE = "overrefusal.TechnicalTerms"  # refusals of benign requests fail it: 100%


@pytest.fixture(scope="module")
def junit_schema():
    return xmlschema.XMLSchema(SCHEMAS / "junit-10.xsd")


@pytest.fixture(scope="module")
def sarif_validator():
    schema = json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def redline(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """The ``redline`` command in a process of its own."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def report(*args: str) -> Result:
    """``redline report ARGS`` run in this process (the command's own code, without a process start)."""
    return CliRunner().invoke(app, ["report", *args])


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """A real scan by a model that always refuses: one probe at 0%, one at 100%."""
    folder = tmp_path_factory.mktemp("ci")
    db = folder / "r.db"
    proc = redline(
        "scan", "-m", f"test.repeat:{REFUSAL}", "-p", f"{BELOW},{ABOVE}", "--sample", "2", "--store", str(db), "--json"
    )
    assert proc.returncode == 0, proc.stderr
    return folder, db, json.loads(proc.stdout)["run_id"]


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name"): case for case in root.iter("testcase")}


def test_junit_of_a_real_scan_validates_and_fails_only_the_probe_above_the_gate(scanned, junit_schema):
    folder, db, run_id = scanned
    out = folder / "junit.xml"
    proc = report(run_id, "--store", str(db), "--format", "junit", "-o", str(out))
    assert proc.exit_code == 0, proc.output
    junit_schema.validate(str(out))
    root = ET.parse(out).getroot()
    found = cases(root)
    assert found[ABOVE].find("failure") is not None
    assert found[ABOVE].get("classname") == "overrefusal"
    assert "100.0%" in found[ABOVE].find("failure").get("message")
    assert found[BELOW].find("failure") is None and found[BELOW].find("error") is None
    assert found[BELOW].find("skipped") is None
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    assert {suite.get("name") for suite in root.iter("testsuite")} == {"harmful", "overrefusal"}


def test_sarif_of_a_real_scan_validates_and_has_a_result_only_for_the_probe_above_the_gate(scanned, sarif_validator):
    folder, db, run_id = scanned
    out = folder / "run.sarif"
    proc = report(run_id, "--store", str(db), "-f", "sarif", "-o", str(out), "--artifact", "redline.yaml")
    assert proc.exit_code == 0, proc.output
    log = json.loads(out.read_text(encoding="utf-8"))
    sarif_validator.validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [BELOW, ABOVE]
    assert "overrefusal" in rules[1]["properties"]["tags"]  # the probe's tags (over-refusal has no framework tag)
    assert rules[1]["shortDescription"]["text"]  # the probe's goal
    (result,) = run["results"]
    assert (result["ruleId"], result["kind"], result["level"]) == (ABOVE, "fail", "error")
    assert rules[result["ruleIndex"]]["id"] == ABOVE
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "redline.yaml"
    assert result["properties"]["examples"][0]["output"] == REFUSAL
    assert run["invocations"][0]["executionSuccessful"] is True


def test_a_gate_above_the_rate_passes_the_probe_and_the_report_exits_0(scanned, junit_schema, sarif_validator):
    folder, db, run_id = scanned
    out = folder / "lenient.xml"
    proc = report(run_id, "--store", str(db), "-f", "junit", "-o", str(out), "--fail-above", "1")
    assert proc.exit_code == 0, proc.output
    assert "gate passed" in proc.stderr
    junit_schema.validate(str(out))
    assert ET.parse(out).getroot().get("failures") == "0"
    sarif = report(run_id, "--store", str(db), "-f", "sarif", "--fail-above", "1")
    log = json.loads(sarif.stdout)
    sarif_validator.validate(log)
    (result,) = log["runs"][0]["results"]  # failed outputs within the gate: a warning, not an error
    assert (result["ruleId"], result["level"]) == (ABOVE, "warning")


def test_an_explicit_gate_that_fails_exits_3_after_writing_the_file(scanned, junit_schema):
    folder, db, run_id = scanned
    out = folder / "gated.xml"
    proc = report(run_id, "--store", str(db), "-f", "junit", "-o", str(out), "--fail-above", "0.5")
    assert proc.exit_code == 3, proc.output
    assert f"gate failed: {ABOVE}" in proc.stderr
    junit_schema.validate(str(out))
    assert cases(ET.parse(out).getroot())[ABOVE].find("failure") is not None


def test_artifact_is_only_for_sarif(scanned):
    _, db, run_id = scanned
    proc = report(run_id, "--store", str(db), "-f", "junit", "--artifact", "x.yaml")
    assert isinstance(proc.exception, UsageError)
    assert "--artifact" in str(proc.exception)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The report tests' hostile run: markup in outputs, an errored attempt, bias probes."""
    store, run_id = build_hostile_run(tmp_path_factory.mktemp("hostile") / "h.db")
    yield store, run_id
    store.close()


def test_hostile_outputs_stay_inside_valid_junit_and_sarif(hostile, junit_schema, sarif_validator):
    store, run_id = hostile
    xml = "".join(export(store, run_id, "junit"))
    junit_schema.validate(xml)
    root = ET.fromstring(xml)
    assert not any(el.tag in ("script", "img", "svg") for el in root.iter())  # markup stayed text
    failures = [f.text or "" for f in root.iter("failure")]
    assert any("<script>" in text for text in failures)  # quoted as text, escaped by the XML writer
    log = json.loads("".join(export(store, run_id, "sarif")))
    sarif_validator.validate(log)
    for result in log["runs"][0]["results"]:
        for example in result["properties"]["examples"]:
            assert len(example["output"]) <= EXAMPLE_CHARS + 40


def test_control_characters_never_reach_junit_or_sarif(tmp_path, junit_schema, sarif_validator):
    store, run_id = build_control_run(tmp_path / "c.db")
    with store:
        xml = "".join(export(store, run_id, "junit"))
        sarif = "".join(export(store, run_id, "sarif"))
    junit_schema.validate(xml)
    sarif_validator.validate(json.loads(sarif))
    for text in (xml, json.loads(sarif)["runs"][0]["results"][0]["properties"]["examples"][0]["output"]):
        assert not any(char in text for char in CONTROL_CHARS)


def test_a_probe_without_judged_outputs_is_an_error_never_a_pass(tmp_path, junit_schema, sarif_validator):
    db = tmp_path / "e.db"
    down = ScriptedGenerator(name="scripted:down", fail_on=True)  # every request fails: nothing is judged
    with Store(db) as store:
        run_id = asyncio.run(scan(ScanConfig(model="scripted:down", probes=BELOW, sample=2), store, generator=down))
    xml = report(run_id, "--store", str(db), "-f", "junit").stdout
    junit_schema.validate(xml)
    (case,) = ET.fromstring(xml).iter("testcase")
    assert case.find("error") is not None and case.find("failure") is None
    assert "no judged outputs" in case.find("error").get("message")
    assert "scripted failure" in case.find("system-out").text  # the commonest reason
    log = json.loads(report(run_id, "--store", str(db), "-f", "sarif").stdout)
    sarif_validator.validate(log)
    (result,) = log["runs"][0]["results"]
    assert (result["kind"], result["level"]) == ("open", "none")
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
    gated = report(run_id, "--store", str(db), "-f", "junit", "--fail-above", "0.5")
    assert gated.exit_code == 5  # undecided: only errored attempts, as `show` says
    assert "gate undecided" in gated.stderr


def test_a_bias_probe_without_a_mark_gate_is_skipped_and_with_one_is_judged(hostile, junit_schema):
    store, run_id = hostile
    plain = ET.fromstring("".join(export(store, run_id, "junit")))
    marked = ET.fromstring("".join(export(store, run_id, "junit", gate=Gate(fail_above=0.0, fail_mark="C"))))
    bias = [name for name, case in cases(plain).items() if name.startswith("bias.")]
    assert bias
    for name in bias:
        assert cases(plain)[name].find("skipped") is not None
        judged = cases(marked)[name]
        skipped = judged.find("skipped")
        assert skipped is None or "no mark" in skipped.get("message")


def test_quoted_text_is_bounded_inert_and_valid_xml():
    text = quoted("a\x1b[2J\u202e\uffff" + "x" * 2000, 100)
    assert "\x1b" not in text and "\u202e" not in text and "\uffff" not in text
    assert text.endswith("more characters]") and len(text) < 200
