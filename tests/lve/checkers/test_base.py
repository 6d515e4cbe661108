"""BaseChecker / MultiRunBaseChecker: which arguments is_safe receives, metadata, registry."""

from __future__ import annotations

import importlib.metadata
from importlib.metadata import EntryPoint

import pytest

from redline.lve.checkers import registry
from redline.lve.checkers.base import BaseChecker, MultiRunBaseChecker
from redline.lve.checkers.registry import UnknownCheckerError, checker_names, get_checker_class
from redline.lve.prompt import LVEMessage, Role

PROMPT_IN = [
    LVEMessage(Role.system, "be brief"),
    LVEMessage(Role.user, "q1"),
    LVEMessage(Role.assistant, None, "a1"),
    LVEMessage(Role.user, "q2"),
    LVEMessage(Role.assistant, None, "a2"),
]
PROMPT_OUT = [
    PROMPT_IN[0],
    PROMPT_IN[1],
    LVEMessage(Role.assistant, "r1", "a1"),
    PROMPT_IN[3],
    LVEMessage(Role.assistant, "r2", "a2"),
]
SIMPLE_IN = [LVEMessage(Role.user, "hi")]
SIMPLE_OUT = [*SIMPLE_IN, LVEMessage(Role.assistant, "hello", "response")]


class Recorder(BaseChecker):
    """Records the positional arguments is_safe receives."""

    def __init__(self, **flags):
        super().__init__(**flags)
        self.calls: list[tuple] = []

    def is_safe(self, *args):
        self.calls.append(args)
        return True


def test_default_flags_pass_input_prompt_response_and_params():
    checker = Recorder()
    safe, recorded = checker.invoke_check(SIMPLE_IN, SIMPLE_OUT, {"x": 1})
    assert safe is True and recorded == "hello"
    (args,) = checker.calls
    assert args == (SIMPLE_IN, "hello", {"x": 1})


def test_flags_select_full_prompt_variables_and_drop_response():
    checker = Recorder(prompt_contains_responses=True, get_variables=True, get_response=False)
    _safe, recorded = checker.invoke_check(PROMPT_IN, PROMPT_OUT, {"p": "v"})
    (args,) = checker.calls
    assert args == (PROMPT_OUT, {"a1": "r1", "a2": "r2"}, {"p": "v"})
    assert recorded == {"a1": "r1", "a2": "r2"}  # several named answers are stored as variables


def test_all_flags_on():
    checker = Recorder(get_variables=True)
    checker.invoke_check(PROMPT_IN, PROMPT_OUT, None)
    assert checker.calls == [(PROMPT_IN, "r2", {"a1": "r1", "a2": "r2"}, {})]


def test_default_signature_is_called_positionally():
    class Default(BaseChecker):
        def is_safe(self, prompt, response, param_values=None):
            return prompt == SIMPLE_IN and response == "hello" and param_values == {"k": 2}

    assert Default().invoke_check(SIMPLE_IN, SIMPLE_OUT, {"k": 2}) == (True, "hello")


def test_later_lve_tools_signature_gets_prompt_out():
    class NewStyle(BaseChecker):
        def is_safe(self, prompt_out, param_values=None):
            return self.extract_response_from_prompt(prompt_out) == "hello" and param_values == {"k": 2}

    assert NewStyle().invoke_check(SIMPLE_IN, SIMPLE_OUT, {"k": 2})[0] is True


def test_multi_run_checker_receives_lists_in_run_order():
    class Runs(MultiRunBaseChecker):
        def __init__(self):
            super().__init__(get_variables=True)
            self.seen = None

        def is_safe(self, prompt, response, variables, param_values=None):
            self.seen = (prompt, response, variables, param_values)
            return response == ["one", "two"]

    runs_in = [[LVEMessage(Role.user, "1")], [LVEMessage(Role.user, "2")]]
    runs_out = [
        [*runs_in[0], LVEMessage(Role.assistant, "one", "response")],
        [*runs_in[1], LVEMessage(Role.assistant, "two", "response")],
    ]
    checker = Runs()
    safe, recorded = checker.invoke_check(runs_in, runs_out, {"a": 1})
    assert safe is True and recorded == ["one", "two"]
    assert checker.seen == (runs_in, ["one", "two"], [{"response": "one"}, {"response": "two"}], {"a": 1})
    with pytest.raises(ValueError, match="input chats"):
        checker.invoke_check(runs_in, runs_out[:1], {})


def test_metadata_flags():
    from redline.lve.checkers.consistency import MonotonicityChecker
    from redline.lve.checkers.lambdas import LambdaChecker, MultiRunLambdaChecker
    from redline.lve.checkers.pii import PII_Checker

    assert (LambdaChecker.multi_run, LambdaChecker.multi_variable, LambdaChecker.postprocessing) == (
        False,
        False,
        False,
    )
    assert MultiRunLambdaChecker.multi_run and MultiRunLambdaChecker.is_multi_run()
    assert MonotonicityChecker.multi_variable and MonotonicityChecker.is_multi_variable()
    assert PII_Checker.postprocessing and PII_Checker.has_post_processing()

    class Redacting(BaseChecker):
        def postprocess_response(self, response):
            return "x"

    assert Redacting.postprocessing and not Recorder.postprocessing


def test_registry_finds_every_builtin_by_class_name():
    for name in (
        "LambdaChecker",
        "NumberChecker",
        "RegexChecker",
        "MultiRunLambdaChecker",
        "BiasChecker",
        "MonotonicityChecker",
        "MonotoncityChecker",
        "ExactMatchChecker",
        "FuzzyMatchChecker",
        "RefuseChecker",
        "PII_Checker",
        "ToxicityChecker",
    ):
        assert get_checker_class(name).__name__ == name
        assert name in checker_names()


def test_registry_registers_new_subclasses_and_suggests_close_names():
    class MyOwnChecker(BaseChecker):
        def is_safe(self, prompt, response, param_values=None):
            return True

    assert get_checker_class("MyOwnChecker") is MyOwnChecker
    with pytest.raises(UnknownCheckerError, match="did you mean RegexChecker"):
        get_checker_class("RegexCheker")


def test_registry_loads_third_party_checkers_from_entry_points(monkeypatch):
    ep = EntryPoint(
        name="ThirdPartyChecker", value="redline.lve.checkers.regex:RegexChecker", group=registry.ENTRY_POINT_GROUP
    )
    broken = EntryPoint(name="BrokenChecker", value="no_such_module_xyz:Thing", group=registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "_ENTRY_POINTS", {ep.name: ep, broken.name: broken})
    assert get_checker_class("ThirdPartyChecker").__name__ == "RegexChecker"
    with pytest.raises(UnknownCheckerError, match="BrokenChecker.*failed to load"):
        get_checker_class("BrokenChecker")
    monkeypatch.setattr(
        registry, "_REGISTERED", {k: v for k, v in registry._REGISTERED.items() if k != "ThirdPartyChecker"}
    )


def test_entry_points_are_read_lazily(monkeypatch):
    calls = []
    monkeypatch.setattr(registry, "_ENTRY_POINTS", None)
    # importlib.metadata is imported when the entry points are first read (not when redline starts)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: calls.append(group) or [])
    get_checker_class("RegexChecker")
    assert calls == []  # a built-in never touches the entry points
    with pytest.raises(UnknownCheckerError):
        get_checker_class("NoSuchChecker")
    assert calls == [registry.ENTRY_POINT_GROUP]
