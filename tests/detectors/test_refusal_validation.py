"""The validation figures shipped with the refusal judges are what ``bench/bench_judges.py``
measures on the human-labelled completions in ../shared/judge-dev (skipped where that folder is
absent): a judge that changes without re-measuring fails here."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from redline.detectors import detectors

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_judges.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_judges_for_tests", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_shipped_validations_are_what_the_bench_measures() -> None:
    bench = _bench()
    if not bench.DEFAULT_DATA.is_dir():
        pytest.skip(f"no labelled data at {bench.DEFAULT_DATA}")
    rows, _, _ = asyncio.run(bench.run(bench.DEFAULT_DATA, 16))
    by_key = {(row.detector, row.dataset): row.result for row in rows}
    for name in ("refusal.Compliance", "refusal.Keywords"):
        measured = by_key[(name, "XSTest v2, 3 models, all prompts")] + by_key[(name, "GPTFuzz jailbreak responses")]
        shipped = detectors.load(name).validation
        assert shipped is not None
        assert (shipped.tp, shipped.fp, shipped.fn, shipped.tn, shipped.undetected) == (
            measured.tp,
            measured.fp,
            measured.fn,
            measured.tn,
            measured.undetected,
        ), name
    measured = by_key[("refusal.Refusal", "XSTest v2, 3 models, safe prompts, hit = refused")]
    shipped = detectors.load("refusal.Refusal").validation
    assert shipped is not None
    assert (shipped.tp, shipped.fp, shipped.fn, shipped.tn, shipped.undetected) == (
        measured.tp,
        measured.fp,
        measured.fn,
        measured.tn,
        measured.undetected,
    )


def test_the_judge_beats_the_phrase_list_on_its_shipped_figures() -> None:
    judge, keywords = detectors.load("refusal.Compliance").validation, detectors.load("refusal.Keywords").validation
    assert judge is not None and keywords is not None

    def accuracy(v):
        return (v.tp + v.tn) / (v.tp + v.fp + v.fn + v.tn)

    assert accuracy(judge) > accuracy(keywords) + 0.05
    assert judge.sensitivity is not None and keywords.sensitivity is not None
    assert judge.sensitivity > keywords.sensitivity
