"""LVE checkers (seeds 000/001): ``is_safe`` decides whether one LVE instance is safe.

The constructor flags of :class:`BaseChecker` decide which arguments ``is_safe`` receives, in
this order:

1. ``prompt`` — always: the input chat, or (``prompt_contains_responses=True``) the chat with
   the model's responses filled in;
2. ``response`` — the last model response, when ``get_response=True`` (the default);
3. ``variables`` — every assistant message by variable name, when ``get_variables=True``;
4. ``param_values`` — the prompt parameters, always.

So the default signature is ``is_safe(self, prompt, response, param_values=None) -> bool``.
:class:`MultiRunBaseChecker` subclasses receive lists (one element per run, in run order) for
``prompt``, ``response`` and ``variables``. Checkers written for later LVE tools, with
``is_safe(self, prompt_out, param_values=None)``, are called that way (detected from the
signature) and can use :meth:`BaseChecker.extract_response_from_prompt`.

``postprocess_response`` may rewrite what is stored (e.g. redact PII); it receives a response
string, or a dict of variables, or (multi-run) a list of those.

Every subclass is registered by class name in :mod:`redline.lve.checkers.registry`, which is how
``checker_args.checker_name`` finds it.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from redline.lve.checkers.registry import register_subclass
from redline.lve.errors import CheckerError
from redline.lve.prompt import LVEMessage, Role, variables_of

__all__ = ["BaseChecker", "Chat", "CheckerError", "MultiRunBaseChecker", "extract_variables", "last_response"]

Chat = list[LVEMessage]


def extract_variables(chat: Chat) -> dict[str, str | None]:
    """Assistant messages of ``chat`` by variable name (unnamed ones numbered from ``"0"``)."""
    return variables_of(chat)


def last_response(chat: Chat) -> str:
    """The content of the last message of ``chat`` if it is the assistant's, else ``""``."""
    if chat and chat[-1].role == Role.assistant:
        return chat[-1].content or ""
    return ""


def recorded_response(chat: Chat) -> str | dict[str, str | None]:
    """What an instance stores for ``chat``: every variable (a dict) when more than one
    assistant message carries a variable name, else the last response."""
    named = sum(1 for m in chat if m.role == Role.assistant and m.variable is not None)
    return extract_variables(chat) if named > 1 else last_response(chat)


class BaseChecker:
    """Base of every single-run LVE checker. Subclasses implement :meth:`is_safe`."""

    #: Judges several runs together (receives lists). Set by :class:`MultiRunBaseChecker`.
    multi_run: ClassVar[bool] = False
    #: Reads the variables of multi-variable prompts.
    multi_variable: ClassVar[bool] = False
    #: Rewrites stored responses (computed: True when ``postprocess_response`` is overridden).
    postprocessing: ClassVar[bool] = False
    #: Loaded from an LVE's own ``checker/checker.py``.
    custom: ClassVar[bool] = False
    #: Runs in a worker process of :mod:`redline.lve.isolation` when used for an LVE (its
    #: arguments or code come from a shared file). Only redline's own model-backed checkers,
    #: whose arguments cannot run code, set it False.
    isolated: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "postprocessing" not in cls.__dict__:
            cls.postprocessing = cls.postprocess_response is not BaseChecker.postprocess_response
        register_subclass(cls)

    def __init__(
        self, prompt_contains_responses: bool = False, get_variables: bool = False, get_response: bool = True, **_: Any
    ) -> None:
        # ``**_`` accepts ``extract=...`` and similar arguments of later LVE tools.
        self.prompt_contains_responses = prompt_contains_responses
        self.get_variables = get_variables
        self.get_response = get_response

    # -- metadata (also as the classmethods later LVE tools use) ---------------------------------
    @classmethod
    def is_multi_run(cls) -> bool:
        return cls.multi_run

    @classmethod
    def is_multi_variable(cls) -> bool:
        return cls.multi_variable

    @classmethod
    def has_post_processing(cls) -> bool:
        return cls.postprocessing

    # -- helpers for checkers written against ``is_safe(prompt_out, param_values)`` -------------
    def extract_response_from_prompt(self, prompt: Chat, full: bool = False) -> str:
        """The last response of a chat that includes the model's answers."""
        return last_response(prompt)

    def extract_variables_from_prompt(self, prompt: Chat, full: bool = False) -> dict[str, str | None]:
        """Every assistant message of a chat that includes the model's answers."""
        return extract_variables(prompt)

    # -- invocation ------------------------------------------------------------------------------
    def _flags(self) -> tuple[bool, bool, bool]:
        return (
            getattr(self, "prompt_contains_responses", False),
            getattr(self, "get_response", True),
            getattr(self, "get_variables", False),
        )

    def _call_args(
        self, prompt_in: Any, prompt_out: Any, response: Any, variables: Any, params: dict[str, Any]
    ) -> list[Any]:
        """Positional arguments for ``is_safe`` (see the module docstring for the order)."""
        contains, get_response, get_variables = self._flags()
        wanted = 2 + int(get_response) + int(get_variables)
        signature = inspect.signature(self.is_safe)
        positional = [
            p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())
        first = positional[0].name if positional else ""
        if not varargs and len(positional) < wanted:
            return [prompt_out, params]  # later LVE tools: is_safe(prompt_out, param_values)
        args: list[Any] = [prompt_out if contains or first in ("prompt_out", "prompts_out") else prompt_in]
        if get_response:
            args.append(response)
        if get_variables:
            args.append(variables)
        args.append(params)
        return args

    def invoke_check(
        self, prompt_in: Chat, prompt_out: Chat, param_values: dict[str, Any] | None = None
    ) -> tuple[bool, Any]:
        """Judge one run: call :meth:`is_safe` with the arguments the flags select.

        ``prompt_in`` is the filled input chat, ``prompt_out`` the same chat with every
        assistant message answered. Returns ``(safe, recorded)`` where ``recorded`` is the
        response to store (not yet post-processed).
        """
        params = dict(param_values or {})
        args = self._call_args(prompt_in, prompt_out, last_response(prompt_out), extract_variables(prompt_out), params)
        return bool(self.is_safe(*args)), recorded_response(prompt_out)

    def is_safe(self, *args: Any, **kwargs: Any) -> bool:
        """Whether the instance is safe. Subclasses implement it with the parameters their
        constructor flags select (see the module docstring); by default
        ``is_safe(self, prompt, response, param_values=None)``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement is_safe")

    def postprocess_response(self, response: Any) -> Any:
        """Rewrite a response (string, dict of variables, or a list of those for multi-run)
        before it is stored. The default keeps it."""
        return response

    def __repr__(self) -> str:
        shown = {
            k: v
            for k, v in vars(self).items()
            if not k.startswith("_") and k not in ("prompt_contains_responses", "get_variables", "get_response")
        }
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


class MultiRunBaseChecker(BaseChecker):
    """Base of checkers that judge several runs of one instance together: ``is_safe`` receives
    lists (one element per run, order preserved), and so does ``postprocess_response``."""

    multi_run = True

    # Not substitutable for BaseChecker.invoke_check by design (one chat per run); callers
    # dispatch on ``multi_run``.
    def invoke_check(  # type: ignore[override]
        self, prompt_in: list[Chat], prompt_out: list[Chat], param_values: dict[str, Any] | None = None
    ) -> tuple[bool, list[Any]]:
        """Judge all runs: ``prompt_in``/``prompt_out`` hold one chat per run."""
        if len(prompt_in) != len(prompt_out):
            raise ValueError(f"multi-run check got {len(prompt_in)} input chats but {len(prompt_out)} output chats")
        params = dict(param_values or {})
        responses = [last_response(chat) for chat in prompt_out]
        variables = [extract_variables(chat) for chat in prompt_out]
        args = self._call_args(prompt_in, prompt_out, responses, variables, params)
        return bool(self.is_safe(*args)), [recorded_response(chat) for chat in prompt_out]
