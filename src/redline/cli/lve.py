"""``redline lve verify|run|record``: the LVE repository format from the command line.

Checkers judge in worker processes (:mod:`redline.lve.isolation`); ``--checker-timeout`` and
``--checker-memory`` set their limits. User mistakes print one ``error: ...`` line to stderr and
exit with status 1 (see :func:`redline.cli.common.report_exception`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redline import textsafety
from redline.cli.common import report_exception
from redline.errors import UsageError
from redline.eventloop import run_async
from redline.generators import get_generator
from redline.lve.isolation import CheckerPool, checker_for
from redline.lve.limits import MEMORY_HELP, TIMEOUT_HELP, CheckerLimits, checker_limits, configure_shared_pool
from redline.lve.model import MAX_INSTANCE_LINE_BYTES, MAX_INSTANCES_FILE_BYTES, find_lves, load_lve
from redline.lve.runner import naming, record_lve, run_lve
from redline.lve.verify import verify as run_verify
from redline.report.formatting import plural
from redline.untrusted import NotJSONObjectError, UntrustedInputError, json_object_lines

app = typer.Typer(
    help="Run, record and verify LVEs (language model vulnerabilities and exposures, github.com/lve-org/lve).",
    no_args_is_help=True,
)

TRUST_HELP = (
    "Allow custom checker/checker.py files inside LVEs to run (they are arbitrary Python; "
    "like every checker, they run in a worker process with OS limits)."
)


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn an exception into its ``error:`` line and exit status (:func:`report_exception`):
    1 for a :class:`~redline.errors.RedlineError` or :class:`OSError`, 70 for a bug."""
    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:
        raise typer.Exit(report_exception(exc)) from None


def _parse_params(pairs: list[str] | None) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"bad parameter {pair!r}: use -p NAME=VALUE")
        params[name.strip()] = value
    return params


def _model_options(lve: Any, temperature: float | None, max_tokens: int | None, top_p: float | None) -> dict[str, Any]:
    """Sampling options: the LVE's ``default_model_args`` overridden by the command line."""
    options = {k: v for k, v in lve.default_model_args.items() if k in ("temperature", "max_tokens", "top_p")}
    for key, value in (("temperature", temperature), ("max_tokens", max_tokens), ("top_p", top_p)):
        if value is not None:
            options[key] = value
    return options


def _single_lve(path: Path) -> Any:
    tests = find_lves(path)
    if len(tests) != 1:
        raise UsageError(f"{path}: holds {len(tests)} LVEs; give one LVE folder or test.json")
    return load_lve(tests[0])


@app.command()
def verify(
    path: Path = typer.Argument(..., help="A test.json, an LVE folder or a whole repository."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    trust_code: bool = typer.Option(False, "--trust-code", help=TRUST_HELP),
    checker_timeout: float = typer.Option(CheckerLimits.timeout, "--checker-timeout", min=0.1, help=TIMEOUT_HELP),
    checker_memory: int = typer.Option(CheckerLimits.memory_mb, "--checker-memory", min=16, help=MEMORY_HELP),
) -> None:
    """Re-check every recorded instance with its test's checker and report agreement.

    Checkers run in worker processes (one per LVE); one that crashes, hangs or exceeds a limit
    is an error on its own instances. Exit status 0 when every judged instance agrees and
    nothing failed, 1 otherwise.
    """
    with _user_errors():
        if not path.exists():
            raise UsageError(f"{path}: no such file or folder")
        with CheckerPool(checker_limits(checker_timeout, checker_memory)) as pool:
            report = run_verify(path, trust_code=trust_code, pool=pool)
        if as_json:
            sys.stdout.write(textsafety.dumps(report.as_dict(), indent=2) + "\n")
        else:
            _print_report(report)
    raise typer.Exit(0 if report.ok else 1)


def _print_report(report: Any) -> None:
    out, err = Console(), Console(stderr=True)
    out.print(f"{plural(report.lves, 'LVE')}, {plural(report.total, 'recorded instance')}", highlight=False)
    table = Table(show_header=True)
    table.add_column("result")
    table.add_column("count", justify="right")
    table.add_row("[green]agree[/green]", str(report.agree))
    table.add_row("[red]disagree[/red]", str(len(report.disagree)))
    table.add_row("[yellow]skipped[/yellow]", str(len(report.skipped)))
    table.add_row("[red]errors[/red]", str(len(report.errors)))
    out.print(table)
    verdict = {True: "safe", False: "unsafe"}
    for d in report.disagree:  # plain lines: paths are never truncated
        out.print(
            f"[red]disagree[/red] {escape(textsafety.visible(d['file']))}:{d['line']} ({escape(textsafety.visible(d['checker']))}): recorded {verdict[d['expected']]}, now {verdict[d['got']]}",
            highlight=False,
            soft_wrap=True,
        )
    for s in report.skipped:
        line = textsafety.visible(f"{s['file']}:{s['line']}: skipped: {s['reason']}")
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    for e in report.errors:
        err.print(textsafety.visible(f"error: {e['reason']}"), markup=False, highlight=False, soft_wrap=True)


@app.command()
def run(
    path: Path = typer.Argument(..., help="The LVE folder or its test.json."),
    model: str = typer.Option(
        ..., "--model", "-m", help="Generator spec, e.g. smollm2, hf:PATH or openai:gpt-4o-mini."
    ),
    param: list[str] | None = typer.Option(None, "--param", "-p", help="Prompt parameter NAME=VALUE (repeatable)."),
    trust_code: bool = typer.Option(False, "--trust-code", help=TRUST_HELP),
    temperature: float | None = typer.Option(None, "--temperature", help="Sampling temperature."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Maximum tokens per answer."),
    top_p: float | None = typer.Option(None, "--top-p", help="Nucleus sampling."),
    base_url: str | None = typer.Option(None, "--base-url", help="Endpoint of an OpenAI-compatible server."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict and the response as JSON."),
    checker_timeout: float = typer.Option(CheckerLimits.timeout, "--checker-timeout", min=0.1, help=TIMEOUT_HELP),
    checker_memory: int = typer.Option(CheckerLimits.memory_mb, "--checker-memory", min=16, help=MEMORY_HELP),
) -> None:
    """Run one LVE against a model and print the verdict (exit status 0 either way)."""
    with _user_errors():
        configure_shared_pool(checker_limits(checker_timeout, checker_memory))
        lve = _single_lve(path)
        params = _parse_params(param)
        unknown = sorted(set(params) - set(lve.prompt_parameters))
        if unknown:
            takes = ", ".join(lve.prompt_parameters) or "no parameters"
            raise UsageError(f"unknown parameter(s) {', '.join(unknown)}: {lve.name} takes {takes}")
        options = _model_options(lve, temperature, max_tokens, top_p)
        with naming(lve):
            checker_for(lve, trust_code=trust_code, args={**options, **params})  # fail before any model call

        async def go() -> Any:
            generator = get_generator(model, base_url=base_url, **options)
            try:
                await generator.start()
                return await run_lve(lve, generator, params, trust_code=trust_code, model_args=options)
            finally:
                await generator.aclose()

        result = run_async(go())
        if as_json:
            data = {
                "lve": lve.name,
                "checker": lve.checker_name,
                "safe": result.safe,
                "response": result.response,
                "args": {**options, **params},
            }
            sys.stdout.write(textsafety.dumps(data) + "\n")
        else:
            verdict = "SAFE" if result.safe else "UNSAFE"
            typer.echo(textsafety.visible(f"{lve.name}: {verdict} ({lve.checker_name})"))
            shown = (
                result.response
                if isinstance(result.response, str)
                else json.dumps(result.response, ensure_ascii=False, indent=1)
            )
            typer.echo(textsafety.visible(shown))  # the model's text: no escape sequences reach the terminal


def _read_param_rows(params_file: Path, lve: Any) -> list[dict[str, Any]]:
    rows = []
    try:
        lines = json_object_lines(params_file, max_line=MAX_INSTANCE_LINE_BYTES, max_file=MAX_INSTANCES_FILE_BYTES)
        for number, row in lines:
            unknown = sorted(set(row) - set(lve.prompt_parameters))
            missing = sorted(set(lve.prompt_parameters) - set(row))
            if unknown or missing:
                problem = (
                    f"unknown parameter(s) {', '.join(unknown)}"
                    if unknown
                    else f"missing parameter(s) {', '.join(missing)}"
                )
                raise UsageError(f"{params_file}:{number}: {problem}")
            rows.append(row)
    except OSError as exc:
        raise UsageError(f"{params_file}: {exc.strerror or exc}") from None
    except NotJSONObjectError as exc:
        problem = (
            f"bad JSON: {exc.detail} (column {exc.column})"
            if exc.found is None
            else f"each line must be a JSON object of prompt parameters, not {exc.found}"
        )
        raise UsageError(f"{params_file}:{exc.line}: {problem}") from None
    except UntrustedInputError as exc:  # too large, a line too long, not UTF-8, nested too deeply
        raise UsageError(
            f"{params_file}:{exc.line}: {exc.problem}" if exc.line else f"{params_file}: {exc.problem}"
        ) from None
    if not rows:
        raise UsageError(f"{params_file}: no parameter lines")
    return rows


@app.command()
def record(
    path: Path = typer.Argument(..., help="The LVE folder or its test.json."),
    model: str = typer.Option(..., "--model", "-m", help="Generator spec."),
    params_file: Path = typer.Option(..., "--params", help="JSON lines, one object of prompt parameters per line."),
    trust_code: bool = typer.Option(False, "--trust-code", help=TRUST_HELP),
    temperature: float | None = typer.Option(None, "--temperature", help="Sampling temperature."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Maximum tokens per answer."),
    top_p: float | None = typer.Option(None, "--top-p", help="Nucleus sampling."),
    base_url: str | None = typer.Option(None, "--base-url", help="Endpoint of an OpenAI-compatible server."),
    author: str = typer.Option("", "--author", help="Author recorded with each instance."),
    file_name: str = typer.Option("redline.jsonl", "--instances-file", help="File under instances/ to append to."),
    checker_timeout: float = typer.Option(CheckerLimits.timeout, "--checker-timeout", min=0.1, help=TIMEOUT_HELP),
    checker_memory: int = typer.Option(CheckerLimits.memory_mb, "--checker-memory", min=16, help=MEMORY_HELP),
) -> None:
    """Run an LVE once per parameter line and append the post-processed instances."""
    with _user_errors():
        configure_shared_pool(checker_limits(checker_timeout, checker_memory))
        lve = _single_lve(path)
        rows = _read_param_rows(params_file, lve)
        options = _model_options(lve, temperature, max_tokens, top_p)
        with naming(lve):
            checker_for(lve, trust_code=trust_code, args={**options, **rows[0]})  # fail before any model call

        async def go() -> Any:
            generator = get_generator(model, base_url=base_url, **options)
            try:
                await generator.start()
                return await record_lve(
                    lve,
                    generator,
                    rows,
                    model=model,
                    trust_code=trust_code,
                    model_args=options,
                    author=author,
                    file_name=file_name,
                )
            finally:
                await generator.aclose()

        results = run_async(go())
        unsafe = sum(1 for run_result, _ in results if not run_result.safe)
        typer.echo(f"recorded {plural(len(results), 'instance')}, {unsafe} unsafe, to {results[-1][1]}")


def register(parent: typer.Typer) -> None:
    """Add the ``lve`` command group to the ``redline`` app."""
    parent.add_typer(app, name="lve")
