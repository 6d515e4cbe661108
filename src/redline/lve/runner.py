"""Run an LVE against a generator, and record instances."""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.attempt import Conversation, Message, Turn
from redline.lve.model import LVE, LVEFormatError
from redline.lve.prompt import LVEMessage, Role

__all__ = ["LVERun", "complete_chat", "run_lve", "record_instance"]


@dataclass
class LVERun:
    """The outcome of one run: the verdict, the recorded (post-processed) response and chats."""

    safe: bool
    response: Any
    prompts_in: list[list[LVEMessage]]
    prompts_out: list[list[LVEMessage]]
    params: dict[str, Any]


def _conversation(messages: list[LVEMessage]) -> Conversation:
    return Conversation([Turn(m.role.value, Message(text=m.content, data_path=m.image_url)) for m in messages])


async def complete_chat(generator: Any, chat: list[LVEMessage]) -> list[LVEMessage]:
    """Fill every empty assistant message (multi-variable prompts) turn by turn, then answer
    the final user message if the chat does not end with the assistant."""
    out: list[LVEMessage] = []
    for message in copy.deepcopy(chat):
        if message.role == Role.assistant and message.content is None:
            (reply,) = await generator.generate(_conversation(out), 1)
            message.content = reply.text if reply is not None and reply.text is not None else ""
        out.append(message)
    if not out or out[-1].role != Role.assistant:
        (reply,) = await generator.generate(_conversation(out), 1)
        out.append(LVEMessage(Role.assistant, reply.text if reply is not None and reply.text is not None else ""))
    return out


async def run_lve(lve: LVE, generator: Any, params: dict[str, Any], checker: Any) -> LVERun:
    """Run ``lve`` once with ``params`` and judge it with ``checker``."""
    missing = [p for p in lve.prompt_parameters if p not in params]
    if missing:
        raise LVEFormatError(f"{lve.test_path}: missing parameter(s) {', '.join(missing)} (pass -p name=value)")
    prompts_in = lve.prompts_for(params)
    prompts_out = [await complete_chat(generator, p) for p in prompts_in]
    if lve.is_multi_run:
        safe, response = checker.invoke_check(prompts_in, prompts_out, params)
    else:
        safe, response = checker.invoke_check(prompts_in[0], prompts_out[0], params)
    return LVERun(bool(safe), checker.postprocess_response(response), prompts_in, prompts_out, params)


def record_instance(lve: LVE, run: LVERun, model: str, sampling: dict[str, Any], author: str = "",
                    file_name: str = "redline.jsonl", checker: Any = None) -> Path:
    """Append the run as an instance line to ``instances/FILE_NAME``.

    The response is already post-processed by the checker; when the checker post-processes
    (PII redaction), the recorded parameter values go through it too, so nothing it would redact
    reaches the disk by way of ``args``.
    """
    params = dict(run.params)
    if checker is not None and getattr(checker, "postprocessing", False):
        params = {k: checker.postprocess_response(v) if isinstance(v, str) else v for k, v in params.items()}
    folder = lve.directory / "instances"
    folder.mkdir(exist_ok=True)
    path = folder / file_name
    from redline import __version__

    line = {
        "test_path": lve.name + "/test.json",
        "args": {**sampling, **params},
        "response": run.response,
        "run_info": {"redline": __version__, "model": model, "timestamp": time.strftime("%a %b %d %H:%M:%S %Y")},
        "passed": run.safe,
        "author": author,
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")
    return path
