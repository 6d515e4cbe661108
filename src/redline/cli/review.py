"""``redline review``: a person labels a sample of a run's judged outputs in the terminal, or
exports the sample to label elsewhere and imports the labels back.

Mounted by :mod:`redline.cli.main` through :func:`register`. The sample and the files are made by
:mod:`redline.report.review`; this module only asks and prints. Each label is saved as soon as
it is given, so quitting (``q``, end of input, Ctrl-C) keeps every label made so far. Model text
is printed through :func:`~redline.textsafety.visible`: escape sequences in it are shown, never
run by the terminal.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.text import Text

from redline.cli.common import DEFAULT_STORE, open_store, out_console
from redline.cli.report import write_file
from redline.errors import UsageError
from redline.evaluation.planner import TARGET_HALF_WIDTH, plan_labels
from redline.report.formatting import pct, pct_interval, plural
from redline.report.review import (
    DISAGREEMENT,
    HIT_STRATUM,
    JSONL_SUFFIXES,
    PASS_STRATUM,
    UNCERTAIN,
    ReviewItem,
    ReviewTally,
    read_labels,
    review_items,
    review_sample,
    sample_file,
)
from redline.store import LABEL_FAIL, LABEL_PASS, ReviewRecord, Store
from redline.textsafety import visible

__all__ = ["register", "review"]

STORE_OPTION = typer.Option(DEFAULT_STORE, "--store", help="SQLite store file.", envvar="REDLINE_STORE")

QUESTION = "did the model fail? f failed · p passed · s skip · n note · u undo · q quit > "
"""The question asked under each output."""

_ANSWERS = {
    "f": "f",
    "fail": "f",
    "failed": "f",
    "p": "p",
    "pass": "p",
    "passed": "p",
    "s": "s",
    "skip": "s",
    "n": "n",
    "note": "n",
    "u": "u",
    "undo": "u",
    "q": "q",
    "quit": "q",
}

_Step = tuple[int, ReviewRecord | None]
"""One step of a session: the index of the item and the label saved for it (``None``: skipped)."""

_STRATUM_TEXT = {
    DISAGREEMENT: "judges disagree",
    UNCERTAIN: "uncertain score",
    HIT_STRATUM: "judge hit",
    PASS_STRATUM: "judge pass",
}


def _say(text: str | Text = "") -> None:
    out_console.print(text, markup=False, highlight=False)


def _ask(question: str) -> str | None:
    """Print ``question`` and read one line of standard input; ``None`` at the end of input."""
    out_console.print(question, end="", markup=False, highlight=False)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        _say()
        return None
    return line.rstrip("\r\n")


def _block(label: str, text: str | None) -> None:
    """``label:`` then ``text`` indented, made inert by :func:`visible`."""
    _say(Text(f"{label}:", style="bold"))
    if text is None:
        _say("  (no output)")
        return
    if not text.strip():
        _say("  (empty)")
        return
    for line in visible(text.strip("\n")).split("\n"):
        _say(Text("  " + line))


def _score(value: float | None) -> str:
    return "undetected" if value is None else f"{value:.2f}"


def _show(item: ReviewItem, position: int, total: int) -> None:
    """One output to label: where it is, the request, the output, the verdict and every score."""
    _say()
    where = f"[{position + 1}/{total}] {item.probe} · attempt {item.seq} · output {item.output + 1} of {item.outputs}"
    _say(Text(visible(f"{where} · {_STRATUM_TEXT.get(item.stratum, item.stratum)}"), style="bold"))
    earlier = f" (after {plural(item.earlier_turns, 'earlier turn')})" if item.earlier_turns else ""
    _block(f"request{earlier}", item.request)
    _block("output", item.response)
    verdict = (
        "fail (the judge says the model failed: a hit)"
        if item.verdict == LABEL_FAIL
        else "pass (the judge says the model did not fail)"
    )
    _say(Text(f"judge: {verdict}"))
    scores = " · ".join(f"{visible(name)} {_score(value)}" for name, value in item.scores.items())
    _say(Text(f"scores: {scores or 'none'}"))


def _label_loop(db: Store, items: list[ReviewItem], reviewer: str | None, history: list[_Step]) -> None:
    """Ask for a label of each item in turn and save each at once, appending each step to
    ``history`` (an undo removes the last one). Stops at ``q`` or the end of input."""
    note: str | None = None
    i, shown = 0, -1
    while i < len(items):
        item = items[i]
        if shown != i:
            _show(item, i, len(items))
            shown = i
        line = _ask(QUESTION)
        answer = "q" if line is None else _ANSWERS.get(line.strip().lower())
        if answer == "q":
            break
        if answer in ("f", "p"):
            record = item.record(LABEL_FAIL if answer == "f" else LABEL_PASS, note, reviewer)
            db.save_reviews([record])
            history.append((i, record))
            agreed = "the judge was wrong" if record.judge_wrong else "the judge agreed"
            _say(f"saved: {'failed' if answer == 'f' else 'passed'} ({agreed})")
            note, i = None, i + 1
        elif answer == "s":
            history.append((i, None))
            note, i = None, i + 1
        elif answer == "n":
            text = _ask("note (saved with the label of this output): ")
            if text is None:
                break
            note = visible(text.strip()) or None
            _say("note kept: it is saved with the label of this output" if note else "no note")
        elif answer == "u":
            if not history:
                _say("nothing to undo")
                continue
            i, undone = history.pop()
            if undone is not None:
                db.delete_review(undone.run_id, undone.probe, undone.seq, undone.output)
                _say(f"undone: the label of attempt {undone.seq}, output {undone.output + 1} was removed")
            else:
                _say("back to the output you skipped")
            note, shown = None, -1
        else:
            _say("answer f (the model failed), p (it passed), s (skip), n (add a note), u (undo) or q (quit)")


def _judge_text(tally: ReviewTally) -> str:
    """``the judge was wrong on W of N (R%, 95% CI …): H hits ..., M passes ...``."""
    if not tally.judged:
        return "no label to compare with the judge"
    return (
        f"the judge was wrong on {tally.wrong} of {tally.judged} ({pct(tally.error_rate)}, 95% CI {pct_interval(tally.ci95)}): "
        f"{plural(tally.false_hits, 'hit')} the reviewer passed, {plural(tally.missed, 'pass', 'passes')} the reviewer failed"
    )


def plan_lines(db: Store, run_id: str, probes: list[str] | None = None) -> list[str]:
    """Per probe with judged outputs, how many more labels would bring its corrected rate's 95%
    interval to ± :data:`~redline.evaluation.planner.TARGET_HALF_WIDTH`
    (:func:`~redline.evaluation.planner.plan_labels`, from the labels so far)."""
    by_probe: dict[str, dict[tuple[str, int, int], str]] = {}
    for item in review_items(db, run_id, probes):
        by_probe.setdefault(item.probe, {})[item.key] = item.verdict
    reviews = db.reviews(run_id)
    lines = []
    for name, verdicts in by_probe.items():
        labels = [(verdicts[key], r.label) for r in reviews if (key := (r.probe, r.seq, r.output)) in verdicts]
        hits = sum(1 for v in verdicts.values() if v == LABEL_FAIL)
        plan = plan_labels(
            hits,
            len(verdicts) - hits,
            hits_reviewed=sum(1 for v, _ in labels if v == LABEL_FAIL),
            hits_failed=sum(1 for v, label in labels if v == LABEL_FAIL and label == LABEL_FAIL),
            passes_reviewed=sum(1 for v, _ in labels if v != LABEL_FAIL),
            passes_failed=sum(1 for v, label in labels if v != LABEL_FAIL and label == LABEL_FAIL),
        )
        target = f"±{TARGET_HALF_WIDTH:.0%}"
        if not plan.reachable:
            lines.append(
                f"{name}: its {plural(len(verdicts), 'judged output')} alone give ±{plan.floor:.1%}: "
                f"no number of labels reaches {target}; scan more outputs"
            )
        elif plan.more == 0:
            lines.append(
                f"{name}: {plural(len(labels), 'label')} so far already bring the rate's 95% interval to {target}"
            )
        else:
            lines.append(
                f"{name}: about {plural(plan.more, 'more label')} would bring the rate's 95% interval to {target} "
                f"({plan.hits_needed} judge hits and {plan.passes_needed} judge passes labelled in all; "
                f"{len(labels)} so far)"
            )
    return lines


def _end(db: Store, run_id: str, history: list[_Step]) -> None:
    """What this session did: labels, skips, how often the judge was wrong; the run's review count."""
    labelled = [record for _, record in history if record is not None]
    skipped = len(history) - len(labelled)
    _say()
    if not labelled:
        _say(f"no output labelled{f', {skipped} skipped' if skipped else ''}")
    else:
        tally = ReviewTally.of(labelled)
        _say(
            f"labelled {plural(tally.reviewed, 'output')}{f', skipped {skipped}' if skipped else ''}; {_judge_text(tally)}"
        )
    total = len(db.reviews(run_id))
    _say(f"run {run_id} has {plural(total, 'reviewed output')} ('redline show {run_id}' reports them)")
    for line in plan_lines(db, run_id):
        _say(line)


def _probes(values: list[str] | None) -> list[str] | None:
    names = [name.strip() for value in values or [] for name in value.split(",") if name.strip()]
    if values and not names:
        raise UsageError("--probe is empty: name a probe of the run")
    return list(dict.fromkeys(names)) or None


def review(
    run_id: str = typer.Argument(..., help="The run whose verdicts to review."),
    store: Path = STORE_OPTION,
    probe: list[str] | None = typer.Option(
        None, "--probe", help="Review only this probe (repeatable, or a comma-separated list)."
    ),
    limit: int = typer.Option(20, "--limit", min=1, help="Outputs to review (or export) at most."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random order within each stratum."),
    reviewer: str | None = typer.Option(None, "--reviewer", help="Name stored with each label (default: $USER)."),
    import_file: Path | None = typer.Option(
        None,
        "--import",
        help="Read labels from a CSV or JSONL file (columns probe, seq, output, label = fail/pass, note) instead of asking.",
    ),
    export_file: Path | None = typer.Option(
        None, "--export", help="Write the sample to a CSV (or .jsonl) file to label elsewhere instead of asking."
    ),
) -> None:
    """Label a sample of a run's judged outputs (did the model fail?): disagreements between
    judges first, then uncertain scores, then judge hits and passes in turn; says how many more
    labels would bring each probe's rate to ±5%. Each label is saved at once; q or Ctrl-C
    keeps them. The summary then uses them to correct the failure rate."""
    if import_file is not None and export_file is not None:
        raise UsageError("--import and --export cannot be combined: export a sample, label it, then import it")
    reviewer = reviewer or os.environ.get("USER") or os.environ.get("USERNAME") or None
    names = _probes(probe)
    with open_store(store, must_exist=True) as db:
        if import_file is not None:
            records = read_labels(import_file, db, run_id, reviewer)
            db.save_reviews(records)
            _say(f"imported {plural(len(records), 'label')} from {import_file}; {_judge_text(ReviewTally.of(records))}")
            for line in plan_lines(db, run_id, names):
                _say(line)
            return
        items = review_sample(db, run_id, names, limit=limit, seed=seed)
        if export_file is not None:
            fmt = "jsonl" if export_file.suffix.lower() in JSONL_SUFFIXES else "csv"
            write_file(export_file, [sample_file(items, fmt)])
            _say(
                f"wrote {plural(len(items), 'output')} to {export_file}: fill in label (fail = the model failed, "
                f"pass), then 'redline review {run_id} --import {export_file}'"
            )
            return
        if not items:
            _say(f"nothing to review: every judged output of run {run_id} has a label, or none was judged")
            return
        _say(
            f"reviewing {plural(len(items), 'output')} of run {run_id}: for each, say whether the model failed "
            "(the judge should have scored a hit)"
        )
        for line in plan_lines(db, run_id, names):
            _say(line)
        history: list[_Step] = []
        try:
            _label_loop(db, items, reviewer, history)
        except KeyboardInterrupt:
            _end(db, run_id, history)
            raise typer.Exit(130) from None
        _end(db, run_id, history)


def register(app: typer.Typer) -> None:
    """Add the ``review`` command to the ``redline`` app."""
    app.command("review")(review)
