"""``redline scan --plan``, ``--price-per-mtok``, ``--budget-usd`` and ``--max-requests``: the
scan's cost before it is spent, and the budget that stops it (see :mod:`redline.engine.budget`).

Exit status of a scan stopped by its budget: :data:`EXIT_BUDGET_STOPPED` (4), after the summary of
what was stored and one line saying how to continue.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table

from redline.cli.common import err_console, open_store, out_console
from redline.engine import ScanConfig
from redline.engine.budget import Budget, BudgetError, Estimate, Prices
from redline.engine.plan import ScanPlan, plan_scan
from redline.report.resume import resume_command
from redline.store import Store
from redline.textsafety import visible

__all__ = ["EXIT_BUDGET_STOPPED", "budget_from_options", "print_plan", "print_stopped", "stopped_line"]

#: Exit status of ``redline scan`` when ``--budget-usd`` or ``--max-requests`` stopped the run.
EXIT_BUDGET_STOPPED = 4


def budget_from_options(
    price_per_mtok: str | None, budget_usd: float | None, max_requests: int | None, *, plan: bool = False
) -> tuple[Prices | None, Budget | None]:
    """The prices and the budget the options give (``None`` for what is not given); a value
    that cannot be used, or prices that nothing uses, raise :class:`BudgetError` naming the option."""
    prices = Prices.parse(price_per_mtok) if price_per_mtok is not None else None
    if prices is not None and not plan and budget_usd is None:
        raise BudgetError("--price-per-mtok is used by --plan and --budget-usd; give one of them")
    if budget_usd is None and max_requests is None:
        return prices, None
    return prices, Budget(max_requests=max_requests, max_usd=budget_usd, prices=prices)


def _tokens(value: int) -> str:
    return f"{value:,}"


def _usd(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:,.4f}" if value < 100 else f"${value:,.2f}"


def print_plan(
    config: ScanConfig,
    *,
    prices: Prices | None,
    budget: Budget | None,
    as_json: bool,
    store_path: Path | None = None,
    resume: str | None = None,
    retry_errors: bool = False,
) -> ScanPlan:
    """Print the plan of ``config`` (of run ``resume`` in ``store_path``: only what is left),
    as a table or JSON; nothing is sent and no run is stored."""
    if resume is not None and store_path is not None:
        store: Store = open_store(store_path, must_exist=True)
        try:
            plan = plan_scan(
                config,
                prices,
                finished=lambda probe: store.finished_seqs(resume, probe, include_errors=not retry_errors),
            )
        finally:
            store.close()
    else:
        plan = plan_scan(config, prices)
    if as_json:
        data = plan.as_dict()
        if budget is not None:
            data["budget"] = {"max_usd": budget.max_usd, "max_requests": budget.max_requests}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return plan
    shape = plan.shape
    title = (
        f"plan: {visible(plan.model)}, {shape.generations} output(s) per attempt"
        f"{' in one request' if shape.supports_n and shape.generations > 1 else ''}, up to {shape.max_tokens} tokens each"
        f"{' (assumed: no --max-tokens)' if shape.assumed else ''}"
        f"{f' ({len(plan.raised)} probe(s) ask for more, counted so)' if plan.raised else ''}"
    )
    out_console.print(title, markup=False, highlight=False)
    table = Table()
    for column in ("probe", "attempts", "requests", "prompt tokens", "output tokens"):
        table.add_column(column, justify="left" if column == "probe" else "right", no_wrap=column == "probe")
    if prices is not None:
        table.add_column("cost (USD)", justify="right")

    def row(name: str, attempts: int, estimate: Estimate, bounded: bool) -> list[str]:
        mark = "" if bounded else " *"
        cells = [
            name,
            str(attempts),
            _tokens(estimate.requests) + mark,
            _tokens(estimate.prompt_tokens) + mark,
            _tokens(estimate.output_tokens) + mark,
        ]
        if prices is not None:
            cells.append(_usd(estimate.cost(prices)) + mark)
        return cells

    for probe in plan.probes:
        table.add_row(*row(visible(probe.probe), probe.attempts, probe.estimate, probe.bounded))
    table.add_section()
    table.add_row(*row("total", plan.attempts, plan.total, plan.bounded))
    out_console.print(table)
    notes = [
        "nothing was sent. Prompt tokens: characters / 4; output tokens: max_tokens for every output (an upper bound)",
    ]
    if prices is not None:
        notes.append(f"prices: ${prices.input:g} in, ${prices.output:g} out per million tokens")
    else:
        notes.append("add --price-per-mtok IN,OUT for the cost")
    if not plan.bounded:
        notes.append("* a strategy without --max-queries: its estimate is max_turns queries per output, not a bound")
    if budget is not None:
        total = plan.total
        cost = total.cost(prices)
        parts = []
        if budget.max_usd is not None and cost is not None:
            parts.append(f"{_usd(cost)} of --budget-usd {budget.max_usd:g}")
        if budget.max_requests is not None:
            parts.append(f"{total.requests} of --max-requests {budget.max_requests}")
        fits = (budget.max_usd is None or (cost or 0) <= budget.max_usd) and (
            budget.max_requests is None or total.requests <= budget.max_requests
        )
        notes.append(
            ("the budget covers the plan: " if fits else "the budget would stop the run before the end: ")
            + ", ".join(parts)
        )
    for note in notes:
        out_console.print(note, markup=False, highlight=False)
    return plan


def stopped_line(budget: Budget, run_id: str, store_path: Path, flags: Sequence[str] = ()) -> str:
    """The one line of a run the budget stopped, with how to continue it (``flags``: what confirms
    the run's settings, e.g. ``--trust-settings``)."""
    return (
        f"{budget.stopped}: finished attempts are stored; continue with "
        f"'{resume_command(run_id, store=store_path, confirm=flags)}' and a new --budget-usd / --max-requests"
    )


def print_stopped(budget: Budget, run_id: str, store_path: Path, flags: Sequence[str] = ()) -> None:
    err_console.print(stopped_line(budget, run_id, store_path, flags), markup=False, highlight=False)
