"""The ``redline`` command line.

Heavy modules (the harness, torch, transformers) are imported inside the commands, so
``redline --help`` answers at once. Every user mistake ends in one ``error: ...`` line on stderr
and a non-zero exit code, never a traceback (set ``REDLINE_DEBUG=1`` to see one).
"""

from __future__ import annotations

import json
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer

from redline.cli import common
from redline.cli.common import UserError, err_console, out_console

app = typer.Typer(
    name="redline",
    help="Probe large language models for vulnerabilities, unsafe behaviour and bias.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

STORE_OPTION = typer.Option("redline.db", "--store", help="SQLite store file.", envvar="REDLINE_STORE")


@app.command()
def scan(
    model: str = typer.Option("smollm2", "--model", "-m", help="Generator spec FAMILY[:MODEL], e.g. smollm2, openai:gpt-4o-mini, test.echo."),
    probes: Optional[str] = typer.Option(None, "--probes", "-p", help="Comma-separated probes or families ('all'). Default: harmful,encoding,injection."),
    generations: int = typer.Option(1, "--generations", "-g", min=1, help="Outputs per attempt."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", "-c", min=1, help="Attempts in flight (default 64 local, 16 remote)."),
    store: Path = STORE_OPTION,
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue the run RUN_ID, skipping finished attempts."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="With --resume: also retry attempts that errored."),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON on stdout."),
    sample: Optional[int] = typer.Option(None, "--sample", min=1, help="A seeded random subset of N items per probe."),
    seed: int = typer.Option(0, "--seed", help="Seed for --sample and local sampling."),
    repetitions: Optional[int] = typer.Option(None, "--repetitions", "-r", min=1, help="Run each prompt N times (num_repetitions)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="Environment variable holding the API key (default OPENAI_API_KEY)."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="Maximum new tokens per output."),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature."),
    lve: Optional[list[Path]] = typer.Option(None, "--lve", help="Run the LVEs under PATH as probes (repeatable)."),
    trust_code: bool = typer.Option(False, "--trust-code", help="Allow custom checker.py files inside LVEs to run."),
) -> None:
    """Scan a model with probes and store every attempt."""
    from redline.harness import ScanConfig

    if retry_errors and not resume:
        raise UserError("--retry-errors needs --resume RUN_ID")
    config = None
    if resume is None:
        options: dict[str, Any] = {
            "base_url": base_url,
            "api_key_env": api_key_env,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "seed": seed if model.split(":")[0] in ("smollm2", "hf") else None,
        }
        config = ScanConfig(
            model=model,
            probes=probes,
            generations=generations,
            concurrency=concurrency,
            sample=sample,
            seed=seed,
            generator_options={k: v for k, v in options.items() if v is not None},
            lve_paths=[str(p.resolve()) for p in lve or []],
            num_repetitions=repetitions,
            trust_code=trust_code,
        )
    elif concurrency is not None:
        config = ScanConfig(concurrency=concurrency)
    run_id = common.run_scan(config, store, resume=resume, retry_errors=retry_errors, quiet=as_json)
    common.print_summary(store, run_id, as_json=as_json)


class ListKind(str, Enum):
    probes = "probes"
    detectors = "detectors"
    generators = "generators"


@app.command("list")
def list_(kind: ListKind = typer.Argument(..., help="probes, detectors or generators"),
          as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the available probes, detectors or generators."""
    common.print_plugins(kind.value, as_json)


@app.command()
def runs(store: Path = STORE_OPTION, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the runs in the store, newest first."""
    common.print_runs(store, as_json)


@app.command()
def show(run_id: str = typer.Argument(..., help="The run to show."), store: Path = STORE_OPTION,
         as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON.")) -> None:
    """Show a run's summary (the same JSON as scan --json)."""
    common.print_summary(store, run_id, as_json=as_json)


def _mount_optional() -> None:
    """Mount sub-command groups that live in their own modules (when present)."""
    import importlib

    for module, name in (("redline.cli.lve", "lve"),):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        app.add_typer(mod.app, name=name)
    for module in ("redline.cli.report",):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError:
            continue
        mod.register(app)


_mount_optional()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``redline`` console script."""
    import click

    command = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else argv
    try:
        code = command.main(args=args, prog_name="redline", standalone_mode=False)
    except (click.exceptions.Exit, typer.Exit) as exc:
        code = exc.exit_code
    except (click.exceptions.Abort, typer.Abort, KeyboardInterrupt):
        err_console.print("interrupted")
        code = 130
    except SystemExit as exc:
        code = exc.code
    except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
        if hasattr(exc, "format_message") and hasattr(exc, "exit_code"):  # a click usage error
            ctx = getattr(exc, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            err_console.print(f"error: {exc.format_message()}{hint}", markup=False, highlight=False)
            code = exc.exit_code
        else:
            code = common.report_exception(exc)
    sys.exit(code if isinstance(code, int) else 0)
