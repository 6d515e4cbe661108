"""The LVE format: test.json forms, prompt files, substitution, and malformed input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import redline.lve.model as model
from helpers.lve_repos import FIXTURE_LVES, over_repos
from redline.lve.errors import CustomCodeRefused, LVEFormatError
from redline.lve.model import find_lves, load_lve, parse_instance
from redline.lve.prompt import Role, placeholders, substitute

BASE = {
    "description": "d",
    "model": "test.echo",
    "checker_args": {"checker_name": "RegexChecker", "pattern": "x", "match_safe": False},
    "prompt": [{"role": "user", "content": "hi {name}"}],
    "prompt_parameters": ["name"],
}


def write_lve(
    folder: Path, test: dict | str, instances: list | str | None = None, files: dict[str, str] | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.json").write_text(test if isinstance(test, str) else json.dumps(test, indent=4))
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    if instances is not None:
        (folder / "instances").mkdir(exist_ok=True)
        text = instances if isinstance(instances, str) else "\n".join(json.dumps(i) for i in instances) + "\n"
        (folder / "instances" / "i.jsonl").write_text(text)
    return folder


def test_substitute_is_format_like_but_inert():
    assert substitute("{a} + {b} = {{x}} [0-9]{{1,6}}", {"a": 1, "b": "2"}) == "1 + 2 = {x} [0-9]{1,6}"
    assert substitute("{0} {x.__class__} {missing} {", {"x": 1}) == "{0} {x.__class__} {missing} {"
    assert placeholders("{a}{{b}}{c}") == {"a", "c"}


def test_prompt_forms(tmp_path):
    as_string = load_lve(write_lve(tmp_path / "s", {**BASE, "prompt": "hello {name}"}))
    assert [(m.role, m.content) for m in as_string.prompt] == [(Role.user, "hello {name}")]
    assert as_string.prompts_for({"name": "Ann"})[0][0].content == "hello Ann"

    jsonl = '{"role": "system", "content": "sys"}\n{"role": "user", "content": "hi {name}"}\n'
    from_jsonl = load_lve(
        write_lve(
            tmp_path / "j",
            {**{k: v for k, v in BASE.items() if k != "prompt"}, "prompt_file": "test.prompt"},
            files={"test.prompt": jsonl},
        )
    )
    assert [m.role for m in from_jsonl.prompt] == [Role.system, Role.user]

    single = '{\n  "role": "user",\n  "content": "one {name}"\n}\n'
    from_single = load_lve(
        write_lve(
            tmp_path / "o",
            {**{k: v for k, v in BASE.items() if k != "prompt"}, "prompt_file": "test.prompt"},
            files={"test.prompt": single},
        )
    )
    assert from_single.prompt[0].content == "one {name}"

    text = "Plain text prompt for {name}.\nSecond line.\n"
    from_text = load_lve(
        write_lve(
            tmp_path / "t",
            {**{k: v for k, v in BASE.items() if k != "prompt"}, "prompt_file": "test.prompt"},
            files={"test.prompt": text},
        )
    )
    assert from_text.prompt[0].role == Role.user and from_text.prompt[0].content == text


def test_image_and_multi_variable_prompts(tmp_path):
    test = {
        **BASE,
        "prompt": [
            {"role": "user", "content": "Which mountain?", "image_url": "{img}"},
            {"role": "assistant", "variable": "first"},
            {"role": "user", "content": "Sure?"},
            {"role": "assistant", "variable": "second"},
        ],
        "prompt_parameters": ["img"],
    }
    lve = load_lve(write_lve(tmp_path / "v", test))
    (chat,) = lve.prompts_for({"img": "https://example.org/m.png"})
    assert chat[0].image_url == "https://example.org/m.png"
    assert [m.variable for m in chat if m.role == Role.assistant] == ["first", "second"]


def test_multi_run_prompt_with_repetitions(tmp_path):
    test = {k: v for k, v in BASE.items() if k != "prompt"}
    test["multi_run_prompt"] = [
        {"name": "a", "prompt": [{"role": "user", "content": "A {name}"}], "repetitions": 2},
        {"name": "b", "prompt": "B {name}"},
    ]
    lve = load_lve(write_lve(tmp_path / "m", test))
    assert lve.is_multi_run
    assert [chat[0].content for chat in lve.prompts_for({"name": "x"})] == ["A x", "A x", "B x"]


def test_templated_checker_arguments_take_instance_values(tmp_path):
    test = {
        **BASE,
        "checker_args": {"checker_name": "RegexChecker", "pattern": "^{name}[0-9]{{1,2}}$", "match_safe": True},
    }
    lve = load_lve(write_lve(tmp_path / "r", test))
    checker = lve.checker(args={"name": "ab", "temperature": 0.3})
    assert checker.pattern.pattern == "^ab[0-9]{1,2}$"
    assert lve.checker(args={"name": "cd"}).pattern.pattern == "^cd[0-9]{1,2}$"


def test_split_args_and_missing_parameters(tmp_path):
    lve = load_lve(write_lve(tmp_path / "p", BASE))
    assert lve.split_args({"name": "x", "temperature": 0.1}) == ({"name": "x"}, {"temperature": 0.1})
    with pytest.raises(LVEFormatError, match=r"i.jsonl:3: missing prompt parameter\(s\) name"):
        lve.param_values({"temperature": 0.1}, "i.jsonl:3")


@pytest.mark.parametrize(
    ("test", "needle"),
    [
        ('{"description": "d", "model": "m",\n  "checker_args": {oops}\n}', ":2: bad JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ({k: v for k, v in BASE.items() if k != "checker_args"}, "missing field 'checker_args'"),
        ({k: v for k, v in BASE.items() if k != "description"}, "missing field 'description'"),
        ({**BASE, "checker_args": {"pattern": "x"}}, "needs a 'checker_name'"),
        ({**BASE, "checker_args": {"checker_name": "NoSuchChecker"}}, "unknown checker 'NoSuchChecker'"),
        (
            {**BASE, "checker_args": {"checker_name": "RegexCheckr", "pattern": "x", "match_safe": True}},
            "did you mean RegexChecker",
        ),
        (
            {**BASE, "checker_args": {"checker_name": "RegexChecker", "pattern": "(unclosed", "match_safe": True}},
            "bad regex in 'pattern'",
        ),
        (
            {
                **BASE,
                "checker_args": {"checker_name": "RegexChecker", "pattern": "x", "match_safe": True, "flags": "Q"},
            },
            "unknown regex flag",
        ),
        ({**BASE, "checker_args": {"checker_name": "RegexChecker", "pattern": "x"}}, "needs argument(s) match_safe"),
        (
            {**BASE, "checker_args": {"checker_name": "RegexChecker", "pattern": "x", "match_safe": True, "colour": 1}},
            "has no argument(s) colour",
        ),
        (
            {**BASE, "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r: __import__('os')"}},
            "refused lambda in 'func'",
        ),
        ({**BASE, "prompt_parameters": "name"}, "'prompt_parameters' must be a list"),
        ({**BASE, "model": 3}, "'model' must be a string, not int"),
        ({**BASE, "prompt_file": "test.prompt"}, "exactly one of 'prompt', 'prompt_file', 'multi_run_prompt'"),
        (
            {**{k: v for k, v in BASE.items() if k != "prompt"}, "prompt_file": "missing.prompt"},
            "prompt_file 'missing.prompt': no such file",
        ),
        ({**BASE, "prompt": [{"role": "robot", "content": "x"}]}, "unknown role 'robot'"),
        ({**BASE, "prompt": [{"role": "user"}]}, "message 1 (user) has no 'content'"),
        ({**BASE, "prompt": []}, "the prompt is empty"),
        (
            {
                **BASE,
                "prompt": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant"},
                    {"role": "user", "content": "q"},
                    {"role": "assistant"},
                ],
            },
            "each needs a 'variable'",
        ),
        (
            {
                **{k: v for k, v in BASE.items() if k != "prompt"},
                "multi_run_prompt": [{"prompt": "x", "repetitions": 0}],
            },
            "'repetitions' must be a positive integer",
        ),
    ],
)
def test_malformed_test_json_is_one_line_naming_file_line_and_problem(tmp_path, test, needle):
    folder = write_lve(tmp_path / "bad", test)
    with pytest.raises(LVEFormatError) as info:
        load_lve(folder)
    message = str(info.value)
    assert "\n" not in message
    assert re.match(rf"{re.escape(str(folder / 'test.json'))}:[0-9]+: ", message), message
    assert needle in message


def test_checker_errors_point_at_the_line_of_the_argument(tmp_path):
    test = {**BASE, "checker_args": {"checker_name": "LambdaChecker", "func": "lambda r: open('x')"}}
    folder = write_lve(tmp_path / "line", test)
    text = (folder / "test.json").read_text().splitlines()
    line = next(i for i, l in enumerate(text, start=1) if '"func"' in l)
    with pytest.raises(
        LVEFormatError,
        match=rf"test.json:{line}: checker LambdaChecker: refused lambda in 'func': name 'open' is forbidden",
    ):
        load_lve(folder)


def test_prompt_file_errors_name_the_line(tmp_path):
    test = {k: v for k, v in BASE.items() if k != "prompt"}
    test["prompt_file"] = "test.prompt"
    folder = write_lve(
        tmp_path / "pf",
        test,
        files={"test.prompt": '{"role": "user", "content": "a"}\n{"role": "bot", "content": "b"}\n'},
    )
    with pytest.raises(LVEFormatError, match=r"test.prompt:2: message 1 has unknown role 'bot'"):
        load_lve(folder)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("{oops", ":1: bad JSON"),
        ('"just a string"', ":1: an instance must be a JSON object"),
        ('{"args": {}, "passed": true}', ":1: missing field 'response'"),
        ('{"args": {}, "response": "ok"}', ":1: missing field 'passed'"),
        ('{"args": {}, "response": "ok", "passed": "yes"}', ":1: 'passed' must be true or false"),
        ('{"args": [], "response": "ok", "passed": true}', ":1: 'args' must be an object"),
        ('{"args": {}, "response": 5, "passed": true}', ":1: 'response' must be a string, a list or an object"),
    ],
)
def test_malformed_instance_line_names_file_and_line(tmp_path, line, needle):
    path = tmp_path / "i.jsonl"
    with pytest.raises(LVEFormatError) as info:
        parse_instance(line, path, 1)
    assert str(info.value).startswith(str(path)) and needle in str(info.value) and "\n" not in str(info.value)


def test_instances_yield_errors_in_place_and_go_on(tmp_path):
    good = {"args": {"name": "a"}, "response": "ok", "passed": True}
    lve = load_lve(write_lve(tmp_path / "inst", BASE, json.dumps(good) + "\n\n{broken\n" + json.dumps(good) + "\n"))
    items = list(lve.instances())
    assert [type(i).__name__ for i in items] == ["Instance", "LVEFormatError", "Instance"]
    assert [i.line for i in items if not isinstance(i, LVEFormatError)] == [1, 4]
    assert "i.jsonl:3: bad JSON" in str(items[1])


CUSTOM = """
from lve.checkers.base import BaseChecker
from lve.utils.importutils import ensure_installed
import pathlib

pathlib.Path(__file__).with_name("imported").write_text("yes")

class ShoutChecker(BaseChecker):
    def is_safe(self, prompt_out, param_values=None) -> bool:
        return self.extract_response_from_prompt(prompt_out).isupper()
"""


def test_custom_checker_is_imported_only_with_trust_code(tmp_path):
    test = {**BASE, "checker_args": {"checker_name": "ShoutChecker"}}
    folder = write_lve(tmp_path / "c", test, files={"checker/checker.py": CUSTOM})
    lve = load_lve(folder)  # loading does not import it
    assert not (folder / "checker" / "imported").exists()
    with pytest.raises(CustomCodeRefused, match="ShoutChecker .*--trust-code"):
        lve.checker()
    assert not (folder / "checker" / "imported").exists()
    checker = lve.checker(trust_code=True)
    assert (folder / "checker" / "imported").exists()
    assert type(checker).custom is True
    from redline.lve.checkers.registry import UnknownCheckerError, get_checker_class

    with pytest.raises(UnknownCheckerError):  # custom classes stay with their LVE
        get_checker_class("ShoutChecker")
    import sys

    assert "lve" not in sys.modules  # the lve.* shims are removed after the import


def test_find_lves(tmp_path):
    write_lve(tmp_path / "a" / "x", BASE)
    write_lve(tmp_path / "b" / "y", BASE)
    write_lve(tmp_path / ".git" / "z", BASE)
    assert [p.parent.name for p in find_lves(tmp_path)] == ["x", "y"]
    assert find_lves(tmp_path / "a" / "x" / "test.json") == [tmp_path / "a" / "x" / "test.json"]
    with pytest.raises(LVEFormatError, match="no such file or folder"):
        find_lves(tmp_path / "nope")


@pytest.mark.parametrize(
    ("root", "count", "first", "monotonic", "identifier", "regex_lve", "fragment"),
    over_repos(
        (
            8,
            "dummy/arithmetic/multiply/hf--smollm2-135m-instruct",
            "reliability/consistency/boiling_point/openai--gpt-4o-mini",
            "temp([0-9]+)",
            "security/secrets/live_api_key/openai--gpt-4o-mini",
            "[0-9A-Za-z]{24}",  # {{24}} in test.json
        ),
        (
            6,
            "dummy/math/a_plus_b/openai--gpt-35-turbo",
            "reliability/consistency/monotonicity/openai--gpt-35-turbo",
            "answer([0-9]+)",
            "dummy/strings/car_plates_regex/openai--gpt-35-turbo",
            "[0-9]{1,6}$",  # {{1,6}} in test.json
        ),
    ),
)
def test_samples_load(root, count, first, monotonic, identifier, regex_lve, fragment):
    names = sorted(load_lve(p, root=root).name for p in find_lves(root))
    assert names[0] == first and len(names) == count
    assert load_lve(root / monotonic).checker().answer_identifier_regex.pattern == identifier
    assert fragment in load_lve(root / regex_lve).checker().pattern.pattern


def test_every_lve_and_instance_of_the_repository_parses(lve_samples):
    for test in find_lves(lve_samples):
        lve = load_lve(test, root=lve_samples)
        items = list(lve.instances())
        assert items and not [i for i in items if isinstance(i, LVEFormatError)], lve.name
        assert {i.passed for i in items} <= {True, False}


def test_the_fixture_covers_the_format():
    """tests/data/lves keeps every form the LVE tests rely on."""
    lves = {load_lve(p, root=FIXTURE_LVES).name: load_lve(p, root=FIXTURE_LVES) for p in find_lves(FIXTURE_LVES)}
    checkers = {lve.checker_name for lve in lves.values()}
    assert {
        "LambdaChecker",
        "MultiRunLambdaChecker",
        "RegexChecker",
        "MonotonicityChecker",
        "PII_Checker",
        "NumberChecker",
        "ExactMatchChecker",
    } <= checkers
    both = lves["dummy/arithmetic/multiply_both_orders/hf--smollm2-135m-instruct"]
    assert [(r.name, r.repetitions) for r in both.multi_run_prompt] == [("x times y", 2), ("y times x", 1)]
    boiling = lves["reliability/consistency/boiling_point/openai--gpt-4o-mini"]
    assert '"prompt_file": "test.prompt"' in boiling.source
    assert [m.variable for m in boiling.prompt if m.role == Role.assistant] == ["temp1", "temp2", "temp3", "temp4"]
    custom = lves["reliability/format/word_budget/hf--smollm2-135m-instruct"]
    assert custom.custom_checker_file() == custom.directory / "checker" / "checker.py"
    with pytest.raises(CustomCodeRefused):
        custom.checker()
    assert type(custom.checker(trust_code=True)).custom is True
    verdicts: dict[str, set[bool]] = {}
    for name, lve in lves.items():
        verdicts[name] = {i.passed for i in lve.instances()}
    assert all(v == {True, False} for v in verdicts.values()), verdicts  # every LVE records both verdicts
    pii = lves["privacy/pii_leakage/staff_directory/openai--gpt-4o-mini"]
    stored = [i.response for i in pii.instances() if not i.passed]
    assert stored and all("<EMAIL_ADDRESS>" in r or "<PHONE_NUMBER>" in r for r in stored)  # recorded redacted


# -- hostile files: size, nesting, encoding ----------------------------------------------------------
GOOD_INSTANCE = json.dumps({"args": {"name": "a"}, "response": "ok", "passed": True})


def test_a_hostile_instance_line_is_an_error_on_that_line_only(tmp_path, monkeypatch):
    lines = [
        GOOD_INSTANCE.encode(),
        ('{"args": {}, "response": ' + "[" * 5000 + "]" * 5000 + ', "passed": true}').encode(),
        GOOD_INSTANCE.encode(),
        b'{"args": {}, "response": "caf\xe9", "passed": true}',
        ('{"args": {}, "response": ' + "1" * 5000 + ', "passed": true}').encode(),
        ('{"args": {}, "response": "' + "x" * 12_000 + '", "passed": true}').encode(),
        GOOD_INSTANCE.encode(),
    ]
    folder = write_lve(tmp_path / "hostile", BASE, instances=[])
    (folder / "instances" / "i.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    monkeypatch.setattr(model, "MAX_INSTANCE_LINE_BYTES", 12_000)
    items = list(load_lve(folder).instances())
    assert [i.line for i in items if not isinstance(i, LVEFormatError)] == [1, 3, 7]
    errors = [str(i) for i in items if isinstance(i, LVEFormatError)]
    where = folder / "instances" / "i.jsonl"
    assert errors == [
        f"{where}:2: values nested more than 64 levels deep",
        f"{where}:4: not UTF-8 text (byte 0xe9 at column 30)",
        f"{where}:5: a value cannot be read: Exceeds the limit (4300 digits) for integer string conversion: "
        "value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit",
        f"{where}:6: too long (more than 12000 bytes in one line)",
    ]


def test_an_instances_file_over_the_limit_is_one_error_and_other_files_still_load(tmp_path, monkeypatch):
    folder = write_lve(tmp_path / "big", BASE, instances=[json.loads(GOOD_INSTANCE)] * 3)
    (folder / "instances" / "j.jsonl").write_text(GOOD_INSTANCE + "\n")
    monkeypatch.setattr(model, "MAX_INSTANCES_FILE_BYTES", len(GOOD_INSTANCE) + 1)
    items = list(load_lve(folder).instances())
    assert [type(i).__name__ for i in items] == ["LVEFormatError", "Instance"]
    assert str(items[0]) == f"{folder / 'instances' / 'i.jsonl'}: too large (more than {len(GOOD_INSTANCE) + 1} bytes)"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (json.dumps({**BASE, "tags": [{"name": "x", "value": json.loads("[" * 70 + "]" * 70)}]}), ": values nested"),
        ('{"description": ' + "[" * 100_000 + "]" * 100_000 + "}", ": values nested more than 64 levels deep"),
        (b'{\n"description": "caf\xe9"}', ":2: not UTF-8 text (byte 0xe9 at column 20)"),
        (b'{"description": "d"}\x00', ":1: a NUL byte in text"),
    ],
    ids=["deep-tags", "very-deep", "latin-1", "nul"],
)
def test_a_hostile_test_json_is_one_line_naming_it(tmp_path, content, problem):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "test.json").write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(LVEFormatError) as info:
        load_lve(folder)
    assert str(info.value).startswith(f"{folder / 'test.json'}{problem}") and "\n" not in str(info.value)


def test_test_json_and_prompt_files_are_size_capped(tmp_path, monkeypatch):
    assert model.MAX_LVE_FILE_BYTES == 4 * 1024 * 1024
    test = {k: v for k, v in BASE.items() if k != "prompt"} | {"prompt_file": "test.prompt"}
    folder = write_lve(tmp_path / "cap", test, files={"test.prompt": "hello {name}"})
    size = (folder / "test.json").stat().st_size
    monkeypatch.setattr(model, "MAX_LVE_FILE_BYTES", size)
    assert load_lve(folder).prompt[0].content == "hello {name}"
    (folder / "test.prompt").write_text("x" * (size + 1))
    with pytest.raises(LVEFormatError, match=rf"test.prompt: too large \(more than {size} bytes\)$"):
        load_lve(folder)
    monkeypatch.setattr(model, "MAX_LVE_FILE_BYTES", size - 1)
    with pytest.raises(LVEFormatError, match=rf"test.json: too large \(more than {size - 1} bytes\)$"):
        load_lve(folder)


@pytest.mark.parametrize("name", ["../secret.txt", "/etc/hostname", "link.prompt"])
def test_a_prompt_file_outside_the_lve_folder_is_refused(tmp_path, name):
    (tmp_path / "secret.txt").write_text("a secret the LVE must not send to a model")
    test = {k: v for k, v in BASE.items() if k != "prompt"} | {"prompt_file": name}
    folder = write_lve(tmp_path / "lve", test)
    (folder / "link.prompt").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(
        LVEFormatError, match=r"test.json:[0-9]+: prompt_file .*: the prompt file must be in the LVE's folder"
    ):
        load_lve(folder)


def test_a_deeply_nested_prompt_file_names_its_line(tmp_path):
    test = {k: v for k, v in BASE.items() if k != "prompt"} | {"prompt_file": "test.prompt"}
    deep = '{"role": "user", "content": "a"}\n{"role": "user", "content": ' + "[" * 100 + "]" * 100 + "}\n"
    folder = write_lve(tmp_path / "deep", test, files={"test.prompt": deep})
    with pytest.raises(LVEFormatError, match=r"test.prompt:2: values nested more than 64 levels deep"):
        load_lve(folder)
