"""Checks shared by the tests of a probe family: what every probe declares (goal, description,
the three compliance tags, a registered detector, enough distinct prompts, deterministic attempts
that survive a JSON round trip), and a run against an oracle model that answers each attempt
(from its prompt) as a vulnerable or a safe model would."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from fakes import ScriptedGenerator
from redline.attempt import Attempt, Conversation
from redline.detectors import detectors
from redline.probes import get_probe, probes
from redline.taxonomy import tag_review

__all__ = ["assert_declares_itself", "failure_rate", "members"]


def _without_uuid(attempt: Attempt) -> dict:
    return {k: v for k, v in attempt.as_dict().items() if k != "uuid"}


def members(family: str) -> list[str]:
    return [n for n in probes.names() if n.startswith(family + ".")]


def assert_declares_itself(name: str, detector: str | tuple[str, ...], min_items: int = 10) -> None:
    cls = probes.load(name)
    assert cls.name == name and cls.active
    assert cls.goal and cls.description
    none = tag_review(name).none  # a framework with no fitting item, as reviewed
    assert "owasp" in none or any(re.fullmatch(r"owasp:llm(0[1-9]|10)", t) for t in cls.tags), cls.tags
    assert "atlas" in none or any(re.fullmatch(r"atlas:AML\.T\d{4}(\.\d{3})?", t) for t in cls.tags), cls.tags
    assert "nist" in none or any(t.startswith("nist:") for t in cls.tags), cls.tags
    expected = (detector,) if isinstance(detector, str) else detector  # a harm probe: its two judges
    assert cls.recommended_detectors == expected and all(d in detectors for d in expected)
    probe = cls()
    texts = [repr(p.conversation().as_dict()) for item in probe.probe_items for p in item.prompts]
    assert len(texts) >= min_items and len(set(texts)) == len(texts), f"{name}: {len(texts)} prompts"
    attempts = list(probe.create_attempts())
    assert [a.seq for a in attempts] == list(range(len(attempts)))
    again = list(cls().create_attempts())
    assert [_without_uuid(a) for a in attempts] == [_without_uuid(a) for a in again]
    for a in attempts:
        assert a.probe_classname == name and a.goal == cls.goal
        restored = Attempt.from_dict(json.loads(json.dumps(a.as_dict())))
        assert restored.as_dict() == a.as_dict()


async def failure_rate(name: str, respond: Callable[[Attempt, Conversation], str]) -> tuple[float | None, int]:
    """The probe's failure rate (and the number of judged attempts) against a model that answers
    every attempt with ``respond(attempt, conversation)``."""
    probe = get_probe(name)
    attempts = list(probe.create_attempts())
    by_prompt = {repr(a.prompt.as_dict()): a for a in attempts if a.prompt is not None}
    model = ScriptedGenerator(lambda c: respond(by_prompt[repr(c.as_dict())], c), name="test.oracle:o", local=True)
    result = await probe.run(model)
    assert result.errored == 0
    rate = result.metrics["failure_rate"]
    for a in result.attempts:  # the judged attempt, outputs and verdicts included, still round-trips
        assert Attempt.from_dict(json.loads(json.dumps(a.as_dict()))).as_dict() == a.as_dict()
    return rate.value, rate.n
