"""GenderBench's probes run by redline and by GenderBench's own harness, printed side by side.

redline scans the probes (``genderbench.NAME``) on a generator into a store; GenderBench's harness
(``probe.run(generator)``) then runs the same probes with the same options on a generator that
gives it, for each prompt, the answers redline's scan stored (the model is asked once). Each
metric is printed with both tools' value, 95% interval and mark. Needs ``genderbench`` (``pip
install --no-deps genderbench==0.5.0``, then ``pip install 'redline[genderbench]'``) and, for the
probes that tokenize, nltk's punkt data.

    python bench/genderbench_side_by_side.py -m test.repeat:"No." -p DirectProbe,BbqProbe --sample 30
    python bench/genderbench_side_by_side.py -m smollm2 -p DirectProbe --sample 30
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from redline.engine import ScanConfig, scan
from redline.probes.bias.genderbench import genderbench_probe
from redline.store import Store


def replayed(store: Store, run_id: str, probe: str) -> dict[str, list[str]]:
    """The answers the scan stored for ``probe``, by prompt text, in the order they were made."""
    answers: dict[str, list[str]] = defaultdict(list)
    for attempt in store.iter_attempts(run_id, probe, errored=False):
        sent = attempt.prompt_view()
        assert sent is not None
        answers[sent.last_message("user").text or ""].extend(o.text or "" for o in attempt.outputs)
    return answers


def genderbench_run(name: str, answers: dict[str, list[str]], sample: int | None) -> Any:
    """GenderBench's own harness on the stored answers."""
    from genderbench.generators.generator import Generator

    class Replay(Generator):
        def generate(self, texts: list[str]) -> list[str]:
            given = {text: iter(outputs) for text, outputs in answers.items()}
            return [next(given[text]) for text in texts]

    probe = genderbench_probe(name, **({"sample_k": sample} if sample is not None else {}))
    state = random.getstate()
    try:
        probe.run(Replay())
    finally:
        random.setstate(state)
    return probe


def stand_in_punkt() -> None:
    """An English punkt model without learned parameters, where nltk looks first."""
    import nltk

    folder = Path(tempfile.mkdtemp(prefix="punkt-")) / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (folder / name).write_text("")
    nltk.data.path.insert(0, str(folder.parents[2]))


def shown(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", default="test.repeat:No.")
    parser.add_argument("-p", "--probes", default="DirectProbe", help="GenderBench class names, comma-separated")
    parser.add_argument("--sample", type=int, default=30)
    parser.add_argument("--store", type=Path, default=None, help="keep redline's store here (default: a temp file)")
    parser.add_argument(
        "--stand-in-punkt",
        action="store_true",
        help="where nltk's punkt data cannot be downloaded: a punkt model with no learned parameters, "
        "used by both tools (the numbers are then not GenderBench's published setup)",
    )
    args = parser.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")  # GenderBench's bootstrap progress bar
    if args.stand_in_punkt:
        stand_in_punkt()
    names = [n.strip() for n in args.probes.split(",") if n.strip()]
    folder = tempfile.mkdtemp(prefix="gb-side-")
    store = Store(args.store or Path(folder) / "runs.db")
    config = ScanConfig(model=args.model, probes=",".join(f"genderbench.{n}" for n in names), sample=args.sample)
    run_id = asyncio.run(scan(config, store))
    results = store.probe_results(run_id)
    print(f"model {args.model}, --sample {args.sample}, redline run {run_id}")
    print(
        f"{'probe':<24} {'metric':<46} {'redline':>8} {'interval':>18} {'mark':>4} | "
        f"{'GenderBench':>11} {'interval':>18} {'mark':>4}"
    )
    for name in names:
        ours = results[f"genderbench.{name}"].data
        if ours.get("not_measured"):
            print(f"{name:<24} not measured: {ours['not_measured']}")
            continue
        theirs = genderbench_run(name, replayed(store, run_id, f"genderbench.{name}"), args.sample)
        values = theirs.metric_calculator(theirs.probe_items)
        for metric, value in values.items():
            mine = ours["metrics"].get(metric, {})
            mark = (ours["marks"].get(metric) or {}).get("mark") or ""
            their_mark = theirs.marks.get(metric, {}).get("mark_value")
            their_mark = "" if their_mark is None or math.isnan(their_mark) else "ABCD"[their_mark]
            print(
                f"{name:<24} {metric:<46} {shown(mine.get('value')):>8} {shown(mine.get('ci95')):>18} {mark:>4} | "
                f"{shown(value):>11} {shown(theirs.metrics.get(metric)):>18} {their_mark:>4}"
            )
    store.close()


if __name__ == "__main__":
    main()
