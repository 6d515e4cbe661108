"""The index the attempts page filters: one small :class:`IndexEntry` per stored attempt, read
from the attempt's JSON in one pass over the store (:func:`read_entries`), holding only what the
filters and the list need: outcome, verdicts, the detectors that scored it, whether its ensemble
judges disagree, its text for the search, the start of its prompt.

:class:`IndexCache` keeps the entries of the runs read last that are not running, within a
memory budget: such a run's attempts no longer change (a resumed run is running again, and its
update time changes when it starts and when it ends), so the entries are keyed by the run's
status, update time and attempt count, and a run being scanned is read afresh on every page. Labels are not in the index: the page reads them on every request.

An attempt's *outcome* is one word: ``error`` when its generation failed, else ``fail`` when an
output was judged a hit, else ``pass`` when one was judged pass, else ``undetected``; a bias
probe's answers (``yes``, ``male``…) give its first answer. A row of the store that is not an
attempt as redline writes it is listed with the outcome ``damaged`` and what is wrong as its error.
"""

from __future__ import annotations

import itertools
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from redline.attempt import Attempt
from redline.detectors import ENSEMBLE_PREFIX
from redline.detectors.specs import disagreement
from redline.evaluation import FAIL, PASS, UNDETECTED
from redline.store import RUN_RUNNING, RunRecord, Store
from redline.store.rows import DamagedAttempt

__all__ = [
    "CACHE_BYTES",
    "DAMAGED",
    "ERROR",
    "IndexCache",
    "IndexEntry",
    "entry_size",
    "outcome_of",
    "read_entries",
]

ERROR = "error"
"""The outcome of an attempt whose generation failed."""

DAMAGED = "damaged"
"""The outcome of a stored row that is not an attempt as redline writes it."""

PREVIEW_CHARS = 140


def outcome_of(data: Mapping[str, Any]) -> str:
    """The outcome of a stored attempt (its :meth:`Attempt.as_dict` JSON); see the module doc."""
    notes = data.get("notes") or {}
    if notes.get("error"):
        return ERROR
    verdicts = [str(v) for v in notes.get("evaluation") or []]
    for word in (FAIL.value, PASS.value):
        if word in verdicts:
            return word
    others = [v for v in verdicts if v != UNDETECTED.value]
    return others[0] if others else UNDETECTED.value


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """What the filters and the list need of one stored attempt. ``text`` is every distinct text
    of its conversations (prompt turns and outputs), case-folded, one per line."""

    probe: str
    seq: int
    outcome: str
    verdicts: tuple[str, ...]
    detectors: frozenset[str]
    disagrees: bool
    text: str
    preview: str
    max_score: float | None
    error: str | None


class _Scores:
    """An attempt holding only detector results, reused for every entry, for
    :func:`~redline.detectors.specs.disagreement` (which reads nothing else)."""

    def __init__(self) -> None:
        self.attempt = Attempt()

    def disagree(self, results: dict[str, Any], outputs: int) -> bool:
        if sum(1 for key in results if key.startswith(ENSEMBLE_PREFIX)) < 2:
            return False
        self.attempt.detector_results = results
        return any(disagreement(self.attempt, i) for i in range(outputs))


def _text(data: Mapping[str, Any]) -> str:
    texts: dict[str, None] = {}
    for conversation in data.get("conversations") or ():
        for turn in conversation.get("turns") or ():
            text = (turn.get("content") or {}).get("text")
            if isinstance(text, str):
                texts[text] = None
    return "\n".join(texts).casefold()


def _preview(data: Mapping[str, Any]) -> str:
    prompt = data.get("prompt") or {}
    users = [t for t in prompt.get("turns") or () if t.get("role") == "user"]
    text = ((users[-1].get("content") or {}).get("text") or "") if users else ""
    flat = " ".join(text.split())
    return flat[:PREVIEW_CHARS] + ("…" if len(flat) > PREVIEW_CHARS else "")


def _max_score(results: Mapping[str, Any]) -> float | None:
    """The highest score of the attempt's detectors, ensemble members left out (as the HTML report)."""
    scores = [
        float(s)
        for name, values in results.items()
        if not name.startswith(ENSEMBLE_PREFIX)
        for s in values or ()
        if isinstance(s, (int, float))
    ]
    return max(scores) if scores else None


def read_entries(store: Store, run_id: str, probe: str | None = None) -> Iterator[IndexEntry]:
    """The entry of every stored attempt of ``run_id`` (of ``probe`` when given), in store order.
    Values that repeat from attempt to attempt (probe names, verdicts, detector sets) are shared
    between the entries, not held once per attempt."""
    scores = _Scores()
    shared: dict[Any, Any] = {}

    def same(value: Any) -> Any:
        return shared.setdefault(value, value)

    for data in store.iter_attempt_entries(run_id, probe):
        if isinstance(data, DamagedAttempt):
            yield _damaged(data)
            continue
        results = data.get("detector_results") or {}
        notes = data.get("notes") or {}
        error = notes.get("error")
        yield IndexEntry(
            probe=same(str(data.get("probe_classname") or "")),
            seq=int(data.get("seq", -1)),
            outcome=same(outcome_of(data)),
            verdicts=same(tuple(same(str(v)) for v in notes.get("evaluation") or ())),
            detectors=same(frozenset(same(name) for name in results)),
            disagrees=scores.disagree(results, len(data.get("outputs") or ())),
            text=_text(data),
            preview=_preview(data),
            max_score=_max_score(results),
            error=str(error) if error else None,
        )


def _damaged(row: DamagedAttempt) -> IndexEntry:
    """The entry of a damaged row: where it is and what is wrong."""
    problem = f"damaged row: {row.problem}"
    return IndexEntry(
        probe=row.probe,
        seq=row.seq,
        outcome=DAMAGED,
        verdicts=(),
        detectors=frozenset(),
        disagrees=False,
        text="",
        preview=problem,
        max_score=None,
        error=problem,
    )


ENTRY_OVERHEAD = 400
"""Bytes an :class:`IndexEntry` takes besides its ``text``, ``preview`` and ``error`` strings
(its slots, seq, score and flags; the shared values are not counted again), rounded up from
what ``tracemalloc`` measures (tests/view/test_index.py checks it)."""

CACHE_BYTES = 128 * 2**20
"""How much memory :class:`IndexCache` may hold: about 65,000 attempts of 1,300 characters of text each."""


def entry_size(entry: IndexEntry) -> int:
    """The bytes ``entry`` holds that no other entry shares (an estimate that errs high)."""
    size = ENTRY_OVERHEAD + sys.getsizeof(entry.text) + sys.getsizeof(entry.preview)
    return size + (sys.getsizeof(entry.error) if entry.error is not None else 0)


@dataclass
class _Cached:
    key: tuple[Any, ...]
    entries: list[IndexEntry] | None  # None: the run is larger than the cache (read each time)
    size: int


class IndexCache:
    """The entries of the runs read last that are not running (see the module doc), at most
    ``budget`` bytes of them (:func:`entry_size`): the run read least recently is dropped first,
    and a run larger than the whole budget is read afresh on every page, like a running run.
    Safe to share between the threads that answer requests."""

    def __init__(self, budget: int = CACHE_BYTES) -> None:
        self.budget = budget
        self._runs: OrderedDict[str, _Cached] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The bytes of entries held now."""
        with self._lock:
            return sum(c.size for c in self._runs.values())

    def entries(self, store: Store, run: RunRecord, probe: str | None = None) -> Iterable[IndexEntry]:
        """The entries of ``run`` (of ``probe`` when given; callers still check each entry's
        probe, as a cached list holds the whole run)."""
        if run.status == RUN_RUNNING:
            return read_entries(store, run.run_id, probe)
        key = (run.status, run.updated, store.count_attempts(run.run_id))
        with self._lock:
            found = self._runs.get(run.run_id)
            if found is not None and found.key == key:
                self._runs.move_to_end(run.run_id)
                if found.entries is None:
                    return read_entries(store, run.run_id, probe)
                return found.entries
        entries: list[IndexEntry] = []
        size = 0
        reading = read_entries(store, run.run_id)
        for entry in reading:
            entries.append(entry)
            size += entry_size(entry)
            if size > self.budget:
                self._keep(run.run_id, _Cached(key, None, 0))
                return itertools.chain(entries, reading)
        self._keep(run.run_id, _Cached(key, entries, size))
        return entries

    def _keep(self, run_id: str, cached: _Cached) -> None:
        with self._lock:
            self._runs[run_id] = cached
            self._runs.move_to_end(run_id)
            total = sum(c.size for c in self._runs.values())
            for old in list(self._runs):
                if total <= self.budget:
                    break
                total -= self._runs.pop(old).size
