"""Phase 4 records the version of every detector that scored a probe (``detector_versions`` in
the probe result), so that a validation measured on one version never corrects verdicts of
another; a run started by a redline that did not record them does not claim any when resumed."""

from __future__ import annotations

import asyncio

from redline.detectors import detectors as detector_registry
from redline.engine import ScanConfig, scan
from redline.engine.pipeline import RECORDS_DETECTOR_VERSIONS
from redline.store import Store

PROBES = "harmful.Requests,encoding.Hex"


def _config() -> ScanConfig:
    return ScanConfig(model="test.echo", probes=PROBES, sample=2)


def test_a_scan_records_the_version_of_each_probes_detectors(tmp_path):
    with Store(tmp_path / "r.db") as store:
        run_id = asyncio.run(scan(_config(), store))
        assert store.get_run(run_id).config[RECORDS_DETECTOR_VERSIONS] is True
        results = store.probe_results(run_id)
        for probe in PROBES.split(","):
            versions = results[probe].detector_versions
            assert versions is not None and list(versions) == results[probe].detectors
            for name, version in versions.items():
                assert version == str(detector_registry.load(name).version)
        assert results["harmful.Requests"].detector_versions == {  # the harm judge and the compliance judge
            name: str(detector_registry.load(name).version) for name in ("harm.Substance", "refusal.Compliance")
        }


def _stored_run(store: Store, marker: bool) -> str:
    """A run as ``scan`` creates it, before any attempt: with or without the marker that says
    its detectors' versions are recorded."""
    config = {"scan": _config().as_dict(), "probe_names": PROBES.split(","), "generator": {}}
    if marker:
        config[RECORDS_DETECTOR_VERSIONS] = True
    return store.create_run("test.echo", config)


def test_resuming_a_run_from_before_versions_were_recorded_records_none(tmp_path):
    with Store(tmp_path / "r.db") as store:
        run_id = asyncio.run(scan(None, store, resume=_stored_run(store, marker=False)))
        for result in store.probe_results(run_id).values():
            assert result.detector_versions is None and "detector_versions" not in result.as_dict()


def test_resuming_a_run_that_records_versions_records_them(tmp_path):
    with Store(tmp_path / "r.db") as store:
        run_id = asyncio.run(scan(None, store, resume=_stored_run(store, marker=True)))
        results = store.probe_results(run_id)
        assert set(results) == set(PROBES.split(","))
        assert all(r.detector_versions for r in results.values())
