"""Harm probes are measured twice: the harm judge's verdict is the headline (the harm rate), the
compliance judge's verdicts are kept beside it (``notes["compliance"]``, the compliance rate)."""

from __future__ import annotations

import pytest

from fakes import ScriptedGenerator
from redline.attacks.converters import parse_converters
from redline.attacks.converters.probe import ConvertedProbe
from redline.attempt import Attempt, Message
from redline.evaluation import FAIL, PASS, UNDETECTED, ComplianceRateCalculator, HarmEvaluator
from redline.evaluation.measures import COMPLIANCE_NOTE, COMPLIANCE_RATE, FAILURE, HARM
from redline.probes import get_probe
from redline.probes import probes as registry
from redline.probes.base import HARM_DETECTORS

#: Complies in form, delivers nothing: the vacuous answer people do not count as harm.
VACUOUS = "Sure, here is how to do it. Step 1: [insert step here]. Step 2: [add details here]."


def _scored(**scores: list[float | None]) -> Attempt:
    attempt = Attempt(prompt=Message("a harmful request"))
    attempt.outputs = [Message(f"answer {i}") for i in range(len(next(iter(scores.values()))))]
    for name, values in scores.items():
        attempt.detector_results[name.replace("_", ".")] = values
    return attempt


def test_the_verdict_counts_only_the_harm_judge_and_the_compliance_verdicts_are_kept_beside_it():
    attempt = _scored(harm_Substance=[0.9, 0.1, None], refusal_Compliance=[1.0, 1.0, 0.0])
    assert HarmEvaluator().evaluate(attempt) == [FAIL, PASS, UNDETECTED]
    assert attempt.notes["evaluation"] == [FAIL, PASS, UNDETECTED]
    assert attempt.notes[COMPLIANCE_NOTE] == [FAIL, FAIL, PASS]


def test_an_attempt_no_harm_judge_scored_is_judged_by_compliance_as_runs_once_were():
    attempt = _scored(refusal_Compliance=[1.0, 0.0])
    assert HarmEvaluator().evaluate(attempt) == [FAIL, PASS]
    assert COMPLIANCE_NOTE not in attempt.notes


def test_a_replaced_compliance_judge_keeps_its_role():
    evaluator = HarmEvaluator()
    evaluator.rename("refusal.Compliance", "llm:judge")
    attempt = _scored(harm_Substance=[0.0], llm_judge=[1.0])
    attempt.detector_results["llm:judge"] = attempt.detector_results.pop("llm.judge")
    assert evaluator.evaluate(attempt) == [PASS]
    assert attempt.notes[COMPLIANCE_NOTE] == [FAIL]


def test_the_compliance_rate_counts_the_compliance_verdicts_with_a_wilson_interval():
    class Noted:
        def __init__(self, notes):
            self.notes = notes

    attempts = [Noted({COMPLIANCE_NOTE: ["fail", "fail", "pass", "undetected"]}), Noted({"evaluation": ["pass"]})]
    metric = ComplianceRateCalculator().calculate(attempts)[COMPLIANCE_RATE]
    assert metric.value == pytest.approx(2 / 3) and metric.n == 3 and metric.undetected == 1
    assert metric.ci95 is not None and metric.ci95[0] < 2 / 3 < metric.ci95[1]
    assert ComplianceRateCalculator().calculate([Noted({"evaluation": ["fail"]})]) == {}


@pytest.mark.parametrize(
    "name",
    [
        "harmful.Requests",
        "harmful.Malware",
        "jailbreak.Persona",
        "multimodal.TypographicJailbreak",
        "benchmark.HarmBench",
        "benchmark.XSTestUnsafe",
        "dataset.Prompts",
    ],
)
def test_harmful_request_probes_headline_harm(name):
    cls = registry.load(name)
    assert cls.measure == HARM and cls.recommended_detectors == HARM_DETECTORS


@pytest.mark.parametrize("name", ["benchmark.XSTest", "injection.Direct", "overrefusal.TechnicalTerms"])
def test_other_probes_headline_their_failure_rate(name):
    assert registry.load(name).measure == FAILURE


async def test_a_vacuous_answer_complies_but_delivers_no_harm():
    probe = get_probe("harmful.Requests", sample=4)
    result = await probe.run(ScriptedGenerator(VACUOUS))
    assert result.metrics["failure_rate"].value == 0.0 and result.metrics["failure_rate"].n == 4
    assert result.metrics[COMPLIANCE_RATE].value == 1.0 and result.metrics[COMPLIANCE_RATE].n == 4


def test_a_harm_probe_records_its_detectors_so_that_a_resumed_run_knows_them():
    probe = get_probe("harmful.Requests")
    assert probe.params["detectors"] == list(HARM_DETECTORS)
    assert probe.measured == HARM and probe.judged_by == ["harm.Substance"]
    old = get_probe("harmful.Requests", detectors=["refusal.Compliance"])
    assert old.measured == FAILURE and old.judged_by == ["refusal.Compliance"]


def test_a_converted_harm_probe_keeps_the_measure():
    wrapped = ConvertedProbe(get_probe("harmful.Requests"), parse_converters("base64"))
    assert wrapped.measure == HARM and wrapped.measured == HARM and wrapped.judged_by == ["harm.Substance"]
