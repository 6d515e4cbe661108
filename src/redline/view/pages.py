"""What each page of the view shows, as plain data for its template, read from the store through
the report stage: the run summary (:func:`~redline.report.summary.build_summary`), the comparison
(:func:`~redline.report.compare.compare_runs`), labels and the attempts (:mod:`.attempts`).
Nothing here is recomputed: the rates, intervals, corrected rates, marks and significance are the
ones ``redline show``, ``redline report`` and ``redline compare`` print."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from redline.attachments import beside_store, stored_image
from redline.engine.trust import resume_flags
from redline.images import thumbnail_uri
from redline.report.compare import compare_runs
from redline.report.outcome import cached_note, errored_note
from redline.report.resume import resume_command
from redline.report.rows import family_of
from redline.report.summary import PooledRate, ProbeSummary, build_summary
from redline.store import RUN_RUNNING, DamagedRun, RunListing, RunNotFound, RunRecord, Store
from redline.view.attempts import (
    OUTCOMES,
    AttemptQuery,
    attempt_url,
    attempts_url,
    find_attempt,
    find_attempts,
    output_views,
)
from redline.view.errors import NotFound
from redline.view.index import IndexCache

__all__ = [
    "Family",
    "attempt_context",
    "attempts_context",
    "compare_context",
    "find_run",
    "run_context",
    "run_probes",
    "run_state",
    "runs_context",
]


def run_url(run_id: str) -> str:
    return f"/runs/{quote(run_id, safe='')}"


def find_run(store: Store, run_id: str) -> RunRecord:
    """The run ``run_id``; raises :class:`NotFound` when the store has none."""
    try:
        return store.get_run(run_id)
    except RunNotFound:
        raise NotFound(f"no run {run_id!r} in this store") from None


def runs_context(store: Store) -> dict[str, Any]:
    """The runs list: every run, newest first, with its totals and shown status; ``listed`` has
    a damaged run row in its place (marked), ``runs`` (the runs to compare) leaves it out."""
    listed = store.list_runs()
    runs = [r for r in listed if isinstance(r, RunListing)]
    return {
        "title": "runs",
        "listed": listed,
        "runs": runs,
        "damaged": len(listed) - len(runs),
        "is_damaged": lambda r: isinstance(r, DamagedRun),
        "run_url": run_url,
    }


def run_state(store: Store, run: RunRecord) -> dict[str, Any]:
    """``{"run_id", "status", "finished", "total"}`` of ``run`` (the JSON the page polls):
    ``finished`` counts stored attempts; ``total`` is that count once the run is not running and
    ``None`` while it runs (the store does not record how many are planned)."""
    finished = store.count_attempts(run.run_id)
    return {
        "run_id": run.run_id,
        "status": run.status,
        "finished": finished,
        "total": None if run.status == RUN_RUNNING else finished,
    }


@dataclass(frozen=True)
class Family:
    """The probes of one family in scan order, with their pooled failure rate."""

    name: str
    probes: tuple[ProbeSummary, ...]

    @property
    def pooled(self) -> PooledRate:
        return PooledRate.of(self.probes)


def _families(probes: tuple[ProbeSummary, ...]) -> list[Family]:
    groups: dict[str, list[ProbeSummary]] = {}
    for p in probes:
        groups.setdefault(family_of(p.probe), []).append(p)
    return [Family(name, tuple(members)) for name, members in groups.items()]


def run_context(store: Store, run_id: str) -> dict[str, Any]:
    """The run page: the run, its summary grouped by family, its worst probe, the stored attempt
    count, and what is missing (errored attempts, with the command that retries them: the store
    named unless it is the default one, and the flags that confirm the run's stored settings) or
    came from the cache."""
    run = find_run(store, run_id)
    summary = build_summary(store, run_id)
    state = run_state(store, run)
    return {
        "title": f"{run.model} · {run_id}",
        "run": run,
        "summary": summary,
        "worst": summary.worst(),
        "errored_note": errored_note(summary.errored, summary.attempts),
        "retry_command": (
            resume_command(run_id, store=store.path, retry_errors=True, confirm=resume_flags(store, run_id))
            if summary.errored
            else None
        ),
        "cached_note": cached_note(summary.cached, summary.answers),
        "families": _families(summary.probes),
        "state": state,
        "api_url": f"/api/runs/{quote(run_id, safe='')}",
        "attempts_url": lambda **params: attempts_url(run_id, **params),
        "reviews": len(store.reviews(run_id)),
    }


def run_probes(store: Store, run: RunRecord) -> list[str]:
    """The probes of a run: those selected, in scan order, then any other with stored attempts."""
    names = run.probe_names
    return names + [name for name in store.attempt_counts(run.run_id) if name not in names]


def attempts_context(
    store: Store, run_id: str, params: dict[str, str], cache: IndexCache | None = None
) -> dict[str, Any]:
    """The attempts page of ``run_id`` for the query string ``params`` (read through ``cache``
    when given)."""
    run = find_run(store, run_id)
    query = AttemptQuery.parse(params)
    probes = run_probes(store, run)
    page = find_attempts(store, run, query, probes, cache)
    return {
        "title": f"attempts · {run_id}",
        "run": run,
        "query": query,
        "probes": probes,
        "outcomes": OUTCOMES,
        "page": page,
        "prev_url": query.url(run_id, page.page - 1) if page.has_prev else None,
        "next_url": query.url(run_id, page.page + 1) if page.has_next else None,
        "attempt_url": lambda probe, seq: attempt_url(run_id, probe, seq),
        "run_url": run_url(run_id),
        "action": attempts_url(run_id),
    }


def attempt_context(store: Store, run_id: str, probe: str, seq: int, token: str) -> dict[str, Any]:
    """The page of attempt ``seq`` of ``probe``: its prompt turns, every output with its scores,
    verdict and label, and the review forms (carrying ``token``)."""
    run = find_run(store, run_id)
    attempt = find_attempt(store, run_id, probe, seq)
    prompt = attempt.prompt
    error = attempt.notes.get("error")
    return {
        "title": f"{probe} #{seq} · {run_id}",
        "run": run,
        "probe": probe,
        "attempt": attempt,
        "prompt_turns": [(t.role, t.content.text or "") for t in (prompt.turns if prompt is not None else [])],
        "prompt_images": [
            thumbnail_uri(t.content, stored_image(t.content, beside_store(store.path)))
            for t in (prompt.turns if prompt is not None else [])
        ],
        "outputs": output_views(attempt, run_id, store.reviews(run_id, probe)),
        "error": str(error) if error else None,
        "token": token,
        "review_action": f"/runs/{quote(run_id, safe='')}/reviews",
        "run_url": run_url(run_id),
        "probe_url": attempts_url(run_id, probe=probe),
    }


def compare_context(store: Store, a: str, b: str) -> dict[str, Any]:
    """The comparison of runs ``a`` and ``b`` (B minus A), as ``redline compare`` makes it."""
    for run_id in (a, b):
        find_run(store, run_id)
    comparison = compare_runs(store, a, store, b)
    return {
        "title": f"compare {a} · {b}",
        "cmp": comparison,
        "runs": [r for r in store.list_runs() if isinstance(r, RunListing)],
        "a": a,
        "b": b,
        "run_url": run_url,
        "probe_url": lambda run_id, probe: attempts_url(run_id, probe=probe),
    }
