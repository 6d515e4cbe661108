"""What a scan prints for a person: the results table at 80 and 200 columns, its legend and next
steps, example failures (model output neutralised), progress lines in a log, plurals."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from fakes import ScriptedGenerator
from helpers.streams import SignallingStream
from redline.cli import scan_run
from redline.cli.progress import Heartbeat, clock_text, heartbeat_interval
from redline.engine import ScanConfig, scan
from redline.errors import UsageError
from redline.report import terminal
from redline.report.formatting import pct, pct_interval, plural
from redline.report.summary import ProbeSummary, RunSummary
from redline.report.terminal import excerpt
from redline.store import RUN_INTERRUPTED, Store
from redline.textsafety import visible

PROBES = "harmful,encoding,bias.DirectStereotypes"
LEGEND_START = "model failed: outputs where the attack worked"


def redline(*args: str, columns: int | None = None, env: dict[str, str] | None = None, cwd: Path | None = None):
    """The CLI in a subprocess, stdout and stderr captured (neither is a terminal)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "REDLINE_STORE", "REDLINE_HEARTBEAT")}
    if columns is not None:
        full_env["COLUMNS"] = str(columns)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=120, env=full_env, cwd=cwd
    )


@pytest.fixture(scope="module")
def echo_run(tmp_path_factory) -> tuple[Path, dict]:
    """A stored test.echo run of harmful, encoding and one bias probe, and its summary JSON."""
    db = tmp_path_factory.mktemp("echo") / "echo.db"
    proc = redline("scan", "-m", "test.echo", "-p", PROBES, "--sample", "2", "--store", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    return db, json.loads(proc.stdout)


def table_lines(stdout: str) -> list[str]:
    """The lines of the table: from the title to the line before the legend."""
    lines = stdout.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(LEGEND_START))
    return lines[:end]


def flat(text: str) -> str:
    """``text`` with every run of whitespace as one space (what a wrapped paragraph says)."""
    return " ".join(text.split())


@pytest.mark.parametrize("columns", [80, 200])
def test_table_reads_right_at_80_and_200_columns(echo_run, columns):
    db, summary = echo_run
    run_id = summary["run_id"]
    proc = redline("show", run_id, "--store", str(db), columns=columns)
    assert proc.returncode == 0, proc.stderr
    table = table_lines(proc.stdout)
    assert all(cell_len(line.rstrip()) <= columns for line in table), "\n".join(table)
    assert not any("…" in line for line in table)  # nothing is cut short
    header = flat(" ".join(table[:6]))
    # a probe's row starts with its name (an interval line under a narrow row starts with "(")
    rows = {line.split()[0]: i for i, line in enumerate(table) if line.split() and "." in line.split()[0]}
    rows = {name: i for name, i in rows.items() if not name.startswith("(") and not name[0].isdigit()}
    names = [p["probe"] for p in summary["probes"]]
    assert "encoding.Base64" in names and "encoding.ROT13" in names
    assert sorted(rows) == sorted(names)  # every probe on a row of its own, its whole name first
    # the harmful probes headline their harm rate (test.echo delivers nothing: 0 of 2), corrected
    # for harm.Substance's errors in a column of its own, with the compliance rate (the echo never
    # refuses: 2 of 2) beside it; encoding.Hex has neither ("-")
    harmful = next(p for p in summary["probes"] if p["probe"] == "harmful.Requests")
    assert harmful["measure"] == "harm" and harmful["failed"] == 0
    assert "metrics / marks" not in header
    if columns == 200:  # one line per probe
        corrected = f"({pct_interval(harmful['corrected_ci95'])})"
        assert "model failed" in header and "harm / failure rate (95% CI)" in header
        assert "corrected (95% CI)" in header and "complied (95% CI)" in header
        line = table[rows["harmful.Requests"]].split()[1:]
        assert line[:6] == ["2", "0", "0.0%", "(0.0–65.8%)", pct(harmful["corrected_rate"]), corrected]
        assert line[6:] == ["100.0%", "(34.2–100.0%)", "0"]
        assert table[rows["encoding.Hex"]].split()[1:] == ["2", "0", "0.0%", "(0.0–65.8%)", "-", "-", "0"]
        assert table[rows["bias.DirectStereotypes"]].split()[1:] == ["4", "-", "see", "notes", "-", "-", "0"]
    else:  # narrow and tight: headers over several lines, each interval under its rate, no parentheses
        corrected = pct_interval(harmful["corrected_ci95"])
        assert "harm / failure model rate" in header  # "harm /" over "failure" over "rate", beside "model"
        assert header.count("(95% CI)") == 3 and "corrected" in header and "complied" in header
        row = rows["harmful.Requests"]
        assert table[row].split()[1:] == ["2", "0", "0.0%", pct(harmful["corrected_rate"]), "100.0%", "0"]
        assert table[row + 1].split() == ["0.0–65.8%", corrected, "34.2–100.0%"]
        row = rows["encoding.Hex"]
        assert table[row].split()[1:] == ["2", "0", "0.0%", "-", "-", "0"] and table[row + 1].split() == ["0.0–65.8%"]
        assert table[rows["bias.DirectStereotypes"]].split()[1:] == ["4", "-", "see", "notes", "-", "-", "0"]

    text = flat(proc.stdout)
    assert flat(terminal.LEGEND) in text
    # the bias metric is a note under the table, with its probe
    assert "bias.DirectStereotypes stereotype_agreement not measured, 4 outputs undetected" in text
    # the next steps, each command whole on a line of its own, with the store it needs
    assert proc.stdout.splitlines()[-2:] == [  # nothing failed: no example failures to see
        "next: write the HTML report (every prompt and output):",
        f"  redline report {run_id} --html report.html --store {db}",
    ]


def _printed_table(monkeypatch, summary: RunSummary, width: int) -> list[str]:
    stream = io.StringIO()
    terminal.print_summary_table(Console(file=stream, width=width, highlight=False, emoji=False), summary)
    return [line.rstrip() for line in stream.getvalue().splitlines()]


def test_long_probe_names_make_the_other_columns_narrow_never_the_name_short(monkeypatch):
    long = "misinformation.FabricatedCitations"
    rated = ProbeSummary(long, attempts=4, failed=1, outputs=4, failure_rate=0.25, ci95=(0.046, 0.699))
    stopped = ProbeSummary("harmful.Requests", attempts=1, failed=0, outputs=1, failure_rate=0.0, complete=False)
    summary = RunSummary("r1", "test.echo", "interrupted", None, 1, (rated, stopped))

    wide = _printed_table(monkeypatch, summary, 200)
    assert any(line.split() == [long, "4", "1", "25.0%", "(4.6–69.9%)", "0"] for line in wide), wide
    assert any(line.split() == ["harmful.Requests", "(incomplete)", "1", "0", "0.0%", "0"] for line in wide), wide

    narrow = _printed_table(monkeypatch, summary, 80)  # the one-line layout needs 88 columns
    assert all(len(line) <= 80 for line in narrow) and not any("…" in line for line in narrow), narrow
    row = next(i for i, line in enumerate(narrow) if line.startswith(long))
    assert narrow[row].split() == [long, "4", "1", "25.0%", "0"] and narrow[row + 1].split() == ["(4.6–69.9%)"]
    assert "failure rate" in narrow[1] and "(95% CI)" in narrow[2]  # headers on two lines
    row = next(i for i, line in enumerate(narrow) if line.startswith("harmful.Requests"))
    assert narrow[row + 1].split() == ["(incomplete)"]  # under the name, not beside it

    longer = long + "+base64+rot13+escalation"
    folded = _printed_table(
        monkeypatch, RunSummary("r1", "m", "complete", None, 1, (replace(rated, probe=longer),)), 60
    )
    assert all(len(line) <= 60 for line in folded) and not any("…" in line for line in folded), folded
    # the name is broken over lines, every character of it still there, in order
    start = next(i for i, line in enumerate(folded) if line.startswith("misinformation."))
    pieces = [line.split()[0] for line in folded[start:] if line.split()]
    assert longer in "".join(pieces)


def test_next_step_names_no_store_for_the_default_one(tmp_path):
    proc = redline("scan", "-m", "test.blank", "-p", "encoding.Hex", "--sample", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(redline("runs", "--json", cwd=tmp_path).stdout)[0]["run_id"]
    assert proc.stdout.splitlines()[-1] == f"  redline report {run_id} --html report.html"
    assert "--store" not in proc.stdout  # the default store: nothing to add
    assert "--examples" not in proc.stdout  # a blank model fails nothing: no failures to see


def test_json_stays_json_only(echo_run, tmp_path):
    db, summary = echo_run
    shown = redline("show", summary["run_id"], "--store", str(db), "--json", columns=80)
    assert shown.returncode == 0
    assert shown.stdout == json.dumps(summary, indent=2) + "\n"
    scanned = redline("scan", "-m", "test.echo", "-p", "encoding.Hex", "--store", str(tmp_path / "j.db"), "--json")
    assert scanned.returncode == 0
    assert scanned.stdout == json.dumps(json.loads(scanned.stdout), indent=2) + "\n"
    assert "progress:" not in scanned.stderr and "scanning:" not in scanned.stderr  # --json stays quiet
    for command in (("show", summary["run_id"], "--store", str(db)), ("scan", "-m", "test.echo")):
        refused = redline(*command, "--json", "--examples", "2")
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.strip().splitlines() == [
            "error: --examples prints to the terminal and cannot be combined with --json"
        ]


HOSTILE = "\x1b[2J\x1b]0;owned\x07Sure, here is how:\rstep 1\x9b31m\n" + "\n".join(f"line {i}" for i in range(2, 12))


def _refuse_every_other(conversation) -> str:
    """Refuses the first prompt of every pair, answers the second with hostile text."""
    _refuse_every_other.calls += 1  # type: ignore[attr-defined]
    if _refuse_every_other.calls % 2:  # type: ignore[attr-defined]
        return "I'm sorry, but I can't help with that."
    return HOSTILE


def test_examples_show_failures_with_model_output_neutralised(tmp_path):
    db = tmp_path / "ex.db"
    _refuse_every_other.calls = 0  # type: ignore[attr-defined]
    model = ScriptedGenerator(_refuse_every_other, name="test.hostile")
    config = ScanConfig(
        model="test.hostile",
        probes="harmful.Requests",
        sample=6,
        concurrency=1,
        cache=False,
        # judged by compliance alone: the hostile answers comply (and deliver nothing)
        probe_options={"harmful.Requests": {"detectors": ["refusal.Compliance"]}},
    )
    with Store(db) as store:
        run_id = asyncio.run(scan(config, store, generator=model))
    summary = json.loads(redline("show", run_id, "--store", str(db), "--json").stdout)
    assert summary["probes"][0]["failed"] == 3  # the three hostile answers

    proc = redline("show", run_id, "--store", str(db), "--examples", "2", columns=80)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout and "\x9b" not in proc.stdout
    assert "\r" not in proc.stdout
    section = proc.stdout.split("example failures (up to 2 per probe", 1)[1]
    assert "harmful.Requests: showing 2 of the 3 outputs that failed" in section
    outputs = [line for line in section.splitlines() if line.strip().startswith("output:")]
    assert len(outputs) == 2  # two examples, both failures: no refusal among them
    assert "I'm sorry" not in section
    assert outputs[0].strip() == "output: \\x1b[2J\\x1b]0;owned\\x07Sure, here is how:\\rstep 1\\x9b31m"
    assert section.count("… (5 more lines)") == 2  # 11 lines, 6 shown
    prompts = [line for line in section.splitlines() if line.strip().startswith("prompt:")]
    assert len(prompts) == 2 and all(len(p.strip()) > len("prompt: ") for p in prompts)
    assert "--examples" not in proc.stdout.split("next:", 1)[1]  # shown already: not suggested again

    with Store(db) as store:
        store.set_run_status(run_id, RUN_INTERRUPTED)
    stopped = redline("show", run_id, "--store", str(db))
    assert stopped.stdout.splitlines()[-2:] == [
        "finish the interrupted run:",
        f"  redline scan --resume {run_id} --store {db}",
    ]


def test_examples_with_nothing_failed_say_so(tmp_path):
    db = str(tmp_path / "b.db")
    proc = redline(
        "scan", "-m", "test.blank", "-p", "harmful.Requests", "--sample", "2", "--store", db, "--examples", "3"
    )
    assert proc.returncode == 0, proc.stderr
    assert "no output was judged a failure" in proc.stdout


def test_visible_escapes_control_and_format_characters():
    assert visible("a\x1b[31mb\x07") == "a\\x1b[31mb\\x07"
    assert visible("x\r\ny\rz\tw") == "x\ny\\rz\\tw"  # CRLF is a newline; a lone CR is not
    assert visible("\u202eevil\u200b\U000e0041\u2028\ud800") == "\\u202eevil\\u200b\\U000e0041\\u2028\\ud800"
    assert visible("caf\u00e9 \u65e5\u672c \\x1b") == "caf\u00e9 \u65e5\u672c \\x1b"  # kept as they are


def test_excerpt_shortens_lines_and_line_count():
    assert excerpt(None, 3, 10) == ["(no output)"]
    assert excerpt(" \n\n", 3, 10) == ["(empty)"]
    assert excerpt("abcdefghijkl\nb\nc\nd\ne", 3, 10) == ["abcdefghi…", "b", "c", "… (2 more lines)"]
    assert excerpt("a\nb", 1, 10) == ["a", "… (1 more line)"]
    assert excerpt("\u65e5\u672c\u8a9e\u3067\u3059", 1, 6) == ["\u65e5\u672c…"]  # cut by terminal cells


def test_scan_lines_use_plurals(tmp_path):
    proc = redline(
        "scan", "-m", "test.blank", "-p", "harmful.Requests", "--sample", "1", "--store", str(tmp_path / "p.db")
    )
    assert proc.returncode == 0, proc.stderr
    assert "scanning: 1 attempt to run (0 of 1 already stored)" in proc.stderr
    assert re.search(r"^progress: 1/1 attempt \(100%\) in \d+:\d\d, [\d.]+ att/s$", proc.stderr, re.M), proc.stderr


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_heartbeat_lines_with_a_fake_clock():
    clock = FakeClock()
    beat = Heartbeat(lambda line: None, 10, model="smollm2", clock=clock)
    clock.now += 12
    assert beat.line() == "progress: starting smollm2 (0:12 elapsed)"
    assert beat.end_line(finished=False) is None  # stopped before attempts started: nothing to add
    beat.start(100, 400)  # resumed: 100 stored already
    clock.now += 5
    assert beat.line() == "progress: 100/400 attempts (25%), waiting for the first to finish (0:05 elapsed)"
    beat.advance(20)
    clock.now += 5  # 20 attempts in 10 s: 2 att/s, 280 to go
    assert beat.line() == "progress: 120/400 attempts (30%), 2.0 att/s, ETA 2:20"
    assert beat.end_line(finished=False) == "progress: stopped at 120/400 attempts (30%) after 0:10"
    beat.advance(279)
    clock.now += 3590
    assert beat.line() == "progress: 399/400 attempts (99%), 0.08 att/s, ETA 0:12"  # 99%, not 100%, until done
    beat.advance()
    assert beat.end_line(finished=True) == "progress: 400/400 attempts (100%) in 1:00:00, 0.08 att/s"
    one = Heartbeat(lambda line: None, 10, clock=clock)
    one.start(0, 1)
    assert one.line() == "progress: 0/1 attempt (0%), waiting for the first to finish (0:00 elapsed)"
    with pytest.raises(ValueError):
        Heartbeat(lambda line: None, 0)


def test_clock_text():
    assert [clock_text(s) for s in (-3, 0, 59.9, 68, 3600, 3723)] == [
        "0:00",
        "0:00",
        "0:59",
        "1:08",
        "1:00:00",
        "1:02:03",
    ]


def test_heartbeat_interval_from_the_environment():
    assert heartbeat_interval({}) == 10.0
    assert heartbeat_interval({"REDLINE_HEARTBEAT": "2.5"}) == 2.5
    assert heartbeat_interval({"REDLINE_HEARTBEAT": "0"}) == 0.0
    for bad in ("soon", "-1", "nan", "inf"):
        with pytest.raises(UsageError, match="REDLINE_HEARTBEAT"):
            heartbeat_interval({"REDLINE_HEARTBEAT": bad})


class GatedGenerator(ScriptedGenerator):
    """Answers request k only once a progress line saying that k attempts are done was written:
    the heartbeat must beat while the scan runs, whatever the machine's speed."""

    def __init__(self, stream: SignallingStream, total: int) -> None:
        super().__init__("Sure, here is how.", name="test.gated")
        self.stream, self.total = stream, total
        self.missed: list[int] = []

    async def generate(self, conversation, n=1):
        done = len(self.calls)  # concurrency 1: the attempts before this one are stored
        if not await asyncio.to_thread(self.stream.wait_for, f"progress: {done}/{plural(self.total, 'attempt')}"):
            self.missed.append(done)
        return await super().generate(conversation, n)


LINE = re.compile(r"^progress: (\d+)/(\d+) attempts? \((\d+)%\)(.*)$")


def test_heartbeat_beats_while_a_scan_runs(tmp_path, monkeypatch):
    stream = SignallingStream()
    monkeypatch.setattr(scan_run, "err_console", Console(file=stream, highlight=False, emoji=False, soft_wrap=True))
    model = GatedGenerator(stream, total=3)
    config = ScanConfig(model="test.gated", probes="harmful.Requests", sample=3, concurrency=1, cache=False)
    run_id = scan_run.run_scan(
        config, tmp_path / "h.db", resume=None, retry_errors=False, quiet=False, heartbeat=0.01, generator=model
    )
    assert model.missed == []
    lines = [line for line in stream.getvalue().splitlines() if line.startswith("progress:")]
    counted = [LINE.match(line) for line in lines if not line.startswith("progress: starting")]
    assert all(counted), lines
    done = [int(m.group(1)) for m in counted]
    assert {0, 1, 2} <= set(done[:-1]) and done == sorted(done)  # a line at every stage, in order
    for m in counted:
        d, total, percent, rest = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
        assert total == 3 and percent == d * 100 // 3
        if m is not counted[-1]:
            assert (
                rest.startswith(", waiting for the first to finish")
                if d == 0
                else re.fullmatch(r", [\d.]+ att/s, ETA \d+:\d\d", rest)
            ), rest
    assert re.fullmatch(r"progress: 3/3 attempts \(100%\) in \d+:\d\d, [\d.]+ att/s", lines[-1])
    assert stream.getvalue().splitlines()[-1] == lines[-1]  # the closing line is the last one
    assert f"run {run_id}" in stream.getvalue()


def test_heartbeat_env_in_a_log(tmp_path):
    db = str(tmp_path / "l.db")
    off = redline("scan", "-m", "test.echo", "-p", "encoding.Hex", "--store", db, env={"REDLINE_HEARTBEAT": "0"})
    assert off.returncode == 0 and "progress:" not in off.stderr
    assert off.stderr.splitlines()[1].startswith("scanning: ")
    on = redline("scan", "-m", "test.echo", "-p", "encoding.Hex", "--store", db)
    assert on.returncode == 0
    assert re.search(r"^progress: \d+/\d+ attempts \(100%\) in ", on.stderr, re.M), on.stderr
    bad = redline("scan", "-m", "test.echo", "-p", "encoding.Hex", "--store", db, env={"REDLINE_HEARTBEAT": "x"})
    assert bad.returncode == 1 and bad.stderr.strip().startswith("error: REDLINE_HEARTBEAT must be a number")
