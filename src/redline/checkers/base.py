"""LVE checkers (seeds 000/001): ``is_safe`` decides whether one LVE instance is safe.

The constructor flags of :class:`BaseChecker` decide which arguments ``is_safe`` receives:

* ``prompt`` always — the input prompt, or the chat with the model's responses filled in when
  ``prompt_contains_responses=True``;
* ``response`` (the last model response) when ``get_response=True`` (the default);
* ``variables`` (every assistant variable of a multi-variable prompt) when ``get_variables=True``;
* ``param_values``, the prompt parameters, always.

:class:`MultiRunBaseChecker` subclasses receive lists (one element per run, in order) for
``prompt``, ``response`` and ``variables``. ``postprocess_response`` may rewrite what is stored
(e.g. redact PII). Every subclass is registered by class name (as ``checker_args.checker_name``
uses it); third-party checkers come through the ``redline.checkers`` entry-point group.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar

from redline.lve.prompt import LVEMessage, Role

__all__ = ["BaseChecker", "MultiRunBaseChecker", "extract_variables", "CHECKER_REGISTRY", "get_checker_class"]

CHECKER_REGISTRY: dict[str, type["BaseChecker"]] = {}


def extract_variables(prompt: list[LVEMessage]) -> dict[str, str | None]:
    """Assistant messages of a chat by variable name (unnamed ones numbered from 0)."""
    variables: dict[str, str | None] = {}
    for message in prompt:
        if message.role == Role.assistant:
            name = message.variable if message.variable is not None else str(len(variables))
            variables[name] = message.content
    return variables


class BaseChecker:
    """Base of every single-run LVE checker. Subclasses implement :meth:`is_safe`."""

    #: Class metadata shown by ``redline list`` and the docs.
    multi_run: ClassVar[bool] = False
    multi_variable: ClassVar[bool] = False
    postprocessing: ClassVar[bool] = False
    #: A checker that executes code from the LVE itself (custom checker.py).
    custom: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):
            CHECKER_REGISTRY.setdefault(cls.__name__, cls)

    def __init__(self, prompt_contains_responses: bool = False, get_variables: bool = False, get_response: bool = True) -> None:
        self.prompt_contains_responses = prompt_contains_responses
        self.get_variables = get_variables
        self.get_response = get_response

    def get_args(self, prompt_in: list[LVEMessage], prompt_out: list[LVEMessage], param_values: dict | None = None) -> tuple[dict, Any]:
        """The keyword arguments for :meth:`is_safe`, and the response to record (the last
        response as a string, or every variable as a dict when the chat has several)."""
        kwargs: dict[str, Any] = {"prompt": prompt_out if self.prompt_contains_responses else prompt_in}
        assistant_turns = sum(1 for m in prompt_out if m.role == Role.assistant)
        response = prompt_out[-1].content if prompt_out else None
        recorded: Any = response
        if self.get_response:
            kwargs["response"] = response
        if self.get_variables or assistant_turns > 1:
            variables = extract_variables(prompt_out)
            if self.get_variables:
                kwargs["variables"] = variables
            if assistant_turns > 1:
                recorded = variables
        kwargs["param_values"] = dict(param_values or {})
        return kwargs, recorded

    def invoke_check(self, prompt_in: list[LVEMessage], prompt_out: list[LVEMessage], param_values: dict | None = None) -> tuple[bool, Any]:
        """Call :meth:`is_safe` with the arguments the flags select; returns (safe, response)."""
        kwargs, recorded = self.get_args(prompt_in, prompt_out, param_values)
        return bool(self.is_safe(**kwargs)), recorded

    def is_safe(self, prompt: list[LVEMessage], response: str, param_values: dict[str, Any] | None = None) -> bool:
        raise NotImplementedError

    def postprocess_response(self, response: Any) -> Any:
        """Rewrite a response (string, list or dict of variables) before it is stored."""
        return response


class MultiRunBaseChecker(BaseChecker):
    """Base of checkers that judge several runs of one instance together; ``is_safe`` receives
    lists (one element per run, order preserved) and ``postprocess_response`` a list."""

    multi_run = True

    def invoke_check(self, prompts_in: list[list[LVEMessage]], prompts_out: list[list[LVEMessage]], param_values: dict | None = None) -> tuple[bool, list]:  # type: ignore[override]
        if len(prompts_in) != len(prompts_out):
            raise ValueError("multi-run check needs one output chat per input chat")
        args: dict[str, Any] = defaultdict(list)
        recorded = []
        for prompt_in, prompt_out in zip(prompts_in, prompts_out):
            kwargs, response = self.get_args(prompt_in, prompt_out, param_values)
            for key, value in kwargs.items():
                if key != "param_values":
                    args[key].append(value)
            recorded.append(response)
        args["param_values"] = dict(param_values or {})
        return bool(self.is_safe(**args)), recorded


def get_checker_class(name: str) -> type[BaseChecker]:
    """The checker class registered as ``name`` (built-in or entry point); KeyError if none."""
    import redline.checkers.lve_checkers  # noqa: F401 - registers the built-ins

    if name in CHECKER_REGISTRY:
        return CHECKER_REGISTRY[name]
    from importlib.metadata import entry_points

    for ep in entry_points(group="redline.checkers"):
        if ep.name == name:
            cls = ep.load()
            CHECKER_REGISTRY[name] = cls
            return cls
    raise KeyError(name)
