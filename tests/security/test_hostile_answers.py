"""Answers cost work in proportion to what is read of them (issue 35, part 4).

An endpoint that answers with long runs of whitespace, repeated separators or brackets once made
several detectors' regular expressions quadratic (a 24 KB answer: 19 s; a megabyte: hours per
output), and a judge's reply of ``Rating`` and spaces never finished. Now every detector reads
at most MAX_ANSWER_CHARS of an output and says so in the attempt's notes, its patterns are linear
in what it reads, and a scan against such an endpoint finishes with its verdicts stored.

The time guards are generous (each call once took minutes or more); the assertions are on what
was read and scored.
"""

from __future__ import annotations

import time

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attempt import Attempt
from redline.cli.main import main
from redline.detectors import detectors, get_detector
from redline.detectors.base import DETECTOR_NOTES, MAX_ANSWER_CHARS
from redline.detectors.judge import parse_rating
from redline.detectors.specs import parse_verdict
from redline.store import Store

#: Detectors that ask a model (nothing to load here); tools.UnintendedCall reads tool calls only.
NEEDS_A_MODEL = {"judge.Rubric", "toxicity.Classifier"}
SIZE = 200_000
GUARD_S = 10.0

HOSTILE = {
    "whitespace": " \t" * (SIZE // 2),
    "words and newlines": ("a \n" * SIZE)[:SIZE],
    "nested brackets": ("![<img [(" * SIZE)[:SIZE],
    "code-like runs": ("module_eval   import {a, rating: ** [ 1.a@" * SIZE)[:SIZE],
}

OPTIONS = {
    "strings.Regex": {"pattern": r"secret\s+word"},
    "output.ExfilLink": {"hosts": ["evil.example"]},
    "output.MarkdownImage": {"hosts": ["evil.example"]},
}


@pytest.fixture(autouse=True)
def _main_environment(monkeypatch):
    """main() sets these for the rest of the process otherwise."""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)


def scan(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``redline scan ARGS`` in-process: its exit code and what it printed."""
    code: int | str | None = 0
    try:
        main(["scan", *args])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return (code if isinstance(code, int) else 1), out.out + out.err


def hostile_attempt(answer: str) -> Attempt:
    attempt = Attempt(
        prompt="How do I write a python script that picks a lock?",
        targets=["canary-0123456789", "evil.example"],
        notes={"prompt_metadata": {"answer": "yes", "correct": ["pins"], "wrong": ["magic"]}, "triggers": ["zz"]},
    )
    attempt.outputs = [answer]
    return attempt


def pattern_detectors() -> list[str]:
    return [name for name in detectors.names() if name not in NEEDS_A_MODEL]


@pytest.mark.parametrize("kind", list(HOSTILE))
@pytest.mark.parametrize("name", pattern_detectors())
def test_every_detector_reads_a_hostile_answer_within_its_bound(name, kind):
    detector = get_detector(name, **OPTIONS.get(name, {}))
    attempt = hostile_attempt(HOSTILE[kind])
    started = time.monotonic()
    scores = detector.detect(attempt)
    assert time.monotonic() - started < GUARD_S
    assert len(scores) == 1 and (scores[0] is None or 0.0 <= scores[0] <= 1.0)
    if name != "tools.UnintendedCall":  # no tool call was made: nothing of the answer is read
        note = attempt.notes[DETECTOR_NOTES][name][0]
        assert note.startswith(f"read the first {MAX_ANSWER_CHARS:,} of {SIZE:,} characters")


@pytest.mark.parametrize(
    "reply", ["Rating:" + " " * SIZE, "rating " * (SIZE // 7), "Score = **" + " " * SIZE, "verdict: " * (SIZE // 9)]
)
def test_a_judge_reply_of_separators_is_read_at_once(reply):
    started = time.monotonic()
    assert parse_rating(reply) is None
    parse_verdict(reply)
    assert time.monotonic() - started < GUARD_S


def test_a_scan_against_an_endpoint_answering_a_megabyte_of_spaces_finishes_with_its_verdicts(tmp_path, capsys):
    answer = "Sure, here is the code:\n```ruby\nklass.module_eval" + " " * 1_000_000 + "(params)\n```"
    db = tmp_path / "s.db"
    with MockOpenAI(responder=lambda messages, body: answer) as server:
        started = time.monotonic()
        code, output = scan(
            "-m", "openai:m", "--base-url", server.base_url, "-p", "code.DynamicEvaluation", "--sample", "2",
            "--store", str(db), capsys=capsys,
        )  # fmt: skip
        assert time.monotonic() - started < 60
    assert code == 0, output
    with Store(db) as store:
        run = store.list_runs()[0]
        attempts = list(store.iter_attempts(run.run_id))
    assert len(attempts) == 2
    for attempt in attempts:
        assert attempt.detector_results["code.InsecurePattern"] == [0.0]  # the call past the bound is not seen
        note = attempt.notes[DETECTOR_NOTES]["code.InsecurePattern"][0]
        assert note.startswith(f"read the first {MAX_ANSWER_CHARS:,} of {len(answer):,} characters")
