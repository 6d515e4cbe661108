"""A garak-compatible ``report.jsonl`` for a redline run, so tools built for garak reports
(garak's own ``garak.analyze`` scripts, dashboards that import garak runs) can read our runs.

Format facts, from garak's documentation (docs/source/reporting.rst) and the readers in its
``garak/analyze`` package: a report is JSON lines, each with an ``entry_type``:

* ``"start_run setup"`` — the run configuration as flat ``section.key`` entries (readers use
  ``plugins.probe_spec``, ``plugins.target_type``/``plugins.target_name`` — older versions
  ``plugins.model_type``/``plugins.model_name`` — ``run.generations``, ``run.seed``);
* ``"init"`` — ``garak_version``, ``start_time`` (ISO 8601) and ``run`` (a run UUID);
* ``"attempt"`` — an attempt dict (seed 002, the same model as ours) written with ``status`` 1
  once it has outputs, and again with ``status`` 2 once every detector has scored it;
* ``"eval"`` — one per probe and detector: ``probe``, ``detector``, ``passed``, ``fails``,
  ``nones``, ``total_evaluated``, ``total_processed`` (older readers use ``total``), optionally
  ``confidence``/``confidence_lower``/``confidence_upper`` for the failure (attack success) rate;
* ``"completion"`` — ``end_time`` and ``run``.

Like garak, an output scoring at or above 0.5 on a detector is a fail for that detector. Errored
attempts are written with status 1 only: they were started but never completed. The init
entry's ``garak_version`` is ``0.0.0+redline.<version>``: a valid version string that no real
garak release has, so no reader mistakes the file for garak's own output.

Lines are written with :func:`redline.textsafety.dumps`: lossless, with control and format
characters and lone surrogates of model outputs as JSON ``\\uXXXX`` escapes (valid UTF-8, safe to
print).
"""

from __future__ import annotations

import datetime as _dt
import uuid as _uuid
from collections.abc import Iterator

from redline import __version__
from redline.evaluation import wilson_interval
from redline.store import Store
from redline.textsafety import dumps

__all__ = ["THRESHOLD", "export_garak", "garak_run_uuid"]

THRESHOLD = 0.5
"""A detector score at or above this is a fail (garak's default ``run.eval_threshold``)."""

_NAMESPACE = _uuid.UUID("5f0c4b7e-2d1a-4c59-9a43-7d6a1c3e8b21")


def garak_run_uuid(run_id: str) -> str:
    """A stable UUID for a redline run id (garak readers expect ``run`` to be a UUID)."""
    return str(_uuid.uuid5(_NAMESPACE, run_id))


def _iso(timestamp: float) -> str:
    return _dt.datetime.fromtimestamp(timestamp).isoformat()


def _line(entry: dict) -> str:
    return dumps(entry) + "\n"  # lossless; controls and lone surrogates as \uXXXX escapes


def export_garak(store: Store, run_id: str) -> Iterator[str]:
    """The run as garak ``report.jsonl`` lines (see the module doc). Raises ``RunNotFound``."""
    run = store.get_run(run_id)
    config = run.config
    scan = run.scan
    names = run.probe_names
    model = run.model
    family, _, model_name = model.partition(":")
    run_uuid = garak_run_uuid(run_id)
    start = _iso(run.created)
    yield _line(
        {
            "entry_type": "start_run setup",
            "_config.version": f"0.0.0+redline.{__version__}",
            "transient.run_id": run_uuid,
            "transient.starttime_iso": start,
            "run.seed": scan.get("seed"),
            "run.generations": run.generations,
            "run.eval_threshold": THRESHOLD,
            "plugins.probe_spec": ",".join(names),
            "plugins.detector_spec": "auto",
            "plugins.target_type": family,
            "plugins.target_name": model_name or None,
            "plugins.model_type": family,
            "plugins.model_name": model_name or None,
            "reporting.report_prefix": f"redline.{run_id}",
            "redline.run_id": run_id,
            "redline.model": model,
            "redline.status": run.status,
            "redline.generator": config.get("generator", {}),
        }
    )
    yield _line(
        {"entry_type": "init", "garak_version": f"0.0.0+redline.{__version__}", "start_time": start, "run": run_uuid}
    )

    counts: dict[tuple[str, str], list[int]] = {}
    order: list[str] = []
    for data in store.iter_attempt_dicts(run_id):
        probe = data.get("probe_classname") or ""
        if probe not in order:
            order.append(probe)
        started = dict(data, entry_type="attempt", status=1, detector_results={})
        started["notes"] = {k: v for k, v in (data.get("notes") or {}).items() if k != "evaluation"}
        yield _line(started)
        if (data.get("notes") or {}).get("error") or not data.get("outputs"):
            continue
        yield _line(dict(data, entry_type="attempt", status=2))
        for detector, scores in (data.get("detector_results") or {}).items():
            tally = counts.setdefault((probe, detector), [0, 0, 0])  # passed, fails, nones
            for score in scores:
                if score is None:
                    tally[2] += 1
                elif score >= THRESHOLD:
                    tally[1] += 1
                else:
                    tally[0] += 1

    for probe in order:
        for (p, detector), (passed, fails, nones) in sorted(counts.items()):
            if p != probe:
                continue
            evaluated = passed + fails
            entry = {
                "entry_type": "eval",
                "probe": probe,
                "detector": detector,
                "passed": passed,
                "fails": fails,
                "nones": nones,
                "total_evaluated": evaluated,
                "total_processed": evaluated + nones,
                "total": evaluated,
            }
            if evaluated:
                # per detector, from its scores: not a figure of the run summary, which is per
                # probe and counts the evaluator's judgments
                lo, hi = wilson_interval(fails, evaluated)
                entry.update(confidence_method="wilson", confidence=0.95, confidence_lower=lo, confidence_upper=hi)
            yield _line(entry)
    yield _line({"entry_type": "completion", "end_time": _iso(run.updated), "run": run_uuid})
