"""The LVE repositories the LVE tests run on.

``FIXTURE_LVES`` (``tests/data/lves``) is our own small LVE repository, part of this repository,
so the LVE tests always run, in CI too. The public LVE samples (``/work/shared/lve-samples``
next to the checkout, or the folder named by the environment variable ``REDLINE_LVE_SAMPLES``)
are tested as well when they are present: :func:`over_repos` adds a second parameter set for
them, and nothing is reported as skipped when they are absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

FIXTURE_LVES = Path(__file__).resolve().parents[1] / "data" / "lves"
ENV_VAR = "REDLINE_LVE_SAMPLES"


def shared_lve_samples() -> Path | None:
    """The public LVE samples folder, or ``None`` when there is none. A folder named by
    ``REDLINE_LVE_SAMPLES`` must exist (a typo must not silently drop the tests)."""
    named = os.environ.get(ENV_VAR)
    if named:
        path = Path(named).expanduser()
        if not path.is_dir():
            raise RuntimeError(f"{ENV_VAR}={named}: no such folder")
        return path.resolve()
    default = Path(__file__).resolve().parents[3] / "shared" / "lve-samples"
    return default if default.is_dir() else None


LVE_SAMPLES = shared_lve_samples()


def over_repos(ours: tuple[Any, ...] | Any, samples: tuple[Any, ...] | Any | None = None) -> list[Any]:
    """``pytest.mark.parametrize`` values: the repository root followed by ``ours`` for our
    fixture (always), and by ``samples`` for the shared samples when they are present."""

    def values(root: Path, rest: Any) -> tuple[Any, ...]:
        return (root, *rest) if isinstance(rest, tuple) else (root, rest)

    params = [pytest.param(*values(FIXTURE_LVES, ours), id="fixture")]
    if LVE_SAMPLES is not None and samples is not None:
        params.append(pytest.param(*values(LVE_SAMPLES, samples), id="lve-samples"))
    return params


def write_lve(
    root: Path,
    name: str,
    checker_args: dict[str, Any],
    instances: list[tuple[dict[str, Any], Any, bool]],
    *,
    prompt: str = "Say {x}",
    params: tuple[str, ...] = ("x",),
    custom: str | None = None,
) -> Path:
    """Write a one-prompt LVE ``root/name/m`` with ``instances`` (args, response, passed) and,
    with ``custom``, a ``checker/checker.py`` of that text; returns its folder."""
    folder = root / name / "m"
    (folder / "instances").mkdir(parents=True)
    test = {
        "description": name,
        "model": "m",
        "prompt": [{"content": prompt, "role": "user"}],
        "prompt_parameters": list(params),
        "checker_args": checker_args,
    }
    (folder / "test.json").write_text(json.dumps(test), encoding="utf-8")
    lines = [
        json.dumps({"test_path": f"{name}/m/test.json", "args": args, "response": response, "passed": passed})
        for args, response, passed in instances
    ]
    (folder / "instances" / "i.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if custom is not None:
        (folder / "checker").mkdir()
        (folder / "checker" / "checker.py").write_text(custom, encoding="utf-8")
    return folder
