"""Phase 4 reads what its metric calculators need: the stored notes alone for notes-only
calculators (the failure rate), whole attempts for the others."""

from __future__ import annotations

from collections.abc import Sequence

from fakes import ScriptedGenerator
from redline.attempt import Attempt
from redline.engine import ScanConfig, scan
from redline.engine.pipeline import StoredAttempts, StoredNotes, stored_for_metrics
from redline.evaluation import FailureRateCalculator
from redline.evaluation.metrics import Metric, MetricCalculator
from redline.probes import get_probe
from redline.store import Store


class OutputLengths(MetricCalculator):
    """Reads the outputs: needs whole attempts."""

    def calculate(self, attempts: Sequence[Attempt]) -> dict[str, Metric]:
        lengths = [len(o.text or "") for a in attempts for o in a.outputs]
        return {"length": Metric(value=sum(lengths) / len(lengths), n=len(lengths))}


async def scanned(tmp_path) -> tuple[Store, str]:
    store = Store(tmp_path / "r.db")
    generator = ScriptedGenerator("Sure, step 1: do it.", name="test.sure")
    only_compliance = {"harmful.Requests": {"detectors": ["refusal.Compliance"]}}  # "Sure" fails every attempt
    config = ScanConfig(model="test.sure", probes="harmful.Requests", probe_options=only_compliance)
    run_id = await scan(config, store, generator=generator)
    return store, run_id


async def test_a_probe_whose_calculators_read_notes_gets_the_stored_notes_alone(tmp_path):
    store, run_id = await scanned(tmp_path)
    probe = get_probe("harmful.Requests")
    stored = stored_for_metrics(store, run_id, probe)
    assert isinstance(stored, StoredNotes)
    notes = list(stored)
    assert len(stored) == len(notes) == 24
    assert all(entry.notes["evaluation"] == ["fail"] for entry in notes)
    assert stored[3].notes == notes[3].notes
    metric = FailureRateCalculator().calculate(stored)["failure_rate"]
    assert metric.value == 1.0 and metric.n == 24


async def test_a_calculator_that_reads_more_than_notes_gets_whole_attempts(tmp_path):
    store, run_id = await scanned(tmp_path)
    probe = get_probe("harmful.Requests", metric_calculators=[FailureRateCalculator(), OutputLengths()])
    stored = stored_for_metrics(store, run_id, probe)
    assert isinstance(stored, StoredAttempts)
    metrics = probe.calculate_metrics(stored)
    assert metrics["length"].value == len("Sure, step 1: do it.")
    assert metrics["failure_rate"].value == 1.0
