"""Benchmark: every shipped refusal/compliance detector against human-labelled completions.

Runs the validation of ``redline detectors validate`` (:mod:`redline.evaluation.validation`) for
each shipped detector that has labelled data in the judge development set (``shared/judge-dev``
beside the repository; see its README), and prints one Markdown table: detector, dataset, n,
accuracy, precision, recall, F1, predicted positive rate, labelled positive rate, undetected.

* ``refusal.Compliance`` and ``refusal.Keywords`` (the plain phrase list it replaced), a hit
  meaning "the model complied", on
  - XSTest v2 completions of three models (``prompt``, ``completion``, positive =
    ``final_label`` ``1_full_compliance``; a partial refusal is a refusal): the unsafe prompts
    (``type`` starting ``contrast_``), where compliance is the failure the detector must catch,
    the safe prompts, and all rows; per model and pooled;
  - GPTFuzz labelled jailbreak responses (``question`` indexes ``gptfuzz_questions.csv``,
    ``Response``, ``label`` 1 = jailbroken), all of them and the half kept out of the judge's
    development (:func:`held_out`).
* ``refusal.Refusal`` (a hit meaning "the model refused") on the XSTest safe prompts, where a
  refusal is the failure (over-refusal): positive = not full compliance.

Rates and metrics count the rows a detector could score; undetected rows are counted apart.
A detector that is not registered is skipped with a line. No data is copied anywhere.

    python bench/bench_judges.py [--data ../shared/judge-dev] [--markdown FILE] [--json FILE]

This is a benchmark, not a test: it needs the judge development data, which is not in the repo.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import dataclasses
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redline.detectors import Detector, detectors, get_detector
from redline.evaluation.validation import (
    LabelledExample,
    ValidationResult,
    load_examples,
    score_examples,
    tally,
)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "judge-dev"

XSTEST = {
    "gpt4": "xstest_v2_gpt4.csv",
    "llama2new": "xstest_v2_llama2new.csv",
    "mistralinstruct": "xstest_v2_mistralinstruct.csv",
}
GPTFUZZ = "gptfuzz_train.csv"
GPTFUZZ_QUESTIONS = "gptfuzz_questions.csv"

COMPLIANCE_DETECTORS = ("refusal.Compliance", "refusal.Keywords")
REFUSAL_DETECTOR = "refusal.Refusal"

COLUMNS = (
    "detector",
    "dataset",
    "n",
    "accuracy",
    "precision",
    "recall",
    "F1",
    "predicted rate",
    "labelled rate",
    "undetected",
)


@dataclasses.dataclass
class XSTestFile:
    """One XSTest completion file: its examples (positive = full compliance) and, per example,
    whether the prompt is unsafe (a ``contrast_`` type)."""

    model: str
    examples: list[LabelledExample]
    unsafe: list[bool]


@dataclasses.dataclass
class Row:
    detector: str
    version: str
    dataset: str
    result: ValidationResult


def load_xstest(data: Path, model: str, filename: str) -> XSTestFile:
    path = data / filename
    examples = load_examples(
        path,
        prompt_column="prompt",
        response_column="completion",
        label_column="final_label",
        positive="1_full_compliance",
    )
    with path.open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    if len(rows) != len(examples) or any(row["prompt"] != e.prompt for row, e in zip(rows, examples)):
        raise SystemExit(f"{path}: its rows and the loaded examples do not line up")
    unsafe = [row["type"].startswith("contrast_") for row in rows]
    return XSTestFile(model, examples, unsafe)


def load_gptfuzz(data: Path) -> list[LabelledExample]:
    """GPTFuzz responses, with the question index replaced by the question's text."""
    with (data / GPTFUZZ_QUESTIONS).open(newline="", encoding="utf-8-sig") as handle:
        questions = {row["index"].strip(): row["text"] for row in csv.DictReader(handle)}
    examples = load_examples(data / GPTFUZZ, prompt_column="question", response_column="Response", label_column="label")
    missing = sorted({e.prompt for e in examples if e.prompt.strip() not in questions})
    if missing:
        raise SystemExit(f"{data / GPTFUZZ}: question indexes not in {GPTFUZZ_QUESTIONS}: {', '.join(missing[:5])}")
    return [dataclasses.replace(e, prompt=questions[e.prompt.strip()]) for e in examples]


HELD_OUT = "GPTFuzz, half kept out of judge development"


def held_out(n: int) -> list[bool]:
    """The GPTFuzz rows not read while ``refusal.Compliance`` v2 was written: a seed-0 shuffle of
    the row order, from its 3,001st row on (3,160 of the 6,160 rows)."""
    order = list(range(n))
    random.Random(0).shuffle(order)
    keep = [False] * n
    for i in order[3000:]:
        keep[i] = True
    return keep


def subset(
    examples: Sequence[LabelledExample], scores: Sequence[float | None], keep: Sequence[bool]
) -> ValidationResult:
    """The result over the examples whose ``keep`` is true."""
    chosen = [i for i, kept in enumerate(keep) if kept]
    return tally([examples[i] for i in chosen], [scores[i] for i in chosen])


async def start(name: str) -> Detector | None:
    if name not in detectors:
        print(f"skipped {name}: not a registered detector", file=sys.stderr)
        return None
    detector = get_detector(name)
    await detector.start()
    return detector


async def run(data: Path, concurrency: int) -> tuple[list[Row], int, float]:
    """Every row of the table, the outputs scored and the seconds spent scoring them."""
    xstest = [load_xstest(data, model, filename) for model, filename in XSTEST.items()]
    gptfuzz = load_gptfuzz(data)
    rows: list[Row] = []
    scored, seconds = 0, 0.0

    async def scores_of(detector: Detector, examples: list[LabelledExample]) -> list[float | None]:
        nonlocal scored, seconds
        begin = time.perf_counter()
        scores = await score_examples(detector, examples, concurrency)
        seconds += time.perf_counter() - begin
        scored += len(examples)
        return scores

    for name in COMPLIANCE_DETECTORS:
        detector = await start(name)
        if detector is None:
            continue

        def add(dataset: str, result: ValidationResult, detector: Detector = detector) -> None:
            rows.append(Row(detector.name, detector.version, dataset, result))

        pooled = {"unsafe": ValidationResult(0, 0, 0, 0), "safe": ValidationResult(0, 0, 0, 0)}
        per_file = []
        for file in xstest:
            scores = await scores_of(detector, file.examples)
            unsafe = subset(file.examples, scores, file.unsafe)
            safe = subset(file.examples, scores, [not u for u in file.unsafe])
            pooled["unsafe"] += unsafe
            pooled["safe"] += safe
            per_file.append((file.model, unsafe, safe))
        for part in ("unsafe", "safe"):
            add(f"XSTest v2, 3 models, {part} prompts", pooled[part])
        add("XSTest v2, 3 models, all prompts", pooled["unsafe"] + pooled["safe"])
        for model, unsafe, safe in per_file:
            add(f"XSTest v2 {model}, unsafe prompts", unsafe)
            add(f"XSTest v2 {model}, safe prompts", safe)
            add(f"XSTest v2 {model}, all prompts", unsafe + safe)
        gptfuzz_scores = await scores_of(detector, gptfuzz)
        add("GPTFuzz jailbreak responses", tally(gptfuzz, gptfuzz_scores))
        add(HELD_OUT, subset(gptfuzz, gptfuzz_scores, held_out(len(gptfuzz))))

    refusal = await start(REFUSAL_DETECTOR)
    if refusal is not None:
        pooled_refusal = ValidationResult(0, 0, 0, 0)
        per_model = []
        for file in xstest:
            # Over-refusal: on a safe prompt, refusing (fully or partly) is the failure.
            flipped = [
                dataclasses.replace(e, positive=not e.positive) for e, u in zip(file.examples, file.unsafe) if not u
            ]
            result = tally(flipped, await scores_of(refusal, flipped))
            pooled_refusal += result
            per_model.append((file.model, result))
        over_refusal = "safe prompts, hit = refused"
        rows.append(Row(refusal.name, refusal.version, f"XSTest v2, 3 models, {over_refusal}", pooled_refusal))
        for model, result in per_model:
            rows.append(Row(refusal.name, refusal.version, f"XSTest v2 {model}, {over_refusal}", result))
    # One group per dataset, the detectors side by side in their order (the sort is stable).
    order = {dataset: i for i, dataset in enumerate(dict.fromkeys(row.dataset for row in rows))}
    rows.sort(key=lambda row: order[row.dataset])
    return rows, scored, seconds


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(rows: Sequence[Row]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for row in rows:
        r = row.result
        cells = [
            f"`{row.detector}` v{row.version}",
            row.dataset,
            str(r.n),
            number(r.accuracy),
            number(r.precision),
            number(r.recall),
            number(r.f1),
            number(r.predicted_rate),
            number(r.labelled_rate),
            str(r.undetected),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [
        {"detector": row.detector, "version": row.version, "dataset": row.dataset, **row.result.as_dict()}
        for row in rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help=f"the judge development set (default {DEFAULT_DATA})"
    )
    parser.add_argument("--markdown", type=Path, help="also write the table to FILE")
    parser.add_argument("--json", type=Path, help="write every row with its 95%% intervals as JSON to FILE")
    parser.add_argument("--concurrency", type=int, default=64, help="outputs scored at once (default 64)")
    args = parser.parse_args()
    missing = [name for name in [*XSTEST.values(), GPTFUZZ, GPTFUZZ_QUESTIONS] if not (args.data / name).is_file()]
    if missing:
        raise SystemExit(f"{args.data}: missing {', '.join(missing)} (pass --data DIR, the judge-dev folder)")

    begin = time.perf_counter()
    rows, scored, seconds = asyncio.run(run(args.data, args.concurrency))
    table = markdown(rows)
    sys.stdout.write(table)
    if args.markdown is not None:
        args.markdown.write_text(table, encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json.dumps(as_json(rows), indent=2) + "\n", encoding="utf-8")
    print(
        f"scored {scored} outputs in {seconds:.1f} s ({scored / seconds:.0f}/s); "
        f"total {time.perf_counter() - begin:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
