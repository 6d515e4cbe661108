"""Exports parse back and keep hostile model text inert: json, jsonl, csv, md, hitlog, lve,
and the ``redline report`` command that writes them."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from helpers.hostile_run import CONTROL_CHARS, CONTROL_TEXT, build_control_run, build_hostile_run
from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.report.errors import ReportError
from redline.report.exports import (
    csv_safe,
    export,
    export_csv,
    export_hitlog,
    export_jsonl,
    export_lve,
    export_markdown,
    md_code_block,
)
from redline.report.html import render_report
from redline.report.summary import run_summary
from redline.store import RunNotFound, Store


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = tmp_path_factory.mktemp("exports") / "r.db"
    store, run_id = build_hostile_run(db)
    yield store, run_id, db
    store.close()


def text(chunks) -> str:
    return "".join(chunks)


def redline(*args, timeout=60):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def one_error_line(proc) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def test_json_is_the_show_json_summary(run):
    store, run_id, db = run
    exported = json.loads(text(export(store, run_id, "json")))
    assert exported == json.loads(json.dumps(run_summary(store, run_id)))
    shown = redline("show", run_id, "--store", str(db), "--json")
    assert shown.returncode == 5, shown.stderr  # an attempt of the run errored
    cli = redline("report", run_id, "--store", str(db), "--format", "json")
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout == shown.stdout


def test_jsonl_rebuilds_every_attempt(run):
    store, run_id, _ = run
    lines = text(export_jsonl(store, run_id)).splitlines()
    stored = list(store.iter_attempts(run_id))
    assert len(lines) == len(stored) > 40
    for line, attempt in zip(lines, stored):
        rebuilt = Attempt.from_dict(json.loads(line))
        assert rebuilt == attempt
        assert rebuilt.all_outputs == attempt.all_outputs
    multi = next(Attempt.from_dict(json.loads(l)) for l in lines if '"demo.MultiTurn"' in l)
    assert [t.role for t in multi.conversations[1].turns] == ["system", "user", "assistant", "user", "assistant"]
    errored = [json.loads(l) for l in lines if json.loads(l)["notes"].get("error")]
    assert len(errored) == 1


def test_csv_is_one_row_per_output_with_detector_columns_and_no_formulas(run):
    store, run_id, _ = run
    raw = text(export_csv(store, run_id))
    rows = list(csv.DictReader(io.StringIO(raw, newline="")))
    header = raw.splitlines()[0].split(",")
    assert header[:6] == ["run_id", "probe", "seq", "generation", "prompt", "output"]
    assert header[-2:] == ["evaluation", "error"]
    assert {"refusal.Compliance", "injection.InjectedMarker", "encoding.DecodedPayload"} <= set(header)
    summary = run_summary(store, run_id)
    # one row per output: judged + undetected outputs, and one per errored attempt
    expected = sum(p["outputs"] + p.get("undetected", 0) + p["errored"] for p in summary["probes"])
    assert len(rows) == expected
    fails = [r for r in rows if r["evaluation"] == "fail"]
    assert len(fails) == sum(p["failed"] for p in summary["probes"])
    for r in fails:
        assert any(
            r[d] and float(r[d]) >= 0.5
            for d in ("refusal.Compliance", "injection.InjectedMarker", "encoding.DecodedPayload")
        )
    hostile = [r for r in rows if "<script>" in r["output"]]
    assert hostile, "the hostile output must survive the round trip intact"
    assert "\n" in hostile[0]["output"]  # multi-line cells are quoted, not split
    errored = [r for r in rows if r["error"]]
    assert len(errored) == 1 and errored[0]["generation"] == "" and "HTTP 500" in errored[0]["error"]
    for r in rows:
        for value in r.values():
            assert not value.startswith(("=", "+", "-", "@")), value


def test_csv_formula_guard():
    assert csv_safe("=HYPERLINK(1)") == "'=HYPERLINK(1)"
    assert csv_safe("+1") == "'+1" and csv_safe("-x") == "'-x" and csv_safe("@SUM") == "'@SUM"
    assert csv_safe("\tx") == "'\tx"
    assert csv_safe("fine = ok") == "fine = ok"
    assert csv_safe(0.5) == 0.5 and csv_safe(3) == 3


def test_hitlog_has_one_line_per_failed_output(run):
    store, run_id, _ = run
    lines = [json.loads(l) for l in text(export_hitlog(store, run_id)).splitlines()]
    summary = run_summary(store, run_id)
    assert len(lines) == sum(p["failed"] for p in summary["probes"]) > 0
    for hit in lines:
        assert set(hit) >= {"probe", "seq", "generation", "prompt", "output", "detector_results", "goal", "targets"}
        assert hit["evaluation"] == "fail"
        assert max(v for v in hit["detector_results"].values() if v is not None) >= 0.5
    multi = [h for h in lines if h["probe"] == "demo.MultiTurn"]
    assert [h["generation"] for h in multi] == [1]


def _render_markdown(source: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(source)


def test_markdown_summary_keeps_model_text_inert(run):
    store, run_id, _ = run
    md = text(export_markdown(store, run_id, top_hits=3))
    assert "| harmful.Requests |" in md and "87.5%" in md
    assert "stereotype\\_rate" in md and "**C**" in md
    assert "First 3 of" in md
    rendered = _render_markdown(md)
    assert "<table>" in rendered
    # hostile outputs rendered only as code: no live image, link, script, iframe or style
    for tag in ("<img", "<a ", "<script", "<iframe", "<style", "<link", "<svg", "<meta"):
        assert tag not in rendered, tag
    assert "&lt;script&gt;document.title=" in rendered


def test_code_block_fence_is_longer_than_any_backtick_run():
    hostile = "before\n````\n![x](http://127.0.0.1:9/i.png)\n``````\n<script>x</script>"
    block = md_code_block(hostile)
    assert block.startswith("```````text\n") and block.endswith("\n```````")
    rendered = _render_markdown("intro\n\n" + block + "\n\nafter")
    assert "<img" not in rendered and "<script" not in rendered
    assert rendered.count("<pre>") == 1 and "<p>after</p>" in rendered
    assert md_code_block("y" * 50, limit=10).count("y") == 10


def test_lve_export_from_lve_notes(tmp_path):
    store = Store(tmp_path / "l.db")
    run_id = store.create_run("test.echo", {"probe_names": ["lve.dummy/a_plus_b"], "scan": {}})
    a = Attempt(prompt="12 + 32 = ?", probe_classname="lve.dummy/a_plus_b", seq=0)
    a.outputs = ["44", "45"]
    a.notes["lve"] = {
        "test_path": "dummy/a_plus_b/test.json",
        "args": {"a": 12, "b": 32},
        "responses": ["44", "45"],
        "passed": [True, False],
        "checker": "LambdaChecker",
    }
    a.notes["evaluation"] = ["pass", "fail"]
    a.detector_results["lve.LambdaChecker"] = [0.0, 1.0]
    a.status = ATTEMPT_COMPLETE
    store.save_attempt(run_id, a)
    b = Attempt(prompt="1 + 1 = ?", probe_classname="lve.dummy/a_plus_b", seq=1)
    b.outputs = ["2"]
    b.notes["lve"] = {"test_path": "dummy/a_plus_b/test.json", "args": {"a": 1, "b": 1}}
    b.notes["evaluation"] = ["pass"]
    store.save_attempt(run_id, b)
    lines = [json.loads(l) for l in text(export_lve(store, run_id, author="tester")).splitlines()]
    assert [(l["response"], l["passed"]) for l in lines] == [("44", True), ("45", False), ("2", True)]
    for l in lines:
        assert set(l) == {"test_path", "args", "response", "passed", "author", "run_info"}
        assert l["test_path"] == "dummy/a_plus_b/test.json" and l["author"] == "tester"
        assert l["run_info"]["model"] == "test.echo" and l["run_info"]["run_id"] == run_id
    assert lines[0]["args"] == {"a": 12, "b": 32}


def test_lve_export_without_lve_attempts_is_one_line_error(run):
    store, run_id, db = run
    with pytest.raises(ReportError, match=f"run {run_id} has no LVE attempts"):
        list(export(store, run_id, "lve"))
    assert run_id in one_error_line(redline("report", run_id, "--store", str(db), "--format", "lve"))


def test_unknown_run_and_format(run):
    store, _, db = run
    with pytest.raises(RunNotFound):
        export(store, "nope", "csv")
    with pytest.raises(ReportError, match="unknown export format"):
        export(store, "nope", "xml")
    assert "nope" in one_error_line(redline("report", "nope", "--store", str(db), "--format", "csv"))
    assert "no store" in one_error_line(redline("report", "x", "--store", str(db) + ".missing", "--format", "csv"))


def test_cli_writes_files_and_refuses_unwritable_ones(run, tmp_path):
    _, run_id, db = run
    out = tmp_path / "hits.jsonl"
    proc = redline("report", run_id, "--store", str(db), "--hitlog", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert all(json.loads(l)["evaluation"] == "fail" for l in out.read_text().splitlines())
    md = redline("report", run_id, "--store", str(db))
    assert md.returncode == 0 and md.stdout.startswith("## redline report")
    line = one_error_line(
        redline("report", run_id, "--store", str(db), "--format", "csv", "--output", str(tmp_path / "no" / "x.csv"))
    )
    assert "cannot write" in line and "does not exist" in line
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        # root may write into a read-only folder; nobody may create files in /proc
        target = locked / "x.csv" if not os.access(locked, os.W_OK) else "/proc/redline-x.csv"
        line = one_error_line(redline("report", run_id, "--store", str(db), "--format", "csv", "-o", str(target)))
        assert line.startswith(f"error: cannot write {target}")
    finally:
        locked.chmod(0o700)
    line = one_error_line(redline("report", run_id, "--store", str(db), "--hitlog", "--format", "csv"))
    assert "--hitlog" in line
    line = one_error_line(redline("report", run_id, "--store", str(db), "--html", str(tmp_path)))
    assert "is a folder" in line


# -- control characters, bidi overrides and lone surrogates -------------------------------------
@pytest.fixture(scope="module")
def control_run(tmp_path_factory):
    db = tmp_path_factory.mktemp("control") / "c.db"
    store, run_id = build_control_run(db)
    yield store, run_id, db
    store.close()


def stored_outputs(store, run_id) -> list[str]:
    return [m.text for a in store.iter_attempts(run_id) for m in a.outputs]


@pytest.mark.parametrize("fmt", ["jsonl", "hitlog", "garak"])
def test_json_formats_keep_control_text_losslessly_as_escapes(control_run, fmt):
    store, run_id, _ = control_run
    body = text(export(store, run_id, fmt))
    body.encode("utf-8")  # no lone surrogate left: any UTF-8 file or stdout takes it
    assert not any(ch in body for ch in CONTROL_CHARS)
    texts = []
    for line in body.splitlines():
        entry = json.loads(line)
        if fmt == "hitlog":
            texts.append(entry["output"])
        elif entry.get("entry_type") == "attempt" and entry.get("status", 2) == 2:
            texts += [o["text"] for o in entry["outputs"]]
    assert texts and set(texts) == set(stored_outputs(store, run_id))  # exactly what the model said


def test_lve_export_keeps_a_lone_surrogate_losslessly(tmp_path):
    with Store(tmp_path / "l.db") as store:
        run_id = store.create_run("test.echo", {})
        attempt = Attempt(prompt="p", probe_classname="lve.x", seq=0)
        attempt.outputs = [CONTROL_TEXT]
        attempt.notes["lve"] = {"test_path": "t/test.json", "args": {}, "passed": [False]}
        attempt.status = ATTEMPT_COMPLETE
        store.save_attempt(run_id, attempt)
        line = text(export(store, run_id, "lve"))
    assert json.loads(line)["response"] == CONTROL_TEXT and not any(ch in line for ch in CONTROL_CHARS)


@pytest.mark.parametrize("fmt", ["csv", "md"])
def test_human_formats_show_controls_bidi_and_surrogates_as_escapes(control_run, fmt):
    store, run_id, _ = control_run
    body = text(export(store, run_id, fmt))
    body.encode("utf-8")
    assert not any(ch in body.replace("\r\n", "\n") for ch in CONTROL_CHARS)  # CSV rows end in CRLF
    assert "\\x1b[31mred" in body and "\\u202eevil" in body and "\\udcff" in body and "\\U000e0041" in body
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(body)))
        assert rows and all(r["output"].endswith("\\udcff \\x9b31m") for r in rows)


def test_csv_cells_are_made_inert_before_the_formula_guard():
    assert csv_safe("\u202e=cmd") == "\\u202e=cmd"  # the escape starts with a backslash: no formula
    assert csv_safe("=1+1\x1b") == "'=1+1\\x1b" and csv_safe("\t=x") == "'\t=x"
    assert csv_safe("a\tb\nc\udcff") == "a\tb\nc\\udcff" and csv_safe(3) == 3


def test_html_report_has_no_raw_control_bidi_or_surrogate(control_run):
    store, run_id, _ = control_run
    page = render_report(store, run_id)
    page.encode("utf-8")
    assert not any(ch in page for ch in CONTROL_CHARS)
    assert "\\u202eevil" in page and "\\udcff" in page
