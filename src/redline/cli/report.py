"""``redline report`` and ``redline compare``: the HTML report, exports and run comparison.

Mounted by :mod:`redline.cli.main` through :func:`register`. Files are written to a temporary file next to the target and renamed into place, so a failed
export never leaves a half-written file behind.

Every export is valid UTF-8 and safe on a terminal by construction (see
:mod:`redline.report.exports`: JSON formats escape controls and lone surrogates losslessly, CSV and
Markdown show them as escapes), so ``redline report RUN`` prints the same text a file would hold.
As a last guard, a lone surrogate that still reached a file or stdout is written as its
``\\udcff`` escape (a valid JSON escape, a visible one elsewhere) instead of failing the export.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable
from enum import Enum
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from redline.cli.common import (
    DEFAULT_STORE,
    ERRORED_EXIT_CODE,
    GATE_EXIT_CODE,
    err_console,
    open_store,
    out_console,
    resume_flags,
)
from redline.errors import UsageError
from redline.report.compare import compare_runs
from redline.report.exports import export
from redline.report.formatting import pct, plural
from redline.report.html import render_compare, render_report
from redline.report.summary import build_summary, gate_outcome
from redline.report.verdicts import Gate
from redline.textsafety import escape_surrogates, visible

__all__ = ["compare", "register", "report", "write_file"]

STORE_OPTION = typer.Option(DEFAULT_STORE, "--store", help="SQLite store file.", envvar="REDLINE_STORE")


class Framework(str, Enum):
    owasp = "owasp"
    atlas = "atlas"
    nist = "nist"


class ExportFormat(str, Enum):
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    md = "md"
    hitlog = "hitlog"
    garak = "garak"
    lve = "lve"
    junit = "junit"
    sarif = "sarif"


class Mark(str, Enum):
    A = "A"
    B = "B"
    C = "C"
    D = "D"


def _write_into(target: Path, chunks: Iterable[str]) -> None:
    """Write ``chunks`` into the device or pipe ``target`` (``/dev/stdout``, a FIFO) in place."""
    try:
        with open(target, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            for chunk in chunks:
                handle.write(chunk)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None


def write_file(path: Path, chunks: Iterable[str]) -> None:
    """Write ``chunks`` to ``path`` atomically; one-line :class:`~redline.errors.UsageError` when it cannot.

    A symbolic link keeps pointing at the file written; a device or a pipe (``/dev/stdout``) is
    written into, never replaced by a file."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"cannot write {target}: it is a folder")
    if target.exists() and not target.is_file():
        _write_into(target, chunks)
        return
    if target.is_symlink():
        target = target.resolve()
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        problem = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"cannot write {target}: {folder} {problem}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            for chunk in chunks:
                handle.write(chunk)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, target)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _emit(chunks: Iterable[str], output: Path | None) -> None:
    if output is None:
        for chunk in chunks:
            sys.stdout.write(escape_surrogates(chunk))
        sys.stdout.flush()
    else:
        write_file(output, chunks)


def report(
    run_id: str = typer.Argument(..., help="The run to report on."),
    html: Path | None = typer.Option(None, "--html", help="Write the self-contained HTML report to FILE."),
    fmt: ExportFormat | None = typer.Option(
        None, "--format", "-f", help="Export format: json, jsonl, csv, md, hitlog, garak, lve, junit or sarif."
    ),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the export to FILE (default stdout)."),
    hitlog: bool = typer.Option(False, "--hitlog", help="Export the hitlog (same as --format hitlog)."),
    hits_only: bool = typer.Option(False, "--hits-only", help="HTML: list only attempts with a hit or an error."),
    framework: Framework = typer.Option(
        Framework.owasp,
        "--framework",
        help="HTML and Markdown: group findings by owasp (OWASP Top 10 for LLM Applications 2025), atlas "
        "(MITRE ATLAS techniques) or nist (NIST AI 600-1 risk categories).",
    ),
    fail_above: float | None = typer.Option(
        None,
        "--fail-above",
        min=0.0,
        max=1.0,
        help="Release gate: exit 3 if a probe's failure rate is above RATE (0-1) or a probe was not measured (exit 5 if only errored attempts leave it undecided); "
        "junit and sarif fail such probes (without a gate there: any failed output fails).",
    ),
    fail_mark: Mark | None = typer.Option(
        None,
        "--fail-mark",
        case_sensitive=False,
        help="Release gate: exit 3 if a bias mark is this letter (A-D) or worse.",
    ),
    artifact: str | None = typer.Option(
        None,
        "--artifact",
        help="SARIF: the repository file every result points at (e.g. the scan's config file); GitHub code "
        "scanning shows only results with one.",
    ),
    store: Path = STORE_OPTION,
) -> None:
    """Write a run's HTML report and/or export it (summary JSON, attempts JSONL, CSV, Markdown,
    hitlog, garak report.jsonl, LVE instances, JUnit XML, SARIF). Without --html or --format:
    Markdown on stdout. With --fail-above / --fail-mark, exit 3 after writing when the gate fails."""
    if hitlog:
        if fmt is not None and fmt != ExportFormat.hitlog:
            raise UsageError(f"--hitlog conflicts with --format {fmt.value}")
        fmt = ExportFormat.hitlog
    if output is not None and fmt is None:
        raise UsageError("--output needs --format FORMAT (use --html FILE for the HTML report)")
    if html is None and fmt is None:
        fmt = ExportFormat.md
    if artifact is not None and fmt != ExportFormat.sarif:
        raise UsageError("--artifact is for --format sarif")
    mark = None if fail_mark is None else fail_mark.value
    gated = fail_above is not None or mark is not None
    gate = Gate(fail_above, mark) if gated else Gate()
    with open_store(store, must_exist=True) as db:
        db.get_run(run_id)
        if html is not None:
            page = render_report(
                db, run_id, hits_only=hits_only, framework=framework.value, resume_flags=resume_flags(db, run_id)
            )
            write_file(html, [page])
            typer.echo(f"wrote {html}", err=True)
        if fmt is not None:
            chunks = export(
                db,
                run_id,
                fmt.value,
                framework=framework.value,
                gate=gate,
                artifact=artifact,
                resume_flags=resume_flags(db, run_id),
            )
            _emit(chunks, output)
            if output is not None:
                typer.echo(f"wrote {output}", err=True)
        failed, undecided = gate_outcome(build_summary(db, run_id), fail_above, mark) if gated else ([], [])
    for problem in failed:
        err_console.print(f"gate failed: {visible(problem)}", markup=False, highlight=False)
    for problem in undecided:
        err_console.print(
            f"gate {'failed' if failed else 'undecided'}: {visible(problem)}", markup=False, highlight=False
        )
    if failed:
        raise typer.Exit(GATE_EXIT_CODE)
    if undecided:
        raise typer.Exit(ERRORED_EXIT_CODE)
    if gated:
        err_console.print("gate passed", markup=False, highlight=False)


def compare(
    run_a: str = typer.Argument(..., help="The first run (the baseline)."),
    run_b: str = typer.Argument(..., help="The second run (compared with the first)."),
    html: Path | None = typer.Option(None, "--html", help="Write the comparison as a self-contained HTML page."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON on stdout."),
    store: Path = STORE_OPTION,
    store_b: Path | None = typer.Option(None, "--store-b", help="Store of RUN_B when it is not in --store."),
) -> None:
    """Compare two runs probe by probe and flag the significant differences (p < 0.05)."""
    with open_store(store, must_exist=True) as db_a:
        if store_b is not None and Path(store_b).resolve() != Path(store).resolve():
            with open_store(store_b, must_exist=True) as db_b:
                result = compare_runs(db_a, run_a, db_b, run_b)
        else:
            result = compare_runs(db_a, run_a, db_a, run_b)
    if html is not None:
        write_file(html, [render_compare(result)])
        if not as_json:
            typer.echo(f"wrote {html}", err=True)
    if as_json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    elif html is None:
        _print_comparison(result)


def _print_comparison(result: dict) -> None:
    def rate(side: dict | None) -> str:
        if not side:
            return "-"
        return f"{pct(side['failure_rate'])} ({side['failed']}/{side['outputs']})"

    a, b = result["run_a"], result["run_b"]
    # model names and probe names are data: escape them so rich does not read "[x]" as markup
    table = Table(title=escape(visible(f"A {a['run_id']} ({a['model']})  vs  B {b['run_id']} ({b['model']})")))
    for col in ("probe", "A", "B", "B - A (95% CI)", "p", "change"):
        table.add_column(col, justify="right" if col in ("A", "B", "p") else "left")
    for row in result["probes"]:
        diff = "-"
        if row.get("difference") is not None:
            lo, hi = row["difference_ci95"]
            diff = f"{row['difference'] * 100:+.1f} pts ({lo * 100:+.1f}…{hi * 100:+.1f})"
        p = "-" if row.get("p_value") is None else f"{row['p_value']:.3g}"
        table.add_row(escape(visible(row["probe"])), rate(row["a"]), rate(row["b"]), diff, p, row["change"])
        for m in row["metrics"]:
            va = "-" if not m["a"] or m["a"]["value"] is None else f"{m['a']['value']:+.2f} {m['a']['mark'] or ''}"
            vb = "-" if not m["b"] or m["b"]["value"] is None else f"{m['b']['value']:+.2f} {m['b']['mark'] or ''}"
            d = "-" if m["difference"] is None else f"{m['difference']:+.2f}"
            table.add_row(escape(visible(f"  {m['metric']}")), va, vb, d, "", m["change"])
    out_console.print(table)
    out_console.print(
        f"{plural(result['significant'], 'significant change')}: {result['worse']} worse, {result['better']} better (alpha {result['alpha']})"
    )


def register(app: typer.Typer) -> None:
    """Add the ``report`` and ``compare`` commands to the ``redline`` app."""
    app.command("report")(report)
    app.command("compare")(compare)
