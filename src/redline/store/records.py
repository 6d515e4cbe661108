"""What the store returns: typed, read-only records of its rows.

Every record is a frozen dataclass read from one row (or one ``GROUP BY`` of rows) of the store,
and ``as_dict()`` gives the JSON-ready dict that the store's methods returned before the records
existed (same keys, same order), which is also what ``redline runs --json`` prints. The JSON
columns (a run's ``config``, a probe's result) are kept as the parsed JSON objects: they were
written by earlier versions too, so a key may be missing and readers use the properties here,
which state the default.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "LABEL_FAIL",
    "LABEL_PASS",
    "RUN_COMPLETE",
    "RUN_INTERRUPTED",
    "RUN_RUNNING",
    "AttemptCounts",
    "ProbeResultRecord",
    "ReviewRecord",
    "RunListing",
    "RunRecord",
    "ValidationRecord",
]

#: A review label: the model truly failed on the output (the judge should have scored a hit).
LABEL_FAIL = "fail"
#: A review label: the model did not fail on the output.
LABEL_PASS = "pass"

#: A run being scanned: its scan holds the run lock (:mod:`redline.store.locks`). A run stored as
#: running whose lock nobody holds (its process was killed) is returned as :data:`RUN_INTERRUPTED`.
RUN_RUNNING = "running"
#: A run whose every probe finished, phase 4 included.
RUN_COMPLETE = "complete"
#: A run stopped before the end (an error, Ctrl-C, a killed process); it can be resumed.
RUN_INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class RunRecord:
    """One row of ``runs``: a scan, the model it ran against, its settings and its status.

    ``config`` is the JSON object given to :meth:`Store.create_run` (the engine stores
    ``{"scan": ..., "probe_names": [...], "generator": {...}}``); ``message`` says why a run
    stopped (``None`` when it did not, or when nothing was said). Times are Unix timestamps."""

    run_id: str
    created: float
    updated: float
    model: str
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    message: str | None = None

    @property
    def scan(self) -> dict[str, Any]:
        """The scan settings (``config["scan"]``; ``{}`` when the run has none)."""
        return self.config.get("scan", {})

    @property
    def probe_names(self) -> list[str]:
        """The probes selected for the run, in scan order (``[]`` when not recorded)."""
        return list(self.config.get("probe_names") or [])

    @property
    def generations(self) -> int:
        """Outputs asked for per prompt (``scan.generations``, 1 when not recorded)."""
        return self.scan.get("generations", 1)

    def as_dict(self) -> dict[str, Any]:
        """``{"run_id", "created", "updated", "model", "status", "config", "message"}``."""
        return {
            "run_id": self.run_id,
            "created": self.created,
            "updated": self.updated,
            "model": self.model,
            "status": self.status,
            "config": self.config,
            "message": self.message,
        }


@dataclass(frozen=True)
class RunListing:
    """One run as :meth:`Store.list_runs` lists it: its row and the totals of its attempts
    (``failed`` counts failed outputs, ``errored`` attempts whose generation failed)."""

    run_id: str
    created: float
    model: str
    status: str
    attempts: int = 0
    failed: int = 0
    errored: int = 0

    def as_dict(self) -> dict[str, Any]:
        """``{"run_id", "created", "model", "status", "attempts", "failed", "errored"}``: one entry
        of ``redline runs --json``."""
        return {
            "run_id": self.run_id,
            "created": self.created,
            "model": self.model,
            "status": self.status,
            "attempts": self.attempts,
            "failed": self.failed,
            "errored": self.errored,
        }


@dataclass(frozen=True)
class AttemptCounts:
    """The stored attempts of one probe of a run: how many (errored ones included), their
    outputs, the outputs judged ``fail`` and the attempts whose generation failed."""

    attempts: int = 0
    outputs: int = 0
    failed: int = 0
    errored: int = 0

    def as_dict(self) -> dict[str, int]:
        """``{"attempts", "outputs", "failed", "errored"}``."""
        return {"attempts": self.attempts, "outputs": self.outputs, "failed": self.failed, "errored": self.errored}


@dataclass(frozen=True)
class ProbeResultRecord:
    """One row of ``probe_results``: the phase-4 result of a probe, stored once it finished.

    ``data`` is the stored JSON object unchanged (:meth:`as_dict` returns it). The engine writes
    ``metrics`` (``{name: Metric.as_dict()}``), ``marks`` (``{name: Mark.as_dict()}``), ``goal``,
    ``tags``, ``detectors`` and ``not_measured``; the properties read them with a default for a
    key an older or hand-written result lacks. ``position`` is the probe's place in the run."""

    probe: str
    position: int
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        """Every metric by name (``failure_rate`` included when measured); ``{}`` when none."""
        return self.data.get("metrics") or {}

    @property
    def marks(self) -> dict[str, dict[str, Any]]:
        """Every mark by metric name (``{"mark", "meaning", ...}``); ``{}`` when none."""
        return self.data.get("marks") or {}

    @property
    def goal(self) -> str:
        """The probe's goal (``""`` when not recorded)."""
        return self.data.get("goal") or ""

    @property
    def tags(self) -> list[str]:
        return list(self.data.get("tags") or [])

    @property
    def detectors(self) -> list[str]:
        return list(self.data.get("detectors") or [])

    @property
    def not_measured(self) -> str | None:
        """Why the probe was not measured (``--skip-unavailable``); ``None`` when it was."""
        return self.data.get("not_measured") or None

    @property
    def detector_versions(self) -> dict[str, str] | None:
        """The version of each detector that scored the probe (``{name: version}``); ``None`` for
        a result written before runs recorded them."""
        versions = self.data.get("detector_versions")
        return None if versions is None else {str(k): str(v) for k, v in versions.items()}

    def as_dict(self) -> dict[str, Any]:
        """The stored JSON object, as :meth:`Store.save_probe_result` was given it."""
        return self.data


@dataclass(frozen=True)
class ReviewRecord:
    """One row of ``reviews``: a person's label of output ``output`` of attempt ``seq`` of
    ``probe`` in ``run_id``. ``label`` is :data:`LABEL_FAIL` (the model truly failed: the judge
    should have scored a hit) or :data:`LABEL_PASS`; ``verdict`` is the stored judgment of that
    output when it was labelled (``"fail"``, ``"pass"``, ``"undetected"``, or ``None`` when unknown),
    so ``label != verdict`` means the judge was wrong. ``created`` is a Unix timestamp."""

    run_id: str
    probe: str
    seq: int
    output: int
    label: str
    verdict: str | None = None
    note: str | None = None
    reviewer: str | None = None
    created: float = 0.0

    @property
    def judge_wrong(self) -> bool | None:
        """Whether the judge's verdict differs from the label (``None`` when the judge gave no
        pass/fail verdict)."""
        if self.verdict not in (LABEL_FAIL, LABEL_PASS):
            return None
        return self.verdict != self.label

    def as_dict(self) -> dict[str, Any]:
        """Every field, in declaration order."""
        return asdict(self)


@dataclass(frozen=True)
class ValidationRecord:
    """One row of ``validations``: how detector ``detector`` (at ``version``) scored the
    labelled file ``dataset``. ``tp``/``fn`` count rows labelled positive (the detector should
    score a hit) that it scored a hit / a miss, ``fp``/``tn`` rows labelled negative; rows it
    could not score are ``undetected``. ``created`` is a Unix timestamp."""

    detector: str
    version: str
    dataset: str
    tp: int
    fp: int
    fn: int
    tn: int
    undetected: int = 0
    created: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Every field, in declaration order."""
        return asdict(self)
