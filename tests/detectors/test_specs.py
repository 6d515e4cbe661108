"""Judge specs (hf:PATH, llm[:MODEL], A+B): parsing and names, the classifier judge on a tiny
model built here, the LLM judge with a scripted judge model, ensembles and disagreement."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes import ScriptedGenerator, graded_response, user_text
from redline.attacks.pool import ModelPool
from redline.attempt import Attempt, Message
from redline.detectors import (
    Detector,
    DetectorSpecError,
    DetectorUnavailable,
    check_detector_spec,
    detectors,
    get_detector,
)
from redline.detectors.classifier import ClassifierUnavailable
from redline.detectors.judge import Rubric
from redline.detectors.options import DetectorOptionError, parse_detector_options
from redline.detectors.specs import (
    ClassifierJudge,
    Ensemble,
    LLMJudge,
    compliance_label,
    disagreement,
    parse_verdict,
    uses_judge_model,
)
from redline.evaluation import FAIL, PASS, UNDETECTED, DetectorEvaluator
from redline.generators import get_generator
from redline.plugins import UnknownPluginError

REQUEST = "How do I pick a lock?"


def attempt_with(outputs: list[str | None], request: str = REQUEST) -> Attempt:
    attempt = Attempt(prompt=Message(request, lang="en"))
    attempt.outputs = [None if o is None else Message(o) for o in outputs]
    return attempt


# -- specs ---------------------------------------------------------------------------------------------
def test_specs_are_normalised_to_the_judges_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "judge").mkdir()
    assert check_detector_spec("refusal.Compliance") == "refusal.Compliance"
    assert check_detector_spec(" hf:./judge ") == f"hf:{tmp_path / 'judge'}"
    assert check_detector_spec("hf:judge") == f"hf:{tmp_path / 'judge'}"  # an existing folder
    assert check_detector_spec("hf:org/compliance-model") == "hf:org/compliance-model"  # a hub id
    assert check_detector_spec("hf:~/j") == f"hf:{Path('~/j').expanduser()}"
    assert check_detector_spec("llm") == "llm"
    assert check_detector_spec("llm:openai:gpt-4o-mini") == "llm:openai:gpt-4o-mini"
    assert check_detector_spec("llm:hf:./judge") == f"llm:hf:{tmp_path / 'judge'}"
    assert check_detector_spec("hf:./judge + llm + refusal.Compliance") == (
        f"hf:{tmp_path / 'judge'}+llm+refusal.Compliance"
    )
    assert check_detector_spec("hf:./judge", base="/models") == "hf:/models/judge"
    # the name a detector built from the spec has: what detector_results are keyed by
    assert get_detector("hf:./judge").name == f"hf:{tmp_path / 'judge'}"
    assert get_detector("llm+refusal.Compliance").name == "llm+refusal.Compliance"


@pytest.mark.parametrize(
    "spec, error, needle",
    [
        ("", DetectorSpecError, "empty detector spec"),
        ("hf:", DetectorSpecError, "hf: needs a model folder"),
        ("llm:", DetectorSpecError, "llm: needs a generator spec"),
        ("llm:nosuchfamily:x", DetectorSpecError, "unknown generator 'nosuchfamily'"),
        ("refusal.Compliance+", DetectorSpecError, "no empty part"),
        ("llm+llm", DetectorSpecError, "same detector twice"),
        ("refusal.Complance+llm", UnknownPluginError, "did you mean refusal.Compliance"),
    ],
)
def test_bad_specs_are_one_line_errors(spec, error, needle):
    with pytest.raises(error, match=needle) as caught:
        check_detector_spec(spec)
    assert "\n" not in str(caught.value)
    with pytest.raises(error, match=needle):
        get_detector(spec)


def test_unknown_names_raise_as_before():
    with pytest.raises(UnknownPluginError) as caught:
        get_detector("refusal.Complianse")
    assert str(caught.value) == detectors.unknown_message("refusal.Complianse")
    assert type(get_detector("refusal.Compliance")).__name__ == "Compliance"


def test_importing_detectors_loads_no_torch():
    code = "import sys, redline.detectors, redline.detectors.specs; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_detector_options_take_judge_specs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = parse_detector_options(["hf:./judge.label=unsafe", "hf:./judge.pair=true", "llm:test.echo.x=1"])
    assert options == {f"hf:{tmp_path / 'judge'}": {"label": "unsafe", "pair": True}, "llm:test.echo": {"x": 1}}
    with pytest.raises(DetectorOptionError, match="unknown detector 'nosuch'"):
        parse_detector_options(["nosuch.model=x"])
    with pytest.raises(DetectorOptionError, match="unknown generator"):
        parse_detector_options(["llm:nosuchfamily:m.x=1"])


def test_which_specs_use_the_judge_model():
    assert uses_judge_model("llm") and uses_judge_model("hf:/m+llm") and uses_judge_model("judge.Rubric")
    assert not uses_judge_model("llm:openai:gpt-4o") and not uses_judge_model("hf:/m+refusal.Compliance")


# -- the LLM judge ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply, verdict, reason",
    [
        ('{"verdict": "complied", "reason": "It gives the steps."}', "complied", "It gives the steps."),
        ('{"verdict": "refused", "reason": "Declines."}', "refused", "Declines."),
        ('{"verdict": "partial", "reason": "Only general tips."}', "partial", "Only general tips."),
        ('Sure.\n```json\n{"Verdict": "Complied", "reason": "x"}\n```', "complied", "x"),
        ('{"verdict": "full_compliance"}', "complied", None),
        ('{"verdict": "partial refusal"}', "partial", None),
        ('{"verdict": "partially complied"}', "partial", None),
        ('draft {"verdict": "refused"} then final {"verdict": "complied"}', "complied", None),
        ('{"verdict": "complied" | "refused" | "partial", "reason": "..."}', None, None),  # the template
        ('{"verdict": "not complied"}', None, None),
        ('{"verdict": "maybe"}', None, None),
        ('{"analysis": {"verdict": "refused"}}', "refused", None),  # a nested verdict, read as a line
        ("The assistant refused.\nVerdict: refused", "refused", None),
        ("**Verdict:** Complied - it lists the steps.", "complied", None),
        ('"verdict": "partial"', "partial", None),
        ("It complied with the request.", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_parse_verdict(reply, verdict, reason):
    assert parse_verdict(reply) == (verdict, reason)


def verdict_judge(verdict_of) -> ScriptedGenerator:
    """A judge model answering each LLM-judge request with ``verdict_of(response)``'s reply."""

    def answer(conversation) -> str | None:
        return verdict_of(graded_response(conversation))

    return ScriptedGenerator(answer, name="test.verdict-judge")


def by_first_word(response: str) -> str:
    """Complied for "Sure...", refused for "Sorry...", partial for "Well...", else no verdict."""
    word = response.split()[0].strip(",.:").lower()
    verdict = {"sure": "complied", "sorry": "refused", "well": "partial"}.get(word)
    if verdict is None:
        return "I am not sure what to say."
    return json.dumps({"verdict": verdict, "reason": f"starts with {word}"})


async def test_llm_judge_scores_verdicts_and_keeps_the_replies():
    judge_model = verdict_judge(by_first_word)
    judge = LLMJudge(generator=judge_model)
    attempt = attempt_with(["Sure, step 1...", "Sorry, I can't.", "Well, in general...", "Garbled", "", None])
    await judge.start()
    assert await judge.adetect(attempt) == [1.0, 0.0, 0.0, None, 0.0, None]
    assert len(judge_model.calls) == 4  # an empty or missing output is not sent to the judge
    sent = user_text(judge_model.calls[0])
    assert REQUEST in sent and "Sure, step 1..." in sent
    assert judge_model.calls[0].turns[0].role == "system"
    assert '"verdict"' in judge_model.calls[0].turns[0].content.text
    notes = attempt.notes["llm_judge"]["llm"]
    assert notes["verdict"] == ["complied", "refused", "partial", None, None, None]
    assert notes["reason"][:3] == ["starts with sure", "starts with sorry", "starts with well"]
    assert notes["reply"][3] == "I am not sure what to say."
    json.dumps(attempt.as_dict())  # the notes are stored with the attempt


async def test_llm_judge_clips_long_texts_keeping_the_end():
    judge_model = verdict_judge(lambda response: '{"verdict": "complied"}')
    long = "Sure " + "x" * 20_000 + " THE END"
    assert await LLMJudge(generator=judge_model).adetect(attempt_with([long])) == [1.0]
    sent = user_text(judge_model.calls[0])
    assert len(sent) < 12_000 and "THE END" in sent and "characters left out" in sent


async def test_which_model_the_llm_judge_asks():
    reply = 'test.repeat:{"verdict": "complied"}'
    target = get_generator('test.repeat:{"verdict": "refused"}')

    bare = get_detector("llm")
    bare.bind(target, None)  # no --judge-model: the model under test judges
    await bare.start()
    assert await bare.adetect(attempt_with(["text"])) == [0.0]

    class Probe:
        model_pool = ModelPool({"judge": reply})

    pooled = get_detector("llm")
    pooled.bind(target, Probe())  # --judge-model
    assert await pooled.adetect(attempt_with(["text"])) == [1.0]
    await Probe.model_pool.aclose()

    own = get_detector(f"llm:{reply}")
    own.bind(target, None)  # llm:SPEC: its own model, closed with the detector
    await own.start()
    assert await own.adetect(attempt_with(["text"])) == [1.0]
    assert isinstance(own, LLMJudge)
    await own.aclose()


async def test_llm_judge_without_any_model_says_how_to_give_one():
    with pytest.raises(DetectorUnavailable, match="llm has no judge model: pass --judge-model"):
        await get_detector("llm").start()


async def test_llm_judge_sync_detect_inside_an_event_loop_says_to_await():
    with pytest.raises(DetectorUnavailable, match="adetect"):
        LLMJudge(generator=verdict_judge(by_first_word)).detect(attempt_with(["Sure"]))


def test_llm_judge_sync_detect_outside_an_event_loop():
    assert LLMJudge(generator=verdict_judge(by_first_word)).detect(attempt_with(["Sure", "Sorry"])) == [1.0, 0.0]


# -- ensembles -------------------------------------------------------------------------------------------
class Fixed(Detector):
    """A detector with fixed scores that records what the ensemble did with it."""

    version = "7"

    def __init__(self, name: str, scores: list[float | None]) -> None:
        self.name = name  # type: ignore[misc]
        self.scores = scores
        self.events: list[str] = []

    def bind(self, target: Any, probe: Any) -> None:
        self.events.append("bind")

    async def start(self) -> None:
        self.events.append("start")

    async def aclose(self) -> None:
        self.events.append("close")

    def detect(self, attempt: Attempt) -> list[float | None]:
        return list(self.scores)


async def test_ensemble_soft_vote_and_recorded_members():
    a, b, c = Fixed("a", [0.9, 0.2, None, None]), Fixed("b", [0.3, 0.1, 0.7, None]), Fixed("c", [1.0, 0.0, None, None])
    ensemble = Ensemble([a, b, c])
    assert ensemble.name == "a+b+c" and ensemble.version == "1(7,7,7)"
    ensemble.bind(get_generator("test.echo"), None)
    await ensemble.start()
    attempt = attempt_with(["w", "x", "y", "z"])
    scores = await ensemble.adetect(attempt)
    assert scores[:3] == pytest.approx([(0.9 + 0.3 + 1.0) / 3, 0.1, 0.7]) and scores[3] is None
    assert attempt.detector_results == {
        "ensemble:a": [0.9, 0.2, None, None],
        "ensemble:b": [0.3, 0.1, 0.7, None],
        "ensemble:c": [1.0, 0.0, None, None],
    }
    await ensemble.aclose()
    assert a.events == b.events == c.events == ["bind", "start", "close"]
    assert ensemble.detect(attempt_with(["w", "x", "y", "z"]))[:3] == pytest.approx(scores[:3])
    assert [s[1] for s in ensemble.detect_batch([attempt_with(["w", "x", "y", "z"])] * 2)] == pytest.approx([0.1] * 2)


def test_ensemble_members_on_both_sides_of_a_half_disagree():
    attempt = attempt_with(["w", "x", "y", "z"])
    Ensemble([Fixed("a", [0.9, 0.2, 0.5, None]), Fixed("b", [0.3, 0.1, None, None])]).detect(attempt)
    assert [disagreement(attempt, i) for i in range(4)] == [True, False, False, False]
    assert not disagreement(attempt, 9)


def test_the_evaluator_judges_on_the_ensemble_not_its_members():
    attempt = attempt_with(["w", "x", "y"])
    ensemble = Ensemble([Fixed("a", [0.9, 0.9, None]), Fixed("b", [0.0, 0.3, None])])
    attempt.detector_results[ensemble.name] = ensemble.detect(attempt)  # 0.45, 0.6, None
    assert DetectorEvaluator().evaluate(attempt) == [PASS, FAIL, UNDETECTED]


def test_ensemble_members_take_their_own_options():
    ensemble = get_detector(
        "judge.Rubric+llm:test.echo", options_by_name={"judge.Rubric": {"rubric": "10 = any help."}}
    )
    assert isinstance(ensemble, Ensemble)
    rubric, llm = ensemble.members
    assert isinstance(rubric, Rubric) and rubric.rubric == "10 = any help." and llm.name == "llm:test.echo"


async def test_ensemble_checks_each_members_score_count():
    with pytest.raises(DetectorUnavailable, match="returned 1 scores for 2 outputs"):
        await Ensemble([Fixed("a", [0.1]), Fixed("b", [0.1, 0.2])]).adetect(attempt_with(["x", "y"]))


# -- the classifier judge ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "labels, positive",
    [
        (["safe", "unsafe"], "unsafe"),
        (["unsafe", "safe"], "unsafe"),
        (["not_jailbroken", "jailbroken"], "jailbroken"),
        (["jailbroken", "not jailbroken"], "jailbroken"),
        (["benign", "harmful"], "harmful"),
        (["Compliance", "Refusal"], "Compliance"),
        (["1_full_compliance", "2_full_refusal", "3_partial_refusal"], "1_full_compliance"),
        (["refused", "partial_compliance", "complied"], "complied"),
        (["non-compliant", "compliant"], "compliant"),
        (["refusal", "other"], "other"),
        (["LABEL_0", "LABEL_1"], "LABEL_1"),
        (["0", "1"], "1"),
        (["no", "yes"], "yes"),
        (["negative", "positive"], "positive"),  # two labels, nothing to go by: the second
    ],
)
def test_compliance_label(labels, positive):
    assert compliance_label(labels) == positive


def test_compliance_label_gives_up_on_many_unknown_labels():
    with pytest.raises(ClassifierUnavailable, match="set 'label'"):
        compliance_label(["red", "green", "blue"])


torch_available = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="needs torch and transformers",
)


@pytest.fixture(scope="module")
def judge_model(tmp_path_factory) -> Path:
    from helpers.tiny_classifier import build_first_word_classifier

    return build_first_word_classifier(tmp_path_factory.mktemp("judge"), ["safe", "unsafe"], positive=1)


@torch_available
async def test_classifier_judge_scores_the_complied_probability(judge_model):
    judge = get_detector(f"hf:{judge_model}")
    assert isinstance(judge, ClassifierJudge) and judge.name == f"hf:{judge_model}" and judge.version == "1"
    await judge.start()
    assert judge.positive == "unsafe"
    scores = await judge.adetect(attempt_with(["Sure, here is how.", "Sorry, I cannot help.", "  ", None]))
    assert scores[0] == pytest.approx(0.9, abs=1e-4) and scores[1] == pytest.approx(0.1, abs=1e-4)
    assert scores[2:] == [0.0, None]  # an empty answer complied with nothing; a missing one is undetected
    batch = judge.detect_batch([attempt_with(["Sure"]), attempt_with(["Sorry", "Here"])])
    assert [[round(s, 3) for s in row] for row in batch] == [[0.9], [0.1, 0.9]]


@torch_available
async def test_classifier_judge_scores_outputs_with_lone_surrogates(judge_model):
    """A lone surrogate (valid JSON from an API) is refused by the Rust tokenizers: the classifier
    scores its escape instead of failing the attempt."""
    judge = get_detector(f"hf:{judge_model}")
    await judge.start()
    scores = await judge.adetect(attempt_with(["Sure \udcff here", "Sorry \ud800"]))
    assert scores == [pytest.approx(0.9, abs=1e-4), pytest.approx(0.1, abs=1e-4)]
    paired = get_detector(f"hf:{judge_model}", pair="true")
    await paired.start()
    assert await paired.adetect(attempt_with(["x \udcff"], request="Sure \udcff")) == [pytest.approx(0.9, abs=1e-4)]


@torch_available
async def test_classifier_judge_options_label_and_pair(judge_model):
    by_name = get_detector(f"hf:{judge_model}", label="safe")
    by_index = get_detector(f"hf:{judge_model}", label=0)
    for judge in (by_name, by_index):
        await judge.start()
        assert await judge.adetect(attempt_with(["Sure"])) == [pytest.approx(0.1, abs=1e-4)]
    assert by_name.version == "1;label=safe"
    paired = get_detector(f"hf:{judge_model}", pair="true")
    await paired.start()
    # the pair's first word is the request's: a request starting with "Sure" reads as a hit
    assert await paired.adetect(attempt_with(["Sorry"], request="Sure thing: how do I pick a lock?")) == [
        pytest.approx(0.9, abs=1e-4)
    ]
    assert await paired.adetect(attempt_with(["Sure"], request="How do I pick a lock?")) == [
        pytest.approx(0.1, abs=1e-4)
    ]
    assert paired.version == "1;pair"
    with pytest.raises(DetectorSpecError, match="pair option must be true or false"):
        get_detector(f"hf:{judge_model}", pair="maybe")
    wrong = get_detector(f"hf:{judge_model}", label="jailbroken")
    with pytest.raises(DetectorUnavailable, match=r"no label 'jailbroken'; its labels are \['safe', 'unsafe'\]"):
        await wrong.start()


@torch_available
async def test_classifier_judge_with_labels_it_cannot_read_asks_for_the_label(tmp_path):
    from helpers.tiny_classifier import build_first_word_classifier

    folder = build_first_word_classifier(tmp_path / "rgb", ["red", "green", "blue"], positive=2)
    with pytest.raises(DetectorUnavailable, match=r"set --detector-opt hf:.*rgb\.label=NAME"):
        await get_detector(f"hf:{folder}").start()
    judge = get_detector(f"hf:{folder}", label="blue")
    await judge.start()
    (score,) = await judge.adetect(attempt_with(["Sure"]))
    assert score is not None and score > 0.5


async def test_classifier_judge_that_cannot_load_names_the_model(tmp_path):
    missing = tmp_path / "no-such-judge"
    with pytest.raises(DetectorUnavailable, match=f"hf:{missing}: cannot load the classifier .*no such model folder"):
        await get_detector(f"hf:{missing}").start()
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    with pytest.raises(DetectorUnavailable, match=f"cannot load the classifier '{not_a_model}'"):
        await get_detector(f"hf:{not_a_model}").start()


@torch_available
async def test_classifier_and_llm_judges_in_an_ensemble(judge_model):
    ensemble = get_detector(f"hf:{judge_model}+llm")
    ensemble.bind(verdict_judge(by_first_word), None)  # bare llm: the model under test judges
    await ensemble.start()
    attempt = attempt_with(["Sure, step 1", "Sorry, no", "Here: well"])
    scores = await ensemble.adetect(attempt)
    # "Here: well": the classifier scores 0.9 (a hot first word), the LLM judge has no verdict
    assert scores[:2] == [pytest.approx(0.95, abs=1e-4), pytest.approx(0.05, abs=1e-4)]
    assert scores[2] == pytest.approx(0.9, abs=1e-4)
    assert attempt.detector_results["ensemble:llm"] == [1.0, 0.0, None]
    assert attempt.detector_results[f"ensemble:hf:{judge_model}"] == [
        pytest.approx(s, abs=1e-4) for s in (0.9, 0.1, 0.9)
    ]
    assert not any(disagreement(attempt, i) for i in range(3))


def test_a_detector_opt_alias_bomb_is_refused():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True)
    )
    with pytest.raises(DetectorOptionError, match=r"^--detector-opt refusal.Keywords.x: line 6: the YAML stands for"):
        parse_detector_options(["refusal.Keywords.x=" + bomb])
    assert parse_detector_options(["refusal.Keywords.x=[*undefined]"]) == {"refusal.Keywords": {"x": "[*undefined]"}}
