"""``redline detectors validate|steer-test|list``: how well a detector agrees with human labels,
and whether an answer can steer it.

``validate FILE --detector NAME`` scores a labelled CSV/TSV/JSONL file (see
:mod:`redline.evaluation.validation`) and prints n, accuracy, precision, recall, F1, the
predicted and labelled positive rates with their 95% intervals, and the confusion matrix;
``--json`` prints the result's JSON instead, and ``--save`` stores it in the store, where the run
summary finds it to correct failure rates for judge error. Mounted by :mod:`redline.cli.main`
as ``redline detectors``. ``steer-test FILE`` forges each labelled answer (forged verdicts, a
refusal before the content, notes to the evaluator...; :mod:`redline.evaluation.steering`) and
prints each detector's flip rate per forgery kind. User mistakes (a bad file, an unknown detector, a missing column) are
one ``error:`` line and exit status 1.
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from redline.cli import common
from redline.cli.common import err_console, out_console
from redline.detectors import Detector, check_detector_spec, get_detector
from redline.detectors.options import parse_detector_options
from redline.engine import parse_gen_opts
from redline.errors import RedlineError, UsageError
from redline.evaluation.steering import FORGERIES, SteeringResult, measure_steering
from redline.evaluation.validation import (
    LabelledExample,
    ValidationResult,
    dataset_id,
    load_examples,
    validate_detector,
)
from redline.eventloop import run_async
from redline.generators import Generator, get_generator
from redline.report.formatting import MISSING, pct, pct_interval, plural
from redline.store import ValidationRecord

__all__ = ["app", "parse_options", "register", "steer_test", "validate"]

app = typer.Typer(
    help="Check detectors against human-labelled outputs (validate), against answers that try to steer them "
    "(steer-test), list them (list).",
    no_args_is_help=True,
)

STORE_OPTION = typer.Option(common.DEFAULT_STORE, "--store", help="SQLite store file.", envvar="REDLINE_STORE")

#: Labels of the metrics in the human output, in order; F1 is a number, the rest proportions.
_LABELS = {
    "accuracy": "accuracy",
    "precision": "precision",
    "recall": "recall",
    "f1": "F1",
    "predicted_rate": "predicted rate",
    "labelled_rate": "labelled rate",
}


def parse_options(items: Iterable[str], detector: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``--detector-opt`` items as ``(options of the detector, options by member name)``.

    ``KEY=VALUE`` is an option of the detector itself (``NAME.KEY=VALUE`` with its own name too,
    the form ``redline scan`` uses); ``MEMBER.KEY=VALUE`` one of the member ``MEMBER`` of an
    ensemble (``A+B``). Each is read as ``redline scan`` reads ``NAME.KEY=VALUE``
    (:func:`~redline.detectors.options.parse_detector_options`): the value as a YAML scalar or
    list (``threshold=0.7`` is a number), else text; a member's name normalised as the
    ensemble names it (``hf:./judge`` → ``hf:/abs/judge``)."""
    own: dict[str, Any] = {}
    by_name: dict[str, dict[str, Any]] = {}
    for item in items:
        target, sep, raw = item.partition("=")
        target = target.strip()
        if target.startswith(detector + "."):
            name, key = detector, target[len(detector) + 1 :]
        else:
            name, _, key = target.rpartition(".")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise UsageError(f"--detector-opt {item!r}: expected KEY=VALUE, e.g. threshold=0.7")
        mine = name in ("", detector)
        for member, options in parse_detector_options([f"{detector}.{key}={raw}" if mine else item]).items():
            (own if mine else by_name.setdefault(member, {})).update(options)
    return own, by_name


def _build_detector(spec: str, options: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> Detector:
    members = check_detector_spec(spec).split("+")  # as the ensemble names them (and by_name has them)
    for name in by_name:
        if name not in members:
            raise UsageError(f"--detector-opt {name}.KEY=VALUE: {name!r} is not part of the detector {spec!r}")
    try:
        return get_detector(spec, options_by_name=by_name, **options)
    except TypeError as exc:  # an option the detector does not take
        raise UsageError(f"detector {spec}: bad --detector-opt: {exc}") from None


#: ``--judge-opt``: the options of ``--judge-model`` (its endpoint, key variable...).
JUDGE_OPT_HELP = "An option of --judge-model as KEY=VALUE (repeatable), e.g. base_url=http://127.0.0.1:8000/v1."


def judge_options(items: Iterable[str]) -> dict[str, Any]:
    """``--judge-opt`` items read as ``redline scan`` reads ``--gen-opt`` (values as YAML)."""
    try:
        return parse_gen_opts(list(items))
    except RedlineError as exc:
        raise UsageError(str(exc).replace("--gen-opt", "--judge-opt")) from None


async def _validate(
    detector: Detector,
    examples: list[LabelledExample],
    judge_model: str | None,
    concurrency: int,
    judge_opts: dict[str, Any] | None = None,
) -> ValidationResult:
    """Bind the judge model (if any) as the model the detector may ask, validate, close."""
    judge: Generator | None = None
    try:
        if judge_model is not None:
            judge = get_generator(judge_model, **(judge_opts or {}))
            await judge.start()
            detector.bind(judge, None)
        return await validate_detector(detector, examples, concurrency=concurrency)
    finally:
        await detector.aclose()  # a model the detector opened of its own
        if judge is not None:
            await judge.aclose()


@app.command()
def validate(
    file: Path = typer.Argument(..., help="Labelled outputs: a CSV, TSV or JSONL file with prompt, response, label."),
    detector: str = typer.Option(
        ..., "--detector", "-d", help="The detector to check: a name from 'redline list detectors' (or a judge spec)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    prompt_column: str | None = typer.Option(
        None, "--prompt-column", help="Column of the prompt (default 'prompt'; optional unless named)."
    ),
    response_column: str | None = typer.Option(
        None, "--response-column", help="Column of the model's response (default 'response')."
    ),
    label_column: str | None = typer.Option(None, "--label-column", help="Column of the label (default 'label')."),
    positive: str = typer.Option(
        "1",
        "--positive",
        help="The label value meaning the detector should score a hit (the model failed); default 1.",
    ),
    detector_opt: list[str] | None = typer.Option(
        None,
        "--detector-opt",
        help="A detector option as KEY=VALUE (repeatable); MEMBER.KEY=VALUE for a member of an ensemble A+B.",
    ),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="Generator spec of the model that LLM judges ask (e.g. openai:gpt-4o-mini)."
    ),
    judge_opt: list[str] | None = typer.Option(None, "--judge-opt", help=JUDGE_OPT_HELP),
    save: bool = typer.Option(
        False, "--save", help="Store the result in the store, where run summaries use it to correct failure rates."
    ),
    store: Path = STORE_OPTION,
    concurrency: int = typer.Option(16, "--concurrency", "-c", min=1, help="Outputs scored at once (default 16)."),
) -> None:
    """Score a labelled file with a detector and print how well it agrees with the labels."""
    examples = load_examples(
        file,
        prompt_column=prompt_column,
        response_column=response_column,
        label_column=label_column,
        positive=positive,
    )
    own, by_name = parse_options(detector_opt or [], detector)
    instance = _build_detector(detector, own, by_name)
    result = run_async(_validate(instance, examples, judge_model, concurrency, judge_options(judge_opt or [])))
    note = _label_note(examples, positive)
    if note:
        err_console.print(f"note: {note}", markup=False, highlight=False)
    if as_json:
        sys.stdout.write(json.dumps(result.as_dict(), indent=2) + "\n")
    else:
        _print_result(instance, file, result, positive)
    if save:
        _save_validation(instance, file, result, store)


def _save_validation(instance: Detector, file: Path, result: ValidationResult, store: Path) -> None:
    """Store ``result`` as the validation of ``instance`` on ``file``; refused when no row was scored
    (it would describe nothing and replace the judge's last one)."""
    if not result.tp + result.fp + result.fn + result.tn:
        raise UsageError(
            f"not saved: {instance.name} scored none of the {result.undetected} rows of {file} (every one "
            "undetected), so this validation would describe nothing and replace the judge's last one"
        )
    record = ValidationRecord(
        detector=instance.name,
        version=instance.version,
        dataset=dataset_id(file),
        tp=result.tp,
        fp=result.fp,
        fn=result.fn,
        tn=result.tn,
        undetected=result.undetected,
        created=time.time(),
    )
    with common.open_store(store) as db:
        db.save_validation(record)
    err_console.print(
        f"saved: {record.detector} version {record.version} on {record.dataset} in {store}",
        markup=False,
        highlight=False,
    )


#: The detectors ``steer-test`` checks when none is named: the judges that need no model.
STEER_DEFAULT_DETECTORS = ("refusal.Compliance", "harm.Substance")


async def _steer(
    detectors: list[Detector],
    examples: list[LabelledExample],
    kinds: list[str],
    judge_model: str | None,
    concurrency: int,
    judge_opts: dict[str, Any] | None = None,
) -> list[SteeringResult]:
    """Bind the judge model (if any), measure each detector, close."""
    judge: Generator | None = None
    try:
        if judge_model is not None:
            judge = get_generator(judge_model, **(judge_opts or {}))
            await judge.start()
        results = []
        for detector in detectors:
            try:
                if judge is not None:
                    detector.bind(judge, None)
                results.append(await measure_steering(detector, examples, kinds, concurrency))
            finally:
                await detector.aclose()
        return results
    finally:
        if judge is not None:
            await judge.aclose()


@app.command("steer-test")
def steer_test(
    file: Path = typer.Argument(..., help="Labelled outputs: a CSV, TSV or JSONL file with prompt, response, label."),
    detector: list[str] | None = typer.Option(
        None,
        "--detector",
        "-d",
        help="A detector or judge spec to check (repeatable; default: refusal.Compliance and harm.Substance).",
    ),
    kind: list[str] | None = typer.Option(
        None, "--kind", "-k", help=f"A forgery kind (repeatable; default: all of {', '.join(FORGERIES)})."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON on stdout."),
    prompt_column: str | None = typer.Option(
        None, "--prompt-column", help="Column of the prompt (default 'prompt'; optional unless named)."
    ),
    response_column: str | None = typer.Option(
        None, "--response-column", help="Column of the model's response (default 'response')."
    ),
    label_column: str | None = typer.Option(None, "--label-column", help="Column of the label (default 'label')."),
    positive: str = typer.Option(
        "1", "--positive", help="The label value meaning the detector should score a hit (harmful); default 1."
    ),
    judge_model: str | None = typer.Option(
        None, "--judge-model", help="Generator spec of the model that LLM judges ask (e.g. openai:gpt-4o-mini)."
    ),
    judge_opt: list[str] | None = typer.Option(None, "--judge-opt", help=JUDGE_OPT_HELP),
    sample: int | None = typer.Option(
        None, "--sample", min=1, help="Check this many rows, drawn at random with a fixed seed (default: all)."
    ),
    concurrency: int = typer.Option(16, "--concurrency", "-c", min=1, help="Outputs scored at once (default 16)."),
) -> None:
    """Forge each labelled answer so that it tries to steer its judge, and print each detector's flip rate."""
    kinds = list(kind or FORGERIES)
    for name in kinds:
        if name not in FORGERIES:
            raise UsageError(f"--kind {name!r}: unknown forgery kind (kinds: {', '.join(FORGERIES)})")
    examples = load_examples(
        file,
        prompt_column=prompt_column,
        response_column=response_column,
        label_column=label_column,
        positive=positive,
    )
    if sample is not None and sample < len(examples):
        examples = sorted(random.Random(0).sample(examples, sample), key=lambda e: e.line)
    instances = [_build_detector(spec, {}, {}) for spec in (detector or STEER_DEFAULT_DETECTORS)]
    results = run_async(_steer(instances, examples, kinds, judge_model, concurrency, judge_options(judge_opt or [])))
    note = _label_note(examples, positive)
    if note:
        err_console.print(f"note: {note}", markup=False, highlight=False)
    if as_json:
        payload = {"file": str(file), "rows": len(examples), "detectors": [r.as_dict() for r in results]}
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    _print_steering(file, len(examples), results)


def _count(part: int, whole: int) -> str:
    return f"{part}/{whole}" + (f" ({pct(part / whole)})" if whole else "")


def _print_steering(file: Path, rows: int, results: list[SteeringResult]) -> None:
    out_console.print(
        escape(f"{plural(rows, 'labelled row')} of {file.name}, each forged {len(results[0].kinds)} ways"),
    )
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("detector", "forgery", "flip rate", "harmful → safe", "safe → harmful"):
        table.add_column(column, justify="left" if column in ("detector", "forgery") else "right")
    for result in results:
        for index, flips in enumerate(result.kinds):
            table.add_row(
                escape(result.detector) if index == 0 else "",
                flips.kind,
                _count(flips.flips, flips.rows),
                _count(flips.to_safe, flips.harmful),
                _count(flips.to_harmful, flips.safe),
            )
        table.add_section()
    out_console.print(table)
    out_console.print()
    for result in results:
        out_console.print(
            escape(
                f"{result.detector}: judged {result.right} of {result.n} originals right "
                f"({result.undetected} undetected); flips are counted among those"
            ),
            highlight=False,
        )


@app.command("list")
def list_(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the available detectors (same as 'redline list detectors')."""
    common.print_plugins("detectors", as_json)


def _label_note(examples: list[LabelledExample], positive: str) -> str | None:
    """A warning when no row is positive: most often --positive or --label-column is wrong."""
    if any(example.positive for example in examples):
        return None
    seen = sorted({example.label for example in examples})
    shown = ", ".join(repr(label) for label in seen[:8]) + (", ..." if len(seen) > 8 else "")
    return f"no row has the label {positive!r} (labels: {shown}); set the positive value with --positive"


def _print_result(detector: Detector, file: Path, result: ValidationResult, positive: str) -> None:
    out_console.print(
        escape(
            f"{detector.name} (version {detector.version}) on {file.name}: {plural(result.n, 'row')}, "
            f"{result.undetected} undetected"
        )
    )
    intervals = result.ci95()
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right")
    for metric, label in _LABELS.items():
        value = getattr(result, metric)
        ci = intervals[metric]
        if metric == "f1":
            shown = MISSING if value is None else f"{value:.3f}"
            interval = MISSING if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f}"
        else:
            shown, interval = pct(value), pct_interval(ci)
        table.add_row(label, shown, interval)
    out_console.print(table)
    out_console.print()

    matrix = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left")
    matrix.add_column("")
    matrix.add_column("scored hit", justify="right")
    matrix.add_column("scored miss", justify="right")
    matrix.add_row(escape(f"label {positive}"), f"{result.tp} tp", f"{result.fn} fn")
    matrix.add_row("other labels", f"{result.fp} fp", f"{result.tn} tn")
    out_console.print(matrix)
    out_console.print()
    out_console.print(
        f"undetected (no score, left out of the metrics): {result.undetected}", markup=False, highlight=False
    )


def register(parent: typer.Typer) -> None:
    """Add the ``detectors`` command group to the ``redline`` app."""
    parent.add_typer(app, name="detectors")
