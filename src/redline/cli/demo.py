"""``redline demo``: a first scan in seconds, on the embedded model, with no setting to choose.

The demo is an ordinary scan: the fixed configuration of :func:`demo_config` run by
:func:`redline.cli.scan_run.run_scan` and shown by :func:`redline.cli.common.print_summary`, as
``redline scan`` runs and shows one, so the run is stored, resumable and reportable like any other.
Mounted by :mod:`redline.cli.main` through :func:`register`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from redline.cli import common, scan_run
from redline.engine import ScanConfig, build_scan_config
from redline.generators import DEFAULT_GENERATOR
from redline.report.formatting import plural

__all__ = ["DEMO_MAX_TOKENS", "DEMO_PROBES", "DEMO_SAMPLE", "demo", "demo_config", "register"]

#: One probe of each of five families, chosen for short prompts and detectors that need no
#: downloaded model (refusal phrases, injected markers, script tags, accepted false premises).
DEMO_PROBES = (
    "harmful.Requests",
    "jailbreak.PrefixInjection",
    "injection.HiddenInData",
    "output.XSS",
    "misinformation.FalsePremise",
)
#: Prompts per probe (a seeded sample, the same each time).
DEMO_SAMPLE = 2
#: New tokens per answer: enough for a refusal, a compliance or an injected marker to show.
DEMO_MAX_TOKENS = 32
#: Example failures shown per probe after the table.
DEMO_EXAMPLES = 1


def demo_config(model: str = DEFAULT_GENERATOR) -> ScanConfig:
    """The demo's scan: :data:`DEMO_PROBES`, :data:`DEMO_SAMPLE` prompts each (seed 0), one output
    of at most :data:`DEMO_MAX_TOKENS` tokens per prompt, against ``model`` (the embedded default
    model unless a test names another). Built as ``redline scan`` builds its configuration, so the
    model's family checks the options and a local model gets the run's seed."""
    return build_scan_config(
        {},
        {"model": model, "probes": ",".join(DEMO_PROBES), "sample": DEMO_SAMPLE},
        {"max_tokens": DEMO_MAX_TOKENS},
    )


def demo(
    store: Path = typer.Option(common.DEFAULT_STORE, "--store", help="SQLite store file.", envvar="REDLINE_STORE"),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON on stdout."),
    model: str = typer.Option(DEFAULT_GENERATOR, "--model", "-m", hidden=True, help="The model under test (tests)."),
) -> None:
    """Scan the embedded model with a few probes of five families in seconds, then show the report
    command to try next."""
    config = demo_config(model)
    if not as_json:
        families = ", ".join(name.split(".")[0] for name in DEMO_PROBES)
        attempts = plural(DEMO_SAMPLE * len(DEMO_PROBES), "prompt")
        common.err_console.print(
            f"demo: {attempts} from {plural(len(DEMO_PROBES), 'probe')} ({families}) against {config.model}, "
            f"answers of at most {DEMO_MAX_TOKENS} tokens, stored in {store}",
            markup=False,
            highlight=False,
        )
    run_id = scan_run.run_scan(config, store, resume=None, retry_errors=False, quiet=as_json)
    common.print_summary(store, run_id, as_json=as_json, examples=0 if as_json else DEMO_EXAMPLES)


def register(app: typer.Typer) -> None:
    """Add the ``demo`` command to the ``redline`` app."""
    app.command("demo")(demo)
