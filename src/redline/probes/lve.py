"""LVEs as probes: ``redline scan --lve PATH`` runs every LVE below PATH like any other probe.

Each LVE becomes one probe named ``lve.<path>``; its items are the parameter sets recorded in
its instances (or the single empty set when it has no parameters). Generation runs the LVE's own
prompt (multi-run and multi-variable included) and the LVE's checker judges each run in a worker process (:mod:`redline.lve.isolation`): the score
``lve.<Checker>`` is 1.0 when the run is unsafe; a checker that crashes, hangs or exceeds a limit
is an error on that attempt only. Responses are post-processed by the checker (PII
redaction) before they are stored. An LVE that cannot be measured (a custom checker without
``--trust-code``, parameters with nothing recorded) is listed in the summary as not measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redline.attempt import Attempt, Conversation, Message, Turn
from redline.lve.isolation import CheckerIsolationError, checker_for
from redline.lve.model import LVE, CustomCodeRefused, Instance, LVEFormatError, find_lves, load_lve
from redline.lve.runner import run_lve
from redline.probes.base import Probe, ProbeItem, Prompt

__all__ = ["LVEProbe", "lve_probes"]


def _text(response: Any) -> str:
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


class LVEProbe(Probe):
    """One LVE run as a probe."""

    recommended_detectors = ()

    def __init__(self, lve: LVE, trust_code: bool = False, **options: Any) -> None:
        self.lve = lve
        self.name = f"lve.{lve.name}"  # type: ignore[misc]
        self.goal = lve.description or f"LVE {lve.name}"  # type: ignore[misc]
        severity = [t.get("value") for t in lve.tags if isinstance(t, dict) and t.get("name") == "severity"]
        self.tags = ("lve",) + tuple(f"severity:{s}" for s in severity)  # type: ignore[misc]
        super().__init__(**options)
        self.skip_reason: str | None = None
        self.checker = None
        try:
            self.checker = checker_for(lve, trust_code=trust_code)
        except CustomCodeRefused as exc:
            self.skip_reason = str(exc)
        except CheckerIsolationError as exc:  # its worker crashed or hung while loading it
            self.skip_reason = f"{lve.test_path}: {exc}"
        if self.checker is not None and lve.prompt_parameters and not self._param_sets():
            self.skip_reason = f"{lve.test_path}: has prompt parameters but no recorded instances to take them from"

    def _param_sets(self) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        for item in self.lve.instances():
            if isinstance(item, Instance):
                try:
                    params = self.lve.param_values(item.args, item.where)
                except LVEFormatError:
                    continue
                if params not in seen:
                    seen.append(params)
        return seen

    def _create_probe_items(self) -> list[ProbeItem]:
        if self.skip_reason is not None:
            return []
        sets = self._param_sets() if self.lve.prompt_parameters else [{}]
        items = []
        for params in sets:
            chat = self.lve.prompts_for(params)[0]
            turns = [
                Turn(m.role.value, Message(text=m.content, data_path=m.image_url))
                for m in chat
                if m.content is not None
            ]
            items.append(
                ProbeItem(
                    prompts=[Prompt(Conversation(turns), metadata={"params": params})], metadata={"params": params}
                )
            )
        return items

    async def generate(self, attempt: Attempt, generator: Any, generations: int) -> Attempt:
        params = attempt.notes["prompt_metadata"]["params"]
        runs = [await run_lve(self.lve, generator, params, self.checker) for _ in range(generations)]
        attempt.outputs = [Message(text=_text(r.response)) for r in runs]
        attempt.detector_results[f"lve.{self.lve.checker_name}"] = [0.0 if r.safe else 1.0 for r in runs]
        attempt.notes["lve"] = {
            "test_path": f"{self.lve.name}/test.json",
            "args": params,
            "responses": [r.response for r in runs],
            "passed": [r.safe for r in runs],
            "checker": self.lve.checker_name,
        }
        return attempt


def lve_probes(paths: list[str], trust_code: bool = False, sample: int | None = None, seed: int = 0) -> list[LVEProbe]:
    """One probe per LVE found below each path. Malformed LVEs raise :class:`LVEFormatError`."""
    probes: list[LVEProbe] = []
    for raw in paths:
        path = Path(raw)
        root = path if path.is_dir() else path.parent
        tests = find_lves(path)
        if not tests:
            raise LVEFormatError(f"{path}: no test.json found")
        for test in tests:
            probes.append(LVEProbe(load_lve(test, root=root), trust_code=trust_code, sample=sample, seed=seed))
    return probes
