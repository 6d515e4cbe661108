"""How well a detector agrees with human labels: labelled files, scoring, and the metrics of
``redline detectors validate``.

A labelled file (CSV, TSV or JSONL) has one example per row: the ``prompt`` the model was given
(optional), the ``response`` it gave, and a ``label`` that says whether the detector should score
a hit on it (the model failed). The columns can be renamed (``prompt_column``,
``response_column``, ``label_column``), and ``positive`` says which label value is a hit: a row
is positive when its label, as text, equals ``positive`` (default ``"1"``; a JSON ``true`` also
counts as ``"1"``). Every problem with the file is one :class:`LabelledDataError` line naming the
file, the line and the column.

:func:`validate_detector` runs a detector over the examples (each one an :class:`Attempt` with
the prompt as its user turn and the response as its single output; a score ≥ 0.5 is a hit, no
score is *undetected*) and tallies a :class:`ValidationResult`: the confusion matrix, and from
it accuracy, precision, recall, F1 and the predicted and labelled positive rates, each with a 95%
interval (Wilson for the proportions, a seeded bootstrap for F1). The rates and metrics count the
rows the detector could score; undetected rows are counted apart.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.attempt import Attempt, Message
from redline.datasets import MAX_DATASET_BYTES, MAX_ROWS, MAX_VALUE_BYTES, DatasetError
from redline.detectors.base import HIT_THRESHOLD, Detector, DetectorUnavailable, Validation
from redline.errors import UsageError
from redline.evaluation.statistics import bootstrap_ci, wilson_interval
from redline.untrusted import UntrustedInputError, csv_field_limit, csv_lines, json_object_lines

__all__ = [
    "HIT_THRESHOLD",
    "METRICS",
    "LabelledDataError",
    "LabelledExample",
    "ValidationResult",
    "dataset_id",
    "load_examples",
    "score_examples",
    "tally",
    "validate_detector",
]


#: The metrics of :meth:`ValidationResult.as_dict`, in the order they are printed.
METRICS = ("accuracy", "precision", "recall", "f1", "predicted_rate", "labelled_rate")

#: Default column names of a labelled file.
DEFAULT_PROMPT_COLUMN = "prompt"
DEFAULT_RESPONSE_COLUMN = "response"
DEFAULT_LABEL_COLUMN = "label"

#: Seed and size of the F1 bootstrap (fixed: the same file gives the same interval).
BOOTSTRAP_SEED = 0
BOOTSTRAP_RESAMPLES = 1000

_SUFFIXES = {".csv": ",", ".tsv": "\t", ".jsonl": None, ".ndjson": None}


class LabelledDataError(DatasetError):
    """A labelled file that cannot be used: missing, empty, malformed, or without a column."""


@dataclass(frozen=True)
class LabelledExample:
    """One labelled row: the prompt (``""`` when the file has none), the response, whether the
    detector should score a hit on it (``positive``), the label as written and the row's first
    line in the file."""

    prompt: str
    response: str
    positive: bool
    label: str = ""
    line: int = 0


# -- loading ------------------------------------------------------------------------------------


def _cell_text(value: Any) -> str | None:
    """A cell as text: numbers as written (``1.0`` → ``"1"``), booleans as ``true``/``false``;
    ``None`` for a missing value or a list/object (not text)."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is_positive(value: Any, positive: str) -> bool:
    if isinstance(value, bool):  # a JSON boolean: true matches "1" or "true", false "0" or "false"
        return positive.lower() in (("1", "true") if value else ("0", "false"))
    text = _cell_text(value)
    return text is not None and text.strip() == positive


def _read_csv(path: Path, delimiter: str) -> Iterable[tuple[int, dict[str, Any], list[str]]]:
    """``(first line, row, columns)`` for each row of a CSV/TSV file."""
    with csv_field_limit(MAX_VALUE_BYTES):
        # strict: a quote left open (or a stray one) is an error, not a field that eats the file
        lines = csv_lines(path, max_line=MAX_VALUE_BYTES, max_file=MAX_DATASET_BYTES)
        reader = csv.reader(lines, delimiter=delimiter, strict=True)
        previous = 0  # the last line of the last row read
        try:
            header = next(reader, None)
            if header is None:
                raise LabelledDataError(f"{path}: the file is empty")
            columns = [name.strip() for name in header]
            previous = reader.line_num
            for cells in reader:
                line = previous + 1
                previous = reader.line_num
                if not any(cell.strip() for cell in cells):
                    continue
                if len(cells) > len(columns):
                    raise LabelledDataError(
                        f"{path}: line {line}: {len(cells)} fields where the header has {len(columns)}"
                    )
                padded: list[str | None] = [*cells, *[None] * (len(columns) - len(cells))]  # short row: missing
                yield line, dict(zip(columns, padded)), columns
        except csv.Error as exc:
            raise LabelledDataError(f"{path}: line {previous + 1}: malformed CSV ({exc})") from None


def _read_jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any], list[str]]]:
    for line, value in json_object_lines(path, max_line=MAX_VALUE_BYTES, max_file=MAX_DATASET_BYTES):
        yield line, value, list(value)


def load_examples(
    path: str | Path,
    *,
    prompt_column: str | None = None,
    response_column: str | None = None,
    label_column: str | None = None,
    positive: str = "1",
) -> list[LabelledExample]:
    """The labelled examples of the CSV, TSV or JSONL file at ``path`` (see the module doc).

    The columns default to ``prompt``, ``response`` and ``label``. A file without the prompt
    column gives empty prompts, unless ``prompt_column`` was named. Raises
    :class:`LabelledDataError` (one line: file, line, column) for a missing or unreadable file,
    an unknown format, an empty file, a malformed row, a missing column or a row without a
    response or a label.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise LabelledDataError(f"{path}: no such file")
    if path.is_dir():
        raise LabelledDataError(f"{path}: is a folder, not a labelled file")
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise LabelledDataError(f"{path}: unknown format {suffix or '(no suffix)'!r} (use .csv, .tsv or .jsonl)")
    if not positive.strip():
        raise LabelledDataError(f"{path}: the positive label value is empty")
    positive = positive.strip()
    prompt_key = (prompt_column or DEFAULT_PROMPT_COLUMN).strip()
    response_key = (response_column or DEFAULT_RESPONSE_COLUMN).strip()
    label_key = (label_column or DEFAULT_LABEL_COLUMN).strip()
    # A missing prompt column is an error only when it was named; the hint only when it was not.
    named = {
        "prompt": prompt_column is not None,
        "response": response_column is not None,
        "label": label_column is not None,
    }
    delimiter = _SUFFIXES[suffix]
    rows = _read_jsonl(path) if delimiter is None else _read_csv(path, delimiter)

    examples: list[LabelledExample] = []
    try:
        for line, row, columns in rows:
            for field, key in (("prompt", prompt_key), ("response", response_key), ("label", label_key)):
                if key not in row and (field != "prompt" or named[field]):
                    where = f"line {line}: " if delimiter is None else ""
                    option = "" if named[field] else f" (name it with --{field}-column)"
                    raise LabelledDataError(
                        f"{path}: {where}no column {key!r} for the {field} (columns: {', '.join(columns) or 'none'})"
                        + option
                    )
            if len(examples) >= MAX_ROWS:
                raise LabelledDataError(f"{path}: line {line}: too many rows (more than {MAX_ROWS:,})")
            response = _cell_text(row[response_key])
            if response is None:
                raise LabelledDataError(f"{path}: line {line}: column {response_key!r}: no response text")
            raw_label = row[label_key]
            label = _cell_text(raw_label)
            if label is None or not label.strip():
                raise LabelledDataError(f"{path}: line {line}: column {label_key!r}: empty label")
            prompt = _cell_text(row.get(prompt_key)) if prompt_key in row else ""
            if prompt is None:
                if named["prompt"]:
                    raise LabelledDataError(f"{path}: line {line}: column {prompt_key!r}: no prompt text")
                prompt = ""
            examples.append(
                LabelledExample(
                    prompt=prompt,
                    response=response,
                    positive=_is_positive(raw_label, positive),
                    label=label.strip(),
                    line=line,
                )
            )
    except UntrustedInputError as exc:  # too large, a line too long, not UTF-8, not a JSON object...
        raise LabelledDataError(f"{path}: {exc}") from None
    except OSError as exc:
        raise LabelledDataError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if not examples:
        raise LabelledDataError(f"{path}: no labelled rows")
    return examples


def dataset_id(path: str | Path) -> str:
    """The name a saved validation gives a labelled file: its name and the first 12 hex digits
    of the sha256 of its content (``xstest.csv@1f2e3d4c5b6a``), so that an edited file is a new
    dataset."""
    path = Path(path)
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise LabelledDataError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    return f"{path.name}@{digest.hexdigest()[:12]}"


# -- scoring ------------------------------------------------------------------------------------


def example_attempt(example: LabelledExample) -> Attempt:
    """The attempt a detector scores for ``example``: the prompt as the user turn, the response
    as the only output."""
    attempt = Attempt(prompt=Message(text=example.prompt))
    attempt.outputs = [Message(text=example.response)]
    return attempt


async def score_examples(
    detector: Detector, examples: Sequence[LabelledExample], concurrency: int = 16
) -> list[float | None]:
    """The detector's score for each example, in order (``None``: it could not score it). The
    detector must already be started; at most ``concurrency`` examples are scored at once."""
    if concurrency < 1:
        raise UsageError(f"concurrency must be at least 1, not {concurrency}")
    gate = asyncio.Semaphore(concurrency)

    async def one(example: LabelledExample) -> float | None:
        async with gate:
            scores = await detector.adetect(example_attempt(example))
        if len(scores) != 1:
            raise DetectorUnavailable(f"detector {detector.name} returned {len(scores)} scores for 1 output")
        score = scores[0]
        if score is None or math.isnan(score):
            return None
        return float(score)

    return list(await asyncio.gather(*(one(example) for example in examples)))


def tally(examples: Sequence[LabelledExample], scores: Sequence[float | None]) -> ValidationResult:
    """The confusion matrix of ``scores`` against the labels of ``examples`` (same order)."""
    if len(examples) != len(scores):
        raise ValueError(f"{len(scores)} scores for {len(examples)} examples")
    tp = fp = fn = tn = undetected = 0
    for example, score in zip(examples, scores):
        if score is None:
            undetected += 1
        elif score >= HIT_THRESHOLD:
            tp, fp = (tp + 1, fp) if example.positive else (tp, fp + 1)
        else:
            fn, tn = (fn + 1, tn) if example.positive else (fn, tn + 1)
    return ValidationResult(tp=tp, fp=fp, fn=fn, tn=tn, undetected=undetected)


async def validate_detector(
    detector: Detector, examples: Sequence[LabelledExample], concurrency: int = 16
) -> ValidationResult:
    """Start ``detector`` once, score every example and tally the result."""
    await detector.start()
    return tally(examples, await score_examples(detector, examples, concurrency))


# -- the result ---------------------------------------------------------------------------------


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _f1(tp: int, fp: int, fn: int) -> float | None:
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else None


# Codes of the scored rows for the bootstrap: a resample is a list of these.
_TP, _FP, _FN, _TN = range(4)


def _f1_of_codes(codes: list[int]) -> float | None:
    return _f1(codes.count(_TP), codes.count(_FP), codes.count(_FN))


@dataclass(frozen=True)
class ValidationResult:
    """A detector's confusion matrix on labelled data: ``tp``/``fn`` rows labelled positive that
    it scored a hit / a miss, ``fp``/``tn`` rows labelled negative, ``undetected`` rows it could
    not score. Metrics are over the scored rows (``None`` where undefined)."""

    tp: int
    fp: int
    fn: int
    tn: int
    undetected: int = 0

    def __add__(self, other: ValidationResult) -> ValidationResult:
        """The pooled result of two disjoint sets of rows."""
        if not isinstance(other, ValidationResult):
            return NotImplemented
        return ValidationResult(
            tp=self.tp + other.tp,
            fp=self.fp + other.fp,
            fn=self.fn + other.fn,
            tn=self.tn + other.tn,
            undetected=self.undetected + other.undetected,
        )

    @property
    def n(self) -> int:
        """Every row, undetected included."""
        return self.scored + self.undetected

    @property
    def scored(self) -> int:
        """The rows the detector scored."""
        return self.tp + self.fp + self.fn + self.tn

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.tp + self.tn, self.scored)

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        """Also the sensitivity."""
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def specificity(self) -> float | None:
        return _ratio(self.tn, self.tn + self.fp)

    @property
    def f1(self) -> float | None:
        return _f1(self.tp, self.fp, self.fn)

    @property
    def predicted_rate(self) -> float | None:
        """How often the detector scored a hit."""
        return _ratio(self.tp + self.fp, self.scored)

    @property
    def labelled_rate(self) -> float | None:
        """How often the label is positive (among the scored rows)."""
        return _ratio(self.tp + self.fn, self.scored)

    def ci95(self) -> dict[str, tuple[float, float] | None]:
        """95% interval of each metric: Wilson for the proportions, a seeded percentile bootstrap
        over the scored rows for F1; ``None`` where the metric is undefined."""

        def wilson(successes: int, n: int) -> tuple[float, float] | None:
            return wilson_interval(successes, n) if n else None

        codes = [_TP] * self.tp + [_FP] * self.fp + [_FN] * self.fn + [_TN] * self.tn
        f1 = (
            bootstrap_ci(codes, _f1_of_codes, resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
            if self.f1 is not None
            else None
        )
        return {
            "accuracy": wilson(self.tp + self.tn, self.scored),
            "precision": wilson(self.tp, self.tp + self.fp),
            "recall": wilson(self.tp, self.tp + self.fn),
            "f1": f1,
            "predicted_rate": wilson(self.tp + self.fp, self.scored),
            "labelled_rate": wilson(self.tp + self.fn, self.scored),
        }

    def confusion(self) -> dict[str, int]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn, "undetected": self.undetected}

    def as_dict(self) -> dict[str, Any]:
        """The JSON of ``redline detectors validate --json``: exactly ``n``, the metrics,
        ``confusion`` and ``ci95`` (``{metric: [lo, hi]}`` or ``null``)."""
        intervals = self.ci95()
        return {
            "n": self.n,
            **{metric: getattr(self, metric) for metric in METRICS},
            "confusion": self.confusion(),
            "ci95": {metric: None if ci is None else [ci[0], ci[1]] for metric, ci in intervals.items()},
        }

    def validation(self, dataset: str) -> Validation:
        """As a detector's :class:`~redline.detectors.base.Validation` on ``dataset``."""
        return Validation(dataset=dataset, tp=self.tp, fp=self.fp, fn=self.fn, tn=self.tn, undetected=self.undetected)
