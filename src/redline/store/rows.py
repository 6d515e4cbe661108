"""Type-checked readers of the store's rows: a row is read as redline writes it, or refused.

A store may come from someone else (:mod:`redline.store.trust`), so every value read back is
checked before it is used: JSON nested at most :data:`~redline.untrusted.MAX_DEPTH` levels, each
field of the type redline writes (an attempt's messages, turns, tool calls, scores and verdicts;
a run's settings; a probe's metrics and marks), numbers in range (times, counts, sequence
numbers) and names of bounded length. A row that fails is :class:`RowDamaged`, one line naming
the store and the row; :class:`DamagedAttempt` stands for such an attempt where a reader lists
attempts and shows the damaged ones marked (``redline view``).

Each reader takes the row's values and returns what :class:`~redline.store.Store` returned
before (the parsed JSON, or the record's fields), raising :class:`Bad` with what is wrong; the
store adds the file and the row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redline import jsonio
from redline.errors import RedlineError
from redline.store.errors import StoreError
from redline.untrusted import MAX_DEPTH, UntrustedInputError, check_depth

__all__ = [
    "MAX_NAME_CHARS",
    "Bad",
    "DamagedAttempt",
    "DamagedRun",
    "RowDamaged",
    "attempt_data",
    "cached_outputs",
    "count",
    "json_value",
    "name",
    "notes_data",
    "probe_result",
    "read",
    "review_row",
    "run_config",
    "run_row",
    "timestamp",
    "validation_row",
]

#: The longest name read back (a run id, a model, a probe, a status, a label...), in characters.
MAX_NAME_CHARS = 4096
#: The longest run message read back, in characters.
MAX_MESSAGE_CHARS = 64 * 1024
#: The largest count or sequence number read back (SQLite's integers are 64-bit).
MAX_COUNT = 2**53
#: The latest time read back (a Unix timestamp in the year 5138): later ones cannot be shown.
MAX_TIME = 1e11

_ROLES = ("system", "user", "assistant", "tool")
_ATTEMPT_STATUSES = (0, 1, 2)


class RowDamaged(StoreError):
    """A row of the store is not as redline writes it (wrong JSON types, nesting too deep, a
    number out of range): one line naming the store and the row."""


class Bad(RedlineError, ValueError):
    """What is wrong with a value being read (the store turns it into :class:`RowDamaged`)."""


#: Where a value is, in words: text, or ``(template, part, ...)`` formatted only when it is shown
#: (most values read are fine: their descriptions are never built).
What = str | tuple[Any, ...]


def _say(what: What) -> str:
    """The words of ``what``."""
    if isinstance(what, tuple):
        return what[0].format(*(_say(part) if isinstance(part, tuple) else part for part in what[1:]))
    return what


@dataclass(frozen=True)
class DamagedAttempt:
    """An attempt row that cannot be read: its probe, sequence number and what is wrong."""

    probe: str
    seq: int
    problem: str


@dataclass(frozen=True)
class DamagedRun:
    """A run row that cannot be read: its id (as text, shortened) and what is wrong."""

    run_id: str
    problem: str

    def as_dict(self) -> dict[str, str]:
        """``{"run_id", "status": "damaged", "problem"}``: one entry of ``redline runs --json``."""
        return {"run_id": self.run_id, "status": "damaged", "problem": self.problem}


# -- scalars -----------------------------------------------------------------------------------------
def name(value: Any, what: What, optional: bool = False, limit: int = MAX_NAME_CHARS) -> Any:
    """``value`` when it is text of at most ``limit`` characters (or ``None`` when ``optional``)."""
    if value is None and optional:
        return None
    if type(value) is not str:
        raise Bad(f"{_say(what)} is not text")
    if len(value) > limit:
        raise Bad(f"{_say(what)} is longer than {limit} characters")
    return value


def _text(value: Any, what: What) -> None:
    if value is not None and type(value) is not str:
        raise Bad(f"{_say(what)} is not text")


def count(value: Any, what: What, low: int = 0, high: int = MAX_COUNT) -> int:
    """``value`` when it is an integer from ``low`` to ``high``."""
    if type(value) is not int:
        raise Bad(f"{_say(what)} is not an integer")
    if not low <= value <= high:
        raise Bad(f"{_say(what)} is out of range ({low} to {high})")
    return value


def timestamp(value: Any, what: What) -> float:
    """``value`` when it is a time that can be shown (a finite number from 0 to :data:`MAX_TIME`)."""
    if type(value) not in (int, float) or not (0 <= value <= MAX_TIME):
        raise Bad(f"{_say(what)} is not a time")
    return value


def _number(value: Any, what: What) -> None:
    """A score or a rate: a number (a ``NaN`` written by an older redline included) or ``None``."""
    if value is not None and type(value) not in (int, float):
        raise Bad(f"{_say(what)} is not a number")


def _interval(value: Any, what: What) -> None:
    if value is None:
        return
    if type(value) is not list or len(value) != 2:
        raise Bad(f"{_say(what)} is not an interval")
    for bound in value:
        _number(bound, what)


def _object(value: Any, what: What, optional: bool = True) -> dict[str, Any]:
    if value is None and optional:
        return {}
    if type(value) is not dict:
        raise Bad(f"{_say(what)} is not an object")
    return value


def _list(value: Any, what: What) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise Bad(f"{_say(what)} is not a list")
    return value


def _names(value: Any, what: What) -> None:
    for item in _list(value, what):
        name(item, ("an item of {}", what))


# -- JSON --------------------------------------------------------------------------------------------
def json_value(text: Any, what: What) -> Any:
    """The JSON value of the column ``text``, nested at most :data:`MAX_DEPTH` levels."""
    if type(text) is not str and type(text) is not bytes:
        raise Bad(f"{_say(what)} is not JSON text")
    try:
        value = jsonio.loads(text)
    except (ValueError, RecursionError):
        if _nests_deeper(text, MAX_DEPTH):  # a parser may refuse deep nesting as invalid JSON
            raise Bad(f"{_say(what)} nests more than {MAX_DEPTH} levels deep") from None
        raise Bad(f"{_say(what)} is not valid JSON") from None
    brackets = text.count("[") + text.count("{") if isinstance(text, str) else text.count(b"[") + text.count(b"{")
    if brackets > MAX_DEPTH:  # (fewer brackets cannot nest deeper)
        try:
            check_depth(value)
        except UntrustedInputError:
            raise Bad(f"{_say(what)} nests more than {MAX_DEPTH} levels deep") from None
    return value


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"')
_BRACKET = re.compile(r"[\[\]{}]")


def _nests_deeper(text: str | bytes, limit: int) -> bool:
    """Whether the brackets of JSON ``text`` (its strings left out) open more than ``limit``
    levels deep."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    depth = 0
    for match in _BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > limit:
            return True
    return False


# -- attempts ----------------------------------------------------------------------------------------
def _tool_call(value: Any, what: What) -> None:
    call = _object(value, what, optional=False)
    name(call.get("name"), ("the name of {}", what))
    if call.get("id") is not None and type(call["id"]) not in (str, int):
        raise Bad(f"the id of {_say(what)} is not text")
    _object(call.get("arguments"), ("the arguments of {}", what))


_MESSAGE_TEXTS = ("text", "lang", "data_path", "data_checksum", "tool_call_id")


def _message(value: Any, what: What) -> None:
    """Check the message ``value`` (``None``, a text, or :meth:`Message.as_dict`): every message
    of every attempt read passes here, so the usual case takes no call."""
    if value is None or type(value) is str:
        return
    if type(value) is not dict:
        raise Bad(f"{_say(what)} is not an object")
    get = value.get
    for key in _MESSAGE_TEXTS:
        text = get(key)
        if text is not None and type(text) is not str:
            raise Bad(f"{key} of {_say(what)} is not text")
    data_type = get("data_type")
    if data_type is not None:
        if type(data_type) is not list or len(data_type) != 2:
            raise Bad(f"data_type of {_say(what)} is not a pair")
        for part in data_type:
            _text(part, ("data_type of {}", what))
    notes = get("notes")
    if notes is not None and type(notes) is not dict:
        raise Bad(f"the notes of {_say(what)} is not an object")
    calls = get("tool_calls")
    if calls:
        for i, call in enumerate(_list(calls, ("the tool calls of {}", what))):
            _tool_call(call, ("tool call {} of {}", i, what))


def _messages(value: Any, what: What) -> None:
    for i, message in enumerate(_list(value, what)):
        _message(message, ("{} {}", what, i))


def _conversation(value: Any, what: What) -> int:
    """Check the conversation ``value``; the number of its turns."""
    conversation = _object(value, what, optional=False)
    turns = _list(conversation.get("turns"), ("the turns of {}", what))
    for i, turn in enumerate(turns):
        if type(turn) is not dict or turn.get("role") not in _ROLES:
            raise Bad(f"turn {i} of {_say(what)} has no known role")
        _message(turn.get("content"), ("turn {} of {}", i, what))
    _object(conversation.get("notes"), ("the notes of {}", what))
    tools = conversation.get("tools")
    for i, tool in enumerate(_list(tools, ("the tools of {}", what)) if tools else ()):
        definition = _object(tool, ("tool {} of {}", i, what), optional=False)
        if type(definition.get("function")) is dict:
            definition = definition["function"]
        name(definition.get("name"), ("the name of tool {} of {}", i, what))
        _object(definition.get("parameters"), ("the parameters of tool {} of {}", i, what))
    return len(turns)


def notes_data(value: Any, what: What = "its notes") -> dict[str, Any]:
    """The attempt notes ``value`` (an object) with the notes reports read of the types they
    read: ``evaluation`` (verdicts), ``error`` (text) and ``lve`` (an object)."""
    notes = _object(value, what)
    for verdict in _list(notes.get("evaluation"), ("the verdicts in {}", what)):
        _text(verdict, ("a verdict in {}", what))
    error = notes.get("error")
    if error is not None and type(error) not in (str, bool):
        raise Bad(f"the error in {what} is not text")
    _object(notes.get("lve"), ("the lve note in {}", what))
    return notes


def attempt_data(text: Any) -> dict[str, Any]:
    """The stored attempt ``text`` (the JSON of :meth:`~redline.attempt.Attempt.as_dict`) when
    every field :meth:`~redline.attempt.Attempt.from_dict` and the reports read is of its type."""
    data = _object(json_value(text, "the attempt"), "the attempt", optional=False)
    if "seq" in data:
        count(data["seq"], "its seq", -(2**63), 2**63 - 1)
    if "status" in data and data["status"] not in _ATTEMPT_STATUSES:
        raise Bad("its status is not an attempt status")
    name(data.get("probe_classname"), "its probe", optional=True)
    _text(data.get("uuid"), "its uuid")
    _text(data.get("goal"), "its goal")
    _object(data.get("probe_params"), "its probe parameters")
    for target in _list(data.get("targets"), "its targets"):
        _text(target, "a target")
    if data.get("prompt") is not None:
        _conversation(data["prompt"], "its prompt")
    _messages(data.get("outputs"), "output")
    _messages(data.get("reverse_translation_outputs"), "reverse translation")
    for detector, scores in _object(data.get("detector_results"), "its detector results").items():
        for score in _list(scores, ("the scores of {}", detector[:80])):
            _number(score, ("a score of {}", detector[:80]))
    notes_data(data.get("notes"))
    turns = [
        _conversation(conversation, ("conversation {}", i))
        for i, conversation in enumerate(_list(data.get("conversations"), "its conversations"))
    ]
    if data.get("output_layers") is not None:  # (read only with conversations: at most one per turn)
        count(data["output_layers"], "its output layers", 0, min(turns) if turns else MAX_COUNT)
    return data


# -- runs --------------------------------------------------------------------------------------------
def run_config(text: Any) -> dict[str, Any]:
    """A run's settings (``runs.config``): an object whose ``scan`` and ``generator`` are objects,
    ``probe_names`` names, ``scan.generations`` a count."""
    config = _object(json_value(text, "its settings"), "its settings", optional=False)
    scan = _object(config.get("scan"), "its scan settings")
    if "generations" in scan:
        count(scan["generations"], "its generations", 1, 1_000_000)
    _object(config.get("generator"), "its generator settings")
    _names(config.get("probe_names"), "its probe names")
    return config


def run_row(run_id: Any, created: Any, updated: Any, model: Any, status: Any, message: Any) -> None:
    """Check the plain columns of a ``runs`` row (``updated`` and ``message`` may be ``None``
    where the row is listed without them)."""
    name(run_id, "its id")
    timestamp(created, "its creation time")
    if updated is not None:
        timestamp(updated, "its update time")
    name(model, "its model")
    name(status, "its status")
    name(message, "its message", optional=True, limit=MAX_MESSAGE_CHARS)


# -- probe results, cache, reviews, validations -----------------------------------------------------
def probe_result(text: Any) -> dict[str, Any]:
    """A probe's phase-4 result (``probe_results.result``) with its metrics, marks and names of
    the types :class:`~redline.store.records.ProbeResultRecord` gives them."""
    data = _object(json_value(text, "the result"), "the result", optional=False)
    for metric, value in _object(data.get("metrics"), "its metrics").items():
        where = ("metric {}", metric[:80])
        fields = _object(value, where, optional=False)
        _number(fields.get("value"), ("the value of {}", where))
        _interval(fields.get("ci95"), ("the interval of {}", where))
        for key in ("n", "undetected"):
            if fields.get(key) is not None:
                count(fields[key], ("{} of {}", key, where))
        _object(fields.get("details"), ("the details of {}", where))
    for metric, value in _object(data.get("marks"), "its marks").items():
        where = ("the mark of {}", metric[:80])
        fields = _object(value, where)
        name(fields.get("mark"), where, optional=True)
        _text(fields.get("meaning"), ("the meaning of {}", where))
        _number(fields.get("value"), ("the value of {}", where))
        _interval(fields.get("ci95"), ("the interval of {}", where))
    _text(data.get("goal"), "its goal")
    _text(data.get("not_measured"), "its reason not measured")
    _names(data.get("tags"), "its tags")
    _names(data.get("detectors"), "its detectors")
    versions = data.get("detector_versions")
    if versions is not None:
        for detector, version in _object(versions, "its detector versions").items():
            name(version, ("the version of {}", detector[:80]))
    return data


def cached_outputs(text: Any) -> list[Any]:
    """A cache entry's outputs: a list whose objects are messages as redline writes them (a
    missing output is ``None``; the store keeps any other JSON value a caller put there)."""
    outputs = json_value(text, "the cached outputs")
    if type(outputs) is not list:
        raise Bad("the cached outputs are not a list")
    for i, output in enumerate(outputs):
        if type(output) is dict:
            _message(output, ("cached output {}", i))
    return outputs


def review_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A ``reviews`` row ``(run_id, probe, seq, output, label, verdict, note, reviewer, created)``."""
    run_id, probe, seq, output, label, verdict, note, reviewer, created = row
    name(run_id, "its run")
    name(probe, "its probe")
    count(seq, "its seq", -(2**63), 2**63 - 1)
    count(output, "its output")
    if label not in ("fail", "pass"):
        raise Bad("its label is neither 'fail' nor 'pass'")
    name(verdict, "its verdict", optional=True)
    name(note, "its note", optional=True, limit=MAX_MESSAGE_CHARS)
    name(reviewer, "its reviewer", optional=True)
    timestamp(created, "its time")
    return row


def validation_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A ``validations`` row ``(detector, version, dataset, tp, fp, fn, tn, undetected, created)``."""
    for value, what in zip(row[:3], ("its detector", "its version", "its dataset")):
        name(value, what)
    for value, what in zip(row[3:8], ("tp", "fp", "fn", "tn", "undetected")):
        count(value, what)
    timestamp(row[8], "its time")
    return row


def read(path: Any, row: str, reader: Callable[..., Any], *values: Any) -> Any:
    """``reader(*values)``, a :class:`Bad` value raised as :class:`RowDamaged` naming the store
    at ``path`` and the ``row``."""
    try:
        return reader(*values)
    except Bad as exc:
        raise RowDamaged(f"store {path}: {row} is damaged ({exc}); it was not written by redline") from None
