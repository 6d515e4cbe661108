"""Human review of a run's verdicts, without the terminal: which outputs a reviewer sees and in
which order (:func:`review_sample`), the sample as a file to label elsewhere
(:func:`sample_file`), labels read back from such a file (:func:`read_labels`), and how often the
judge was wrong (:class:`ReviewTally`). ``redline review`` (:mod:`redline.cli.review`) is the
command around it.

**What is sampled.** Every output of the run that the judge scored ``fail`` (a hit: the model
failed) or ``pass``. Errored attempts have no output and are skipped; outputs left
``undetected`` are left out, since they count in no failure rate and a label of one changes
nothing; metric-only probes (bias answers) have no pass/fail verdict and are left out too.
Outputs that already have a label in the store are skipped.

**In which order.** Four strata, each in a random order fixed by the seed:

1. outputs on which the judges of an ensemble disagree (members' scores on both sides of 0.5,
   read from the ``ensemble:NAME`` entries of ``detector_results`` by
   :func:`redline.detectors.specs.disagreement`): the likeliest errors;
2. then uncertain verdicts: a judge's score within :data:`UNCERTAIN_MARGIN` of the threshold;
3. then judge hits and judge passes taken in turn (hit, pass, hit, …; when outputs of the run
   are already labelled, the stratum with fewer labels comes next), so both get reviews early:
   the correction of a probe's rate needs the precision of its hits and of its passes.

Within a stratum the probes take turns too (each probe's outputs shuffled, the probes visited in
a shuffled order), so every probe gets reviews early. The order is computed over every judged
output before reviewed ones are dropped, so a later session with the same seed continues the
same order.

**Files.** The sample file has the columns :data:`SAMPLE_COLUMNS` (``output`` is the 0-based
index of the output in its attempt, ``prompt`` the request the output answers, ``label`` empty).
A labels file needs ``probe``, ``seq`` and ``label``; ``output`` defaults to 0; ``note``,
``reviewer`` and ``run_id`` are optional (a ``run_id`` must name the run being labelled); other
columns are ignored. Rows with an empty label are skipped. Labels: ``fail``/``pass``, ``1``/``0``,
``true``/``false``, ``yes``/``no`` (1 = the model failed, the judge should score a hit).
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.attempt import Attempt
from redline.datasets import MAX_DATASET_BYTES, MAX_VALUE_BYTES
from redline.detectors.specs import disagreement
from redline.evaluation import FAIL, PASS
from redline.report.errors import ReportError
from redline.report.exports import csv_safe
from redline.report.rows import attempt_rows
from redline.report.tally import ReviewTally
from redline.store import LABEL_FAIL, LABEL_PASS, ReviewRecord, Store
from redline.textsafety import dumps
from redline.untrusted import UntrustedInputError, csv_field_limit, csv_lines, json_object_lines

__all__ = [
    "JSONL_SUFFIXES",
    "SAMPLE_COLUMNS",
    "STRATA",
    "ReviewError",
    "ReviewItem",
    "ReviewTally",
    "parse_label",
    "read_labels",
    "review_items",
    "review_sample",
    "sample_file",
]

DISAGREEMENT, UNCERTAIN, HIT_STRATUM, PASS_STRATUM = "disagreement", "uncertain", "hit", "pass"
STRATA = (DISAGREEMENT, UNCERTAIN, HIT_STRATUM, PASS_STRATUM)
"""The strata of the review sample, in the order they are shown."""

UNCERTAIN_MARGIN = 0.15
"""A verdict whose judge scored within this distance of the hit threshold (0.5) is uncertain."""

SAMPLE_COLUMNS = ("run_id", "probe", "seq", "output", "verdict", "prompt", "response", "label", "note")
"""The columns of the sample file written by :func:`sample_file`."""

JSONL_SUFFIXES = (".jsonl", ".ndjson")
"""File suffixes read and written as JSONL (any other file is CSV)."""

_LABELS = {
    "fail": LABEL_FAIL,
    "failed": LABEL_FAIL,
    "1": LABEL_FAIL,
    "true": LABEL_FAIL,
    "yes": LABEL_FAIL,
    "pass": LABEL_PASS,
    "passed": LABEL_PASS,
    "0": LABEL_PASS,
    "false": LABEL_PASS,
    "no": LABEL_PASS,
}


class ReviewError(ReportError, ValueError):
    """A review that cannot be made: an unknown probe, a labels file that cannot be read or names
    an output the run does not have (one line naming the file and line)."""


@dataclass(frozen=True)
class ReviewItem:
    """One judged output to review: where it is (``probe``, ``seq``, ``output`` index of
    ``outputs``), the request it answers (the last user message before it, after
    ``earlier_turns`` other turns), the ``response``, the judge's ``verdict`` (``"fail"`` or
    ``"pass"``), every detector's score of it (ensemble members under ``ensemble:NAME``) and the
    ``stratum`` it was drawn from."""

    run_id: str
    probe: str
    seq: int
    output: int
    outputs: int
    verdict: str
    request: str
    response: str | None
    scores: Mapping[str, float | None] = field(default_factory=dict)
    stratum: str = HIT_STRATUM
    earlier_turns: int = 0

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.probe, self.seq, self.output)

    def record(self, label: str, note: str | None = None, reviewer: str | None = None) -> ReviewRecord:
        """The store's record of ``label`` for this output, with the judge's verdict."""
        return ReviewRecord(self.run_id, self.probe, self.seq, self.output, label, self.verdict, note, reviewer)


def _request(attempt: Attempt, output: int) -> tuple[str, int]:
    """The last user message before output ``output`` (its text) and how many turns came before
    that message."""
    if output >= len(attempt.conversations):
        return "", 0
    turns = attempt.conversations[output].turns
    last_user = max((i for i, t in enumerate(turns) if t.role == "user"), default=None)
    if last_user is None:
        return "", 0
    return turns[last_user].content.text or "", last_user


def _uncertain(scores: Mapping[str, float | None]) -> bool:
    """A judge (not an ensemble's member) scored within :data:`UNCERTAIN_MARGIN` of 0.5."""
    return any(
        value is not None and abs(value - 0.5) < UNCERTAIN_MARGIN
        for name, value in scores.items()
        if not name.startswith("ensemble:")
    )


def _items(run_id: str, attempt: Attempt) -> Iterator[ReviewItem]:
    """The judged (pass/fail) outputs of one attempt, read as the exports read them
    (:func:`~redline.report.rows.attempt_rows`)."""
    rows = attempt_rows(attempt, run_id)
    for row in rows:
        i, verdict = row.generation, row.evaluation
        if i is None or verdict not in (FAIL, PASS):
            continue
        request, earlier = _request(attempt, i)
        if disagreement(attempt, i):
            stratum = DISAGREEMENT
        elif _uncertain(row.scores):
            stratum = UNCERTAIN
        else:
            stratum = HIT_STRATUM if verdict == FAIL else PASS_STRATUM
        yield ReviewItem(
            run_id=run_id,
            probe=row.probe,
            seq=row.seq,
            output=i,
            outputs=len(rows),
            verdict=str(verdict),
            request=request,
            response=row.output,
            scores=row.scores,
            stratum=stratum,
            earlier_turns=earlier,
        )


def _run_probes(store: Store, run_id: str) -> list[str]:
    """The probes with stored attempts in ``run_id`` (raises ``RunNotFound`` for an unknown run)."""
    store.get_run(run_id)
    return sorted(store.attempt_counts(run_id))


def review_items(store: Store, run_id: str, probes: Sequence[str] | None = None) -> list[ReviewItem]:
    """Every judged output of ``run_id`` (of ``probes`` when given), in (probe, seq, output)
    order. A probe without attempts in the run raises :class:`ReviewError`."""
    known = _run_probes(store, run_id)
    for name in probes or ():
        if name not in known:
            raise ReviewError(
                f"run {run_id} has no attempts of probe {name!r} (its probes: {', '.join(known) or 'none'})"
            )
    items: list[ReviewItem] = []
    for probe in probes or known:
        for attempt in store.iter_attempts(run_id, probe, errored=False):
            items.extend(_items(run_id, attempt))
    return items


def _take_turns(groups: Sequence[Sequence[ReviewItem]]) -> list[ReviewItem]:
    """One item of each group in turn until every group is used up."""
    merged: list[ReviewItem] = []
    longest = max((len(g) for g in groups), default=0)
    for i in range(longest):
        merged.extend(g[i] for g in groups if i < len(g))
    return merged


def _shuffled_stratum(items: Iterable[ReviewItem], rng: random.Random) -> list[ReviewItem]:
    """``items`` in a random order in which the probes take turns."""
    by_probe: dict[str, list[ReviewItem]] = {}
    for item in items:
        by_probe.setdefault(item.probe, []).append(item)
    groups = [by_probe[name] for name in sorted(by_probe)]
    for group in groups:
        rng.shuffle(group)
    rng.shuffle(groups)
    return _take_turns(groups)


def review_sample(
    store: Store,
    run_id: str,
    probes: Sequence[str] | None = None,
    limit: int | None = None,
    seed: int = 0,
    skip_reviewed: bool = True,
) -> list[ReviewItem]:
    """Up to ``limit`` judged outputs of ``run_id`` to review, in the order of the module doc:
    disagreements between judges first, then uncertain verdicts, then judge hits and passes in turn, each stratum in a
    random order fixed by ``seed``; outputs already labelled are skipped (``skip_reviewed``)."""
    items = review_items(store, run_id, probes)
    rng = random.Random(seed)
    strata = {name: _shuffled_stratum((i for i in items if i.stratum == name), rng) for name in STRATA}
    reviewed = dict.fromkeys(STRATA, 0)
    if skip_reviewed:
        done = {(r.probe, r.seq, r.output) for r in store.reviews(run_id)}
        for name, group in strata.items():
            reviewed[name] = sum(1 for i in group if i.key in done)
            strata[name] = [i for i in group if i.key not in done]
    ordered = strata[DISAGREEMENT] + strata[UNCERTAIN] + _balance(strata[HIT_STRATUM], strata[PASS_STRATUM], reviewed)
    return ordered if limit is None else ordered[:limit]


def _balance(hits: list[ReviewItem], passes: list[ReviewItem], reviewed: Mapping[str, int]) -> list[ReviewItem]:
    """Hits and passes merged so that the stratum with fewer reviews (those already in the store
    counted) comes next, a hit on a tie: both strata get reviews early, in every session."""
    merged: list[ReviewItem] = []
    counts = [reviewed.get(HIT_STRATUM, 0), reviewed.get(PASS_STRATUM, 0)]
    queues, heads = (hits, passes), [0, 0]
    while heads[0] < len(hits) or heads[1] < len(passes):
        open_ = [k for k in (0, 1) if heads[k] < len(queues[k])]
        k = min(open_, key=lambda j: (counts[j], j))
        merged.append(queues[k][heads[k]])
        heads[k] += 1
        counts[k] += 1
    return merged


def sample_file(items: Sequence[ReviewItem], fmt: str = "csv") -> str:
    """``items`` as a file to label elsewhere: ``"csv"`` (spreadsheet-safe: a cell that starts
    like a formula gets a leading ``'``, controls and bidi overrides are shown as escapes) or
    ``"jsonl"`` (lossless, :func:`redline.textsafety.dumps`), with the columns
    :data:`SAMPLE_COLUMNS` and an empty ``label`` and ``note``."""
    rows = [
        {
            "run_id": item.run_id,
            "probe": item.probe,
            "seq": item.seq,
            "output": item.output,
            "verdict": item.verdict,
            "prompt": item.request,
            "response": item.response,
            "label": "",
            "note": "",
        }
        for item in items
    ]
    if fmt == "jsonl":
        return "".join(dumps(row) + "\n" for row in rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SAMPLE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_safe("" if v is None else v) for k, v in row.items()})
    return buffer.getvalue()


def parse_label(value: Any) -> str | None:
    """A label as written in a file → :data:`LABEL_FAIL` / :data:`LABEL_PASS`; ``None`` for an
    empty one. Raises ``ValueError`` for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        return LABEL_FAIL if value else LABEL_PASS
    if isinstance(value, (int, float)) and value in (0, 1):
        return LABEL_FAIL if value == 1 else LABEL_PASS
    text = str(value).strip().lower()
    if not text:
        return None
    if text not in _LABELS:
        raise ValueError(f"label {value!r} is not fail/pass, 1/0, true/false or yes/no")
    return _LABELS[text]


def _text(row: Mapping[str, Any], column: str) -> str | None:
    value = row.get(column)
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _int(row: Mapping[str, Any], column: str, default: int | None = None) -> int:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        if default is None:
            raise ValueError(f"no {column}")
        return default
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{column} {value!r} is not a whole number")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{column} {value!r} is not a whole number") from None


def _rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The rows of a CSV or JSONL labels file with the line each starts on, the file bounded as a
    dataset is (:mod:`redline.untrusted`)."""
    try:
        if path.suffix.lower() in JSONL_SUFFIXES:
            yield from json_object_lines(path, max_line=MAX_VALUE_BYTES, max_file=MAX_DATASET_BYTES)
        else:
            yield from _csv_rows(path)
    except OSError as exc:
        raise ReviewError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UntrustedInputError as exc:  # too large, a line too long, not UTF-8, not a JSON object...
        raise ReviewError(f"{path}:{exc.line}: {exc.problem}" if exc.line else f"{path}: {exc.problem}") from None


def _csv_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    with csv_field_limit(MAX_VALUE_BYTES):
        reader = csv.DictReader(csv_lines(path, max_line=MAX_VALUE_BYTES, max_file=MAX_DATASET_BYTES))
        try:
            if not reader.fieldnames:
                raise ReviewError(f"{path}: empty file (need a header with probe, seq and label)")
            missing = [c for c in ("probe", "seq", "label") if c not in [f.strip() for f in reader.fieldnames]]
            if missing:
                raise ReviewError(
                    f"{path}:1: no column {', '.join(missing)} (the header has {', '.join(reader.fieldnames[:30])})"
                )
            start = reader.line_num + 1
            for row in reader:
                yield start, {(k or "").strip(): v for k, v in row.items()}
                start = reader.line_num + 1
        except csv.Error as exc:
            raise ReviewError(f"{path}:{reader.line_num}: malformed CSV ({exc})") from None


def read_labels(path: str | Path, store: Store, run_id: str, reviewer: str | None = None) -> list[ReviewRecord]:
    """The labels of ``path`` (CSV or JSONL, see the module doc) as records for :meth:`Store.save_reviews`,
    each with the judge's stored verdict of its output (``"undetected"`` outputs can be labelled
    here) and the row's reviewer (else ``reviewer``). All or nothing: the first row that cannot
    be used raises :class:`ReviewError` ``FILE:LINE: problem``. Rows with an empty label are
    skipped; a later row for the same output replaces an earlier one."""
    path = Path(path)
    store.get_run(run_id)
    attempts: dict[str, dict[int, Attempt]] = {}
    labelled: dict[tuple[str, int, int], ReviewRecord] = {}
    for number, row in _rows(path):
        where = f"{path}:{number}"
        try:
            row_run = _text(row, "run_id")
            if row_run is not None and row_run != run_id:
                raise ValueError(f"run_id {row_run!r} is not the run being labelled ({run_id})")
            if "label" not in row:
                raise ValueError("no label")
            label = parse_label(row["label"])
            probe = _text(row, "probe")
            if probe is None:
                raise ValueError("no probe")
            seq = _int(row, "seq")
            output = _int(row, "output", default=0)
        except ValueError as exc:
            raise ReviewError(f"{where}: {exc}") from None
        if label is None:
            continue
        if probe not in attempts:
            attempts[probe] = {a.seq: a for a in store.iter_attempts(run_id, probe)}
        attempt = attempts[probe].get(seq)
        if attempt is None:
            raise ReviewError(f"{where}: run {run_id} has no attempt {seq} of probe {probe!r}")
        outputs = len(attempt.outputs)
        if not outputs:
            raise ReviewError(f"{where}: attempt {seq} of probe {probe!r} has no output (it errored)")
        if not 0 <= output < outputs:
            raise ReviewError(
                f"{where}: attempt {seq} of probe {probe!r} has no output {output} (outputs are numbered 0 to {outputs - 1})"
            )
        verdict = attempt_rows(attempt, run_id)[output].evaluation
        labelled[(probe, seq, output)] = ReviewRecord(
            run_id, probe, seq, output, label, verdict, _text(row, "note"), _text(row, "reviewer") or reviewer
        )
    return list(labelled.values())
