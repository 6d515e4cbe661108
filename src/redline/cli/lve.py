"""``redline lve run|record|verify``: the LVE repository format from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from redline.cli.common import UserError, err_console, out_console

app = typer.Typer(help="Run, record and verify LVEs (language model vulnerabilities and exposures).", no_args_is_help=True)


def _parse_params(pairs: list[str] | None) -> dict[str, str]:
    params = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UserError(f"bad parameter {pair!r}: use -p name=value")
        params[name] = value
    return params


def _generator(model: str, temperature: Optional[float], max_tokens: Optional[int], base_url: Optional[str]):
    from redline.generators import get_generator

    return get_generator(model, temperature=temperature, max_tokens=max_tokens, base_url=base_url)


@app.command()
def verify(
    path: Path = typer.Argument(..., help="An LVE folder, a test.json or a whole repository."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    trust_code: bool = typer.Option(False, "--trust-code", help="Run custom checker.py files found in LVEs."),
) -> None:
    """Re-check every recorded instance and report agreement with the recorded verdicts."""
    from rich.table import Table

    from redline.lve.verify import verify as run_verify

    if not path.exists():
        raise UserError(f"{path}: no such file or folder")
    report = run_verify(path, trust_code=trust_code)
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        out_console.print(
            f"{report.lves} LVEs, {report.total} instances: {report.agree} agree, {len(report.disagree)} disagree, "
            f"{len(report.skipped)} skipped, {len(report.errors)} errors"
        )
        if report.disagree:
            table = Table(title="disagreements")
            for col in ("file:line", "checker", "recorded", "now"):
                table.add_column(col)
            for d in report.disagree:
                table.add_row(f"{d['file']}:{d['line']}", d["checker"], str(d["expected"]), str(d["got"]))
            out_console.print(table)
        for s in report.skipped:
            out_console.print(f"skipped {s['file']}:{s['line']}: {s['reason']}", markup=False)
        for e in report.errors:
            err_console.print(f"error: {e['reason']}", markup=False)
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def run(
    path: Path = typer.Argument(..., help="The LVE folder or test.json."),
    model: str = typer.Option(..., "--model", "-m", help="Generator spec, e.g. smollm2 or openai:gpt-4o-mini."),
    param: Optional[list[str]] = typer.Option(None, "-p", "--param", help="Prompt parameter name=value (repeatable)."),
    trust_code: bool = typer.Option(False, "--trust-code", help="Allow the LVE's custom checker.py to run."),
    temperature: Optional[float] = typer.Option(None, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict and response as JSON."),
) -> None:
    """Run one LVE against a model and print the verdict."""
    import asyncio

    from redline.lve.model import load_lve
    from redline.lve.runner import run_lve

    lve = load_lve(path)
    checker = lve.checker(trust_code=trust_code)
    params = _parse_params(param)

    async def go():
        gen = _generator(model, temperature, max_tokens, base_url)
        try:
            await gen.start()
            return await run_lve(lve, gen, params, checker)
        finally:
            await gen.aclose()

    result = asyncio.run(go())
    if as_json:
        sys.stdout.write(json.dumps({"lve": lve.name, "safe": result.safe, "response": result.response, "params": params}) + "\n")
    else:
        verdict = "[green]SAFE[/green]" if result.safe else "[red]UNSAFE[/red]"
        out_console.print(f"{lve.name}: {verdict} ({lve.checker_name})")
        out_console.print(json.dumps(result.response, ensure_ascii=False, indent=1) if not isinstance(result.response, str) else result.response, markup=False)


@app.command()
def record(
    path: Path = typer.Argument(..., help="The LVE folder or test.json."),
    model: str = typer.Option(..., "--model", "-m", help="Generator spec."),
    params_file: Path = typer.Option(..., "--params", help="JSON lines, one object of prompt parameters per line."),
    trust_code: bool = typer.Option(False, "--trust-code"),
    temperature: Optional[float] = typer.Option(None, "--temperature"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    base_url: Optional[str] = typer.Option(None, "--base-url"),
    author: str = typer.Option("", "--author", help="Author recorded with each instance."),
    file_name: str = typer.Option("redline.jsonl", "--instances-file", help="File under instances/ to append to."),
) -> None:
    """Run an LVE once per parameter line and append the (post-processed) instances."""
    import asyncio

    from redline.lve.model import load_lve
    from redline.lve.runner import record_instance, run_lve

    lve = load_lve(path)
    checker = lve.checker(trust_code=trust_code)
    if not params_file.is_file():
        raise UserError(f"{params_file}: no such file")
    rows = []
    for number, raw in enumerate(params_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise UserError(f"{params_file}:{number}: bad JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            raise UserError(f"{params_file}:{number}: each line must be a JSON object of parameters")
        rows.append(row)

    async def go():
        gen = _generator(model, temperature, max_tokens, base_url)
        results = []
        try:
            await gen.start()
            sampling = {k: v for k, v in {"temperature": temperature, "max_tokens": max_tokens}.items() if v is not None}
            for row in rows:
                result = await run_lve(lve, gen, {k: str(v) if not isinstance(v, str) else v for k, v in row.items()}, checker)
                results.append((result, record_instance(lve, result, gen.name, sampling, author, file_name, checker)))
        finally:
            await gen.aclose()
        return results

    results = asyncio.run(go())
    unsafe = sum(1 for r, _ in results if not r.safe)
    where = results[0][1] if results else lve.directory / "instances" / file_name
    out_console.print(f"recorded {len(results)} instances ({unsafe} unsafe) to {where}")
