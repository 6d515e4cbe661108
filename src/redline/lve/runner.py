"""Run an LVE against a generator, and record instances.

A run fills the prompt with the parameters, lets the model answer every empty assistant message
turn by turn (multi-variable prompts: each answer is part of the context of the next question),
adds a final answer when the prompt ends with a user message, and judges the result with the
LVE's checker. A multi-run LVE does this for each of its prompts (repetitions included) and
judges them together. The recorded response is post-processed by the checker first (e.g. PII
redaction), so nothing it removes reaches the disk.

The generator is anything with ``async generate(conversation, n) -> list[Message | None]``
(see :mod:`redline.generators`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from redline import __version__
from redline.attempt import Conversation, Message, Turn
from redline.errors import RedlineError
from redline.generators import GeneratorError
from redline.lve.errors import LVEFormatError
from redline.lve.isolation import IsolatedChecker, checker_for
from redline.lve.model import LVE
from redline.lve.prompt import LVEMessage, Role

__all__ = [
    "LVERun",
    "complete_chat",
    "instance_record",
    "judge",
    "naming",
    "record_instance",
    "record_lve",
    "run_lve",
    "to_conversation",
]

#: The variable of the answer appended when a prompt ends with a user message.
RESPONSE_VARIABLE = "response"


@dataclass
class LVERun:
    """The outcome of one run of an LVE.

    ``response`` is what an instance stores (post-processed by the checker): a string, a dict
    of variables, or a list of those for a multi-run LVE. ``params`` are the prompt parameters
    and ``model_args`` the sampling arguments used.
    """

    safe: bool
    response: Any
    prompts_in: list[list[LVEMessage]]
    prompts_out: list[list[LVEMessage]]
    params: dict[str, Any]
    model_args: dict[str, Any]


def to_conversation(chat: list[LVEMessage]) -> Any:
    """A :class:`redline.attempt.Conversation` of the messages that have content."""
    return Conversation(
        [
            Turn(m.role.value, Message(text=m.content, data_path=m.image_url))
            for m in chat
            if m.content is not None or m.image_url
        ]
    )


async def _answer(generator: Any, context: list[LVEMessage]) -> str:
    outputs = await generator.generate(to_conversation(context), 1)
    if not outputs or outputs[0] is None:
        raise GeneratorError("the model returned no output")
    return outputs[0].text or ""


async def complete_chat(generator: Any, chat: list[LVEMessage]) -> list[LVEMessage]:
    """``chat`` with every empty assistant message answered by the model, in order, each
    answer seeing everything before it; a final answer (variable ``response``) is appended
    when the chat ends with a non-assistant message."""
    if not chat or chat[-1].role != Role.assistant:
        chat = [*chat, LVEMessage(Role.assistant, None, RESPONSE_VARIABLE)]
    out: list[LVEMessage] = []
    for message in chat:
        if message.role == Role.assistant and message.content is None:
            message = replace(message, content=await _answer(generator, out))
        out.append(message)
    return out


async def run_lve(
    lve: LVE,
    generator: Any,
    params: dict[str, Any],
    checker: Any = None,
    *,
    trust_code: bool = False,
    model_args: dict[str, Any] | None = None,
) -> LVERun:
    """Run ``lve`` once with the prompt parameters ``params`` and judge it.

    ``checker`` defaults to the LVE's checker for these arguments (a given checker is used
    unless the LVE's checker arguments are templates, which need the instance's values).
    Raises :class:`LVEFormatError` if a parameter is missing.
    """
    missing = [p for p in lve.prompt_parameters if p not in params]
    if missing:
        raise LVEFormatError(f"{lve.test_path}: missing prompt parameter(s) {', '.join(missing)} (pass -p NAME=VALUE)")
    params = {k: v for k, v in params.items() if k in lve.prompt_parameters}
    args = {**dict(model_args or {}), **params}
    if checker is None or lve.is_templated():
        with naming(lve):
            checker = checker_for(lve, trust_code=trust_code or bool(getattr(checker, "custom", False)), args=args)
    prompts_in = lve.prompts_for(params)
    prompts_out = [await complete_chat(generator, chat) for chat in prompts_in]
    safe, recorded = await judge(lve, checker, prompts_in, prompts_out, params)
    return LVERun(safe, recorded, prompts_in, prompts_out, params, dict(model_args or {}))


async def judge(
    lve: LVE,
    checker: Any,
    prompts_in: list[list[LVEMessage]],
    prompts_out: list[list[LVEMessage]],
    params: dict[str, Any],
) -> tuple[bool, Any]:
    """``(safe, recorded)``: the checker's verdict on the answered chats and the response to
    store, post-processed. An isolated checker's calls wait for its worker in a thread, so the
    event loop (other attempts, progress, Ctrl-C) keeps running."""

    def call() -> tuple[bool, Any]:
        with naming(lve):
            if lve.is_multi_run:
                safe, recorded = checker.invoke_check(prompts_in, prompts_out, params)
            else:
                safe, recorded = checker.invoke_check(prompts_in[0], prompts_out[0], params)
            return bool(safe), checker.postprocess_response(recorded)

    if isinstance(checker, IsolatedChecker):
        try:
            return await asyncio.to_thread(call)
        except asyncio.CancelledError:  # Ctrl-C or an aborted scan: stop the workers now
            checker.pool.close()  # the thread waiting on its worker returns at once
            raise
    return call()


@contextmanager
def naming(lve: LVE) -> Iterator[None]:
    """A :class:`~redline.errors.RedlineError` raised inside (a checker over a limit, a worker
    that failed) raised again, of the same type, with its message starting with ``lve``'s
    ``test.json`` (unless it already does)."""
    try:
        yield
    except RedlineError as exc:
        named = _named(lve, exc)
        if named is None:
            raise
        raise named from exc


def _named(lve: LVE, exc: RedlineError) -> RedlineError | None:
    """``exc`` of the same type with ``lve``'s ``test.json`` in front of its message; ``None``
    when the message already starts with it or the type is not built from a message alone."""
    where = str(lve.test_path)
    text = str(exc)
    if text.startswith(where):
        return None
    try:
        return type(exc)(f"{where}: {text}")
    except TypeError:
        return None


def instance_record(lve: LVE, run: LVERun, model: str, author: str = "", checker: Any = None) -> dict[str, Any]:
    """The instance line (as a dict) for ``run``. When the checker post-processes responses
    (PII redaction), the recorded parameter values go through it too."""
    params = dict(run.params)
    if checker is not None and getattr(checker, "postprocessing", False) and not getattr(checker, "multi_run", False):
        params = {k: checker.postprocess_response(v) if isinstance(v, str) else v for k, v in params.items()}

    return {
        "test_path": f"{lve.name}/test.json",
        "args": {**run.model_args, **params},
        "response": run.response,
        "run_info": {"redline": __version__, "model": model, "timestamp": time.ctime()},
        "passed": run.safe,
        "author": author,
    }


def record_instance(
    lve: LVE,
    run: LVERun,
    model: str,
    sampling: dict[str, Any] | None = None,
    author: str = "",
    file_name: str = "redline.jsonl",
    checker: Any = None,
) -> Path:
    """Append ``run`` as one line to ``instances/FILE_NAME`` of the LVE; returns the file."""
    if sampling:
        run = replace(run, model_args={**run.model_args, **sampling})
    record = instance_record(lve, run, model, author, checker)
    if "/" in file_name or "\\" in file_name or not file_name.endswith(".jsonl"):
        raise LVEFormatError(f"{file_name}: the instances file must be a plain name ending in .jsonl")
    folder = lve.directory / "instances"
    folder.mkdir(exist_ok=True)
    path = folder / file_name
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


async def record_lve(
    lve: LVE,
    generator: Any,
    param_rows: Iterable[dict[str, Any]],
    *,
    model: str,
    trust_code: bool = False,
    model_args: dict[str, Any] | None = None,
    author: str = "",
    file_name: str = "redline.jsonl",
) -> list[tuple[LVERun, Path]]:
    """Run ``lve`` once per parameter set and append each (post-processed) instance."""
    results = []
    for params in param_rows:
        run = await run_lve(lve, generator, params, trust_code=trust_code, model_args=model_args)
        with naming(lve):
            checker = checker_for(lve, trust_code=trust_code, args={**run.model_args, **run.params})
        results.append((run, record_instance(lve, run, model, None, author, file_name, checker)))
    return results
