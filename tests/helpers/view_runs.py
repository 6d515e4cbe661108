"""Stores and clients for the tests of ``redline view``: a large run of known shape written
directly (thousands of attempts in one transaction), whose ensemble judges disagree on some
attempts, and a test client of the app."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.detectors import ENSEMBLE_PREFIX
from redline.evaluation.metrics import FailureRateCalculator
from redline.store import Store
from redline.view import create_app

__all__ = ["BASE", "JUDGE", "MEMBERS", "build_large_run", "client_for", "large_attempt"]

#: The address the test clients use: the Host header and the server port the app checks.
BASE = "http://127.0.0.1:8000"

#: The detector that judges the large run, and the two ensemble members whose scores it carries.
JUDGE = "refusal.Compliance"
MEMBERS = (f"{ENSEMBLE_PREFIX}refusal.Compliance", f"{ENSEMBLE_PREFIX}llm")


def large_attempt(probe: str, seq: int, generations: int = 2) -> Attempt:
    """One judged attempt of ``probe`` with ``generations`` outputs of a few hundred characters:
    every 7th attempt fails, every 11th has an undetected output, every 13th has ensemble members
    that disagree and every 17th contains the word ``needle``."""
    prompt = f"Request {seq} of {probe}: " + "please explain the procedure in detail. " * 6
    attempt = Attempt(prompt=prompt, probe_classname=probe, seq=seq, goal="get the model to comply")
    body = "I can't help with that, but here is some general and safe information. " * 6
    outputs = [f"Answer {seq}.{g}: {body}" + (" needle" if seq % 17 == 0 else "") for g in range(generations)]
    attempt.outputs = outputs
    verdicts = ["fail" if seq % 7 == 0 and g == 0 else "pass" for g in range(generations)]
    if seq % 11 == 0:
        verdicts[-1] = "undetected"
    attempt.detector_results[JUDGE] = [1.0 if v == "fail" else (None if v == "undetected" else 0.0) for v in verdicts]
    agreeing = [1.0 if v == "fail" else 0.0 for v in verdicts]
    attempt.detector_results[MEMBERS[0]] = agreeing
    attempt.detector_results[MEMBERS[1]] = [1.0 - s for s in agreeing] if seq % 13 == 0 else agreeing
    attempt.notes["evaluation"] = verdicts
    attempt.status = ATTEMPT_COMPLETE
    return attempt


def build_large_run(db: Path, attempts: int = 10_000, probes: int = 4, complete: bool = True) -> tuple[Store, str]:
    """A store at ``db`` with one run of ``attempts`` attempts spread over ``probes`` probes
    (``family.ProbeK``), written in one transaction; with ``complete`` the probes get a stored
    result and the run is marked complete."""
    store = Store(db)
    names = [f"{'harmful' if k % 2 == 0 else 'injection'}.Probe{k}" for k in range(probes)]
    run_id = store.create_run("scripted:large", {"scan": {"generations": 2}, "probe_names": names})
    rows = [Store.attempt_row(run_id, large_attempt(names[i % probes], i // probes)) for i in range(attempts)]
    store.write_batch(rows)
    if complete:
        for position, name in enumerate(names):
            judged = list(store.iter_attempts(run_id, name, errored=False))
            metrics = FailureRateCalculator().calculate(judged)
            store.save_probe_result(
                run_id,
                name,
                position,
                {"metrics": {k: m.as_dict() for k, m in metrics.items()}, "marks": {}, "detectors": [JUDGE]},
            )
        store.set_run_status(run_id, "complete")
    store.release_run(run_id)
    return store, run_id


def client_for(path: Path, base_url: str = BASE) -> TestClient:
    """A Starlette test client of the view over the store at ``path`` (redirects not followed)."""
    return TestClient(create_app(path), base_url=base_url, follow_redirects=False)
