"""Hostile files and values, as an attacker would hand them to redline: a YAML alias bomb, files
too large or nested too deeply, bytes that are not UTF-8, a garbage Parquet file, options no
probe has. Each must end the command at once with exit status 1 and one ``error:`` line naming
the file (and line) and the problem: never a traceback, an "internal error" (70), a hang or
gigabytes of memory.

The commands run in-process through ``redline.cli.main.main`` (``helpers.cli.cli_runner``), so
the whole path from the file to the printed line is exercised. Bounds are proven with
inputs just past the real limits, or past a limit lowered for the test.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import redline.datasets as datasets
import redline.lve.model as lve_model
from helpers.cli import CliRun, cli_runner
from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.lve import load_lve
from redline.lve.errors import LVEFormatError
from redline.store import Store

MIB = 1024 * 1024


@pytest.fixture
def run_cli(monkeypatch, capsys) -> CliRun:
    """``run_cli(*args)`` → (exit status, stdout, non-empty stderr lines) of ``redline ARGS``."""
    return cli_runner(monkeypatch, capsys)


@pytest.fixture
def fails_with(run_cli):
    """``fails_with(*args)`` → the one error line's text after ``error: ``, asserting exit 1."""

    def check(*args: str) -> str:
        code, _, lines = run_cli(*args)
        assert code == 1, (code, lines)
        assert len(lines) == 1 and lines[0].startswith("error: "), lines
        assert "internal error" not in lines[0] and "Traceback" not in lines[0]
        return lines[0][len("error: ") :]

    return check


def scan(tmp_path: Path, *args: str) -> list[str]:
    return ["scan", "-m", "test.echo", "--store", str(tmp_path / "runs.db"), *args]


def alias_bomb(key: str) -> str:
    """The issue's bomb: nine anchors, each a list of nine aliases of the one before."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + f"\n{key}: *i\n"


# -- YAML: configuration files, --gen-opt, --detector-opt -------------------------------------------
def test_a_yaml_alias_bomb_config_fails_fast_with_one_line(tmp_path, fails_with):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb("probes"))
    assert bomb.stat().st_size < 600  # stands for 9**9 strings, gigabytes once expanded
    started = time.perf_counter()
    message = fails_with(*scan(tmp_path, "--config", str(bomb)))
    assert time.perf_counter() - started < 10  # milliseconds in fact: nothing is expanded
    assert message == f"{bomb}: line 6: the YAML stands for more than 100000 values once its aliases are expanded"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"probes: &p [harmful, *p]\n", "line 1: an alias refers to a collection that holds it"),
        (b"generator: {extra_body: " + b"[" * 100_000 + b"}\n", "line 1: values nested more than 64 levels deep"),
        (b"- " * 100_000 + b"x\n", "line 1: values nested more than 64 levels deep"),
        (b"model: caf\xe9\n", "line 1: not UTF-8 text (byte 0xe9 at column 11)"),
        (b"model: x\x00\n", "line 1: a NUL byte in text (is it a binary or UTF-16 file?)"),
        ("model: x\n".encode("utf-16"), "line 1: not UTF-8 text (byte 0xff at column 1)"),
        (b"seed: " + b"9" * 5000 + b"\n", "line 1: invalid YAML: cannot read this value (Exceeds the limit"),
        (b"model: !!python/object/apply:os.system [id]\n", "line 1: invalid YAML: could not determine a constructor"),
        (b"model: !!binary aGk=\n", "line 1: invalid YAML: the tag 'tag:yaml.org,2002:binary' is not supported"),
        (b"seed: 1\n" + b"#" * MIB + b"\n", "too large (more than 1 MiB)"),
    ],
    ids=[
        "recursive-alias",
        "deep-flow",
        "deep-block",
        "latin-1",
        "nul",
        "utf-16",
        "huge-int",
        "python-tag",
        "binary",
        "size",
    ],
)
def test_a_hostile_config_file_is_one_line_naming_it(tmp_path, fails_with, content, problem):
    path = tmp_path / "scan.yaml"
    path.write_bytes(content)
    assert fails_with(*scan(tmp_path, "--config", str(path))).startswith(f"{path}: {problem}")


def test_a_config_file_exactly_at_the_size_limit_is_read(tmp_path, run_cli):
    path = tmp_path / "scan.yaml"
    head = b"probes: encoding.Hex\nsample: 1\n"
    path.write_bytes(head + b"#" * (MIB - len(head) - 1) + b"\n")
    code, _, lines = run_cli(*scan(tmp_path, "--config", str(path)))
    assert code == 0, lines


def test_gen_opt_and_detector_opt_alias_bombs_are_one_line(tmp_path, fails_with):
    message = fails_with(*scan(tmp_path, "--gen-opt", "stop=" + alias_bomb("x")))
    assert message.startswith("--gen-opt stop: line 6: the YAML stands for more than 100000 values")
    message = fails_with(*scan(tmp_path, "--detector-opt", "refusal.Compliance.x=" + alias_bomb("x")))
    assert message.startswith("--detector-opt refusal.Compliance.x: line 6: the YAML stands for more than 100000")


# -- probe_options -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ("{encoding.Hex: {payload: x}}", "probe_options.encoding.Hex: unknown option 'payload' (options:"),
        ("{encoding.Hex: {smaple: 2}}", "unknown option 'smaple' (did you mean 'sample'?"),
        ("{encoding.Hexx: {sample: 2}}", "probe_options: unknown probe 'encoding.Hexx' (did you mean 'encoding.Hex'?)"),
        ("{encoding.Hex: {1: 2}}", "probe_options.encoding.Hex: 1 is not an option name"),
        ("{encoding.Hex: {sample: many}}", "probe_options.encoding.Hex.sample must be an integer >= 1, not 'many'"),
        ("{encoding.Hex: {detectors: 5}}", "probe_options.encoding.Hex.detectors must be a name"),
        ("{jailbreak.Persona: {dataset_columns: 5}}", "dataset_columns must be a mapping of field: column"),
        ("{encoding.Hex: {evaluator: x}}", "probe_options.encoding.Hex: unknown option 'evaluator'"),
    ],
    ids=["unknown-key", "typo", "unknown-probe", "int-key", "bad-sample", "bad-detectors", "bad-columns", "internal"],
)
def test_a_bad_probe_option_names_the_key_and_the_probe(tmp_path, fails_with, options, problem):
    path = tmp_path / "scan.yaml"
    path.write_text(f"probes: encoding.Hex\nprobe_options: {options}\n")
    message = fails_with(*scan(tmp_path, "--config", str(path)))
    assert message.startswith(f"{path}: probe_options") and problem in message


# -- datasets ----------------------------------------------------------------------------------------
def dataset_scan(tmp_path: Path, path: Path) -> list[str]:
    return scan(tmp_path, "-p", "dataset.Prompts", "--dataset", str(path))


def test_a_csv_field_over_128_kib_is_read(tmp_path, run_cli):
    path = tmp_path / "long.csv"
    path.write_text('prompt\n"' + "a" * (200 * 1024) + '"\n')
    code, _, lines = run_cli(*dataset_scan(tmp_path, path))
    assert code == 0, lines


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("nul.csv", b"prompt\nok\nbin\x00ary\n", "line 3: a NUL byte in text"),
        ("latin.tsv", b"prompt\ncaf\xe9\n", "line 2: not UTF-8 text (byte 0xe9 at column 4)"),
        ("deep.jsonl", b'{"prompt": "a", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "line 1: values nested"),
        ("int.jsonl", b'{"prompt": "a"}\n{"prompt": ' + b"7" * 5000 + b"}\n", "line 2: a value cannot be read"),
        ("deep.json", b'[{"prompt": "a", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]", "values nested more than"),
        ("garbage.parquet", bytes(range(256)) * 16, "not a readable Parquet file (Parquet magic bytes not found"),
        ("empty.parquet", b"", "not a readable Parquet file (Parquet file size is 0 bytes)"),
        ("magic.parquet", b"PAR1" + b"\xff" * 64 + b"PAR1", "not a readable Parquet file ("),
    ],
    ids=["nul", "latin-1", "deep-jsonl", "huge-int", "deep-json", "garbage-parquet", "empty-parquet", "fake-parquet"],
)
def test_a_hostile_dataset_is_one_line_naming_it(tmp_path, fails_with, name, content, problem):
    path = tmp_path / name
    path.write_bytes(content)
    assert fails_with(*dataset_scan(tmp_path, path)).startswith(f"{path}: {problem}")


def test_a_truncated_parquet_file_is_one_line(tmp_path, fails_with):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    whole = tmp_path / "whole.parquet"
    pq.write_table(pa.table({"prompt": [f"prompt {i}" for i in range(100)]}), whole)
    path = tmp_path / "cut.parquet"
    path.write_bytes(whole.read_bytes()[:-10])
    assert fails_with(*dataset_scan(tmp_path, path)).startswith(f"{path}: not a readable Parquet file (")


def test_dataset_bounds_just_past_a_lowered_limit(tmp_path, fails_with, monkeypatch):
    monkeypatch.setattr(datasets, "MAX_VALUE_BYTES", 1000)
    field = tmp_path / "field.csv"
    field.write_text('prompt\n"' + ("x" * 600 + "\n") * 2 + '"\n')  # lines under the limit, the field over it
    assert fails_with(*dataset_scan(tmp_path, field)) == f"{field}: line 3: a field is too large (more than 1000 bytes)"
    line = tmp_path / "line.jsonl"
    line.write_text(json.dumps({"prompt": "x" * 1000}) + "\n")
    assert fails_with(*dataset_scan(tmp_path, line)) == f"{line}: line 1: too long (more than 1000 bytes in one line)"
    monkeypatch.setattr(datasets, "MAX_DATASET_BYTES", 100)
    big = tmp_path / "big.csv"
    big.write_text("prompt\n" + "hello\n" * 20)
    assert fails_with(*dataset_scan(tmp_path, big)) == f"{big}: too large (more than 100 bytes)"


# -- LVE repositories -------------------------------------------------------------------------------
LVE_TEST = {
    "description": "d",
    "model": "test.echo",
    "checker_args": {"checker_name": "RegexChecker", "pattern": "x", "match_safe": False},
    "prompt": [{"role": "user", "content": "say {word}"}],
    "prompt_parameters": ["word"],
}
GOOD = json.dumps({"args": {"word": "a"}, "response": "a", "passed": True})


def test_a_hostile_test_json_is_one_line_for_scan_lve(tmp_path, fails_with):
    folder = tmp_path / "lves" / "deep" / "model"
    folder.mkdir(parents=True)
    (folder / "test.json").write_text('{"description": ' + "[" * 100_000 + "]" * 100_000 + "}")
    message = fails_with(*scan(tmp_path, "--lve", str(tmp_path / "lves")))
    assert message == f"{folder / 'test.json'}: values nested more than 64 levels deep"


def test_hostile_instance_lines_cost_only_their_own_line(tmp_path, monkeypatch):
    folder = tmp_path / "lve"
    (folder / "instances").mkdir(parents=True)
    (folder / "test.json").write_text(json.dumps(LVE_TEST))
    monkeypatch.setattr(lve_model, "MAX_INSTANCE_LINE_BYTES", 4000)
    (folder / "instances" / "i.jsonl").write_bytes(
        b"\n".join(
            [
                GOOD.encode(),
                b'{"args": {}, "response": ' + b"[" * 1000 + b"]" * 1000 + b', "passed": true}',
                b'{"args": {}, "response": "\xff\xfe", "passed": true}',
                b'{"args": {}, "response": "' + b"x" * 5000 + b'", "passed": true}',
                GOOD.encode(),
            ]
        )
    )
    items = list(load_lve(folder).instances())
    assert [i.line if not isinstance(i, LVEFormatError) else str(i).split(": ")[1] for i in items] == [
        1,
        "values nested more than 64 levels deep",
        "not UTF-8 text (byte 0xff at column 27)",
        "too long (more than 4000 bytes in one line)",
        5,
    ]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"word": "a"}\n\n{"word": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", ":3: values nested more than 64"),
        (b'{"word": "a"}\n["a"]\n', ":2: each line must be a JSON object of prompt parameters, not list"),
        (b'{"word": "caf\xe9"}\n', ":1: not UTF-8 text"),
        (b"{oops\n", ":1: bad JSON: Expecting property name enclosed in double quotes (column 2)"),
    ],
    ids=["deep", "not-an-object", "latin-1", "bad-json"],
)
def test_a_hostile_lve_params_file_is_one_line(tmp_path, fails_with, content, problem):
    folder = tmp_path / "lve"
    folder.mkdir()
    (folder / "test.json").write_text(json.dumps(LVE_TEST))
    params = tmp_path / "params.jsonl"
    params.write_bytes(content)
    message = fails_with("lve", "record", str(folder), "--model", "test.echo", "--params", str(params))
    assert message.startswith(f"{params}{problem}"), message


def test_a_prompt_file_cannot_read_outside_its_lve(tmp_path, fails_with):
    secret = tmp_path / "credentials"
    secret.write_text("aws_secret_access_key = do-not-send")
    folder = tmp_path / "lves" / "leak" / "model"
    folder.mkdir(parents=True)
    test = {k: v for k, v in LVE_TEST.items() if k != "prompt"} | {"prompt_file": "../../../credentials"}
    (folder / "test.json").write_text(json.dumps(test, indent=1))
    message = fails_with(*scan(tmp_path, "--lve", str(tmp_path / "lves")))
    assert message.startswith(f"{folder / 'test.json'}:") and "the prompt file must be in the LVE's folder" in message


# -- labels files: detectors validate, review --import ----------------------------------------------
@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("labels.csv", b"response,label\nok,1\n\xff,0\n", "line 3: not UTF-8 text"),
        ("labels.jsonl", b'{"response": "a", "label": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", "line 1: values nested"),
        ("labels.tsv", b"response\tlabel\nok\x00\t1\n", "line 2: a NUL byte in text"),
    ],
    ids=["latin-1", "deep", "nul"],
)
def test_a_hostile_labelled_file_is_one_line(tmp_path, fails_with, name, content, problem):
    path = tmp_path / name
    path.write_bytes(content)
    assert fails_with("detectors", "validate", str(path), "-d", "refusal.Keywords").startswith(f"{path}: {problem}")


def test_a_labelled_csv_field_over_128_kib_is_read(tmp_path, run_cli):
    path = tmp_path / "labels.csv"
    path.write_text('response,label\n"' + "I cannot help. " * 10_000 + '",0\n')
    code, _, lines = run_cli("detectors", "validate", str(path), "-d", "refusal.Keywords", "--json")
    assert code == 0, lines


@pytest.fixture
def review_store(tmp_path) -> tuple[Path, str]:
    db = tmp_path / "review.db"
    with Store(db) as store:
        run = store.create_run("test.echo", {"probe_names": ["harmful.Requests"], "scan": {"generations": 1}})
        attempt = Attempt(prompt="p", probe_classname="harmful.Requests", seq=0)
        attempt.status = ATTEMPT_COMPLETE
        attempt.outputs = ["o"]
        attempt.notes["evaluation"] = ["pass"]
        attempt.detector_results["refusal.Compliance"] = [0.0]
        store.save_attempt(run, attempt)
    return db, run


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("l.csv", b'probe,seq,label,note\nharmful.Requests,0,fail,"' + b"n" * (200 * 1024) + b'"\n', None),
        (
            "l.jsonl",
            b'{"probe": "harmful.Requests", "seq": 0, "label": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",
            ":1: values",
        ),
        ("l.csv", b"probe,seq,label\nharmful.Requests,0,f\xe4il\n", ":2: not UTF-8 text"),
        (
            "l.jsonl",
            b'{"probe": "harmful.Requests", "seq": ' + b"1" * 5000 + b', "label": "fail"}\n',
            ":1: a value cannot",
        ),
        (
            "l.jsonl",
            b'\n{"probe": "harmful.Requests", "seq": 0, "label": fail}\n',
            ":2: not valid JSON (Expecting value",
        ),
        ("l.jsonl", b'["harmful.Requests", 0, "fail"]\n', ":1: not a JSON object"),
    ],
    ids=["long-note", "deep", "latin-1", "huge-int", "bad-json", "not-an-object"],
)
def test_a_hostile_labels_import_is_one_line(tmp_path, run_cli, review_store, name, content, problem):
    db, run = review_store
    path = tmp_path / name
    path.write_bytes(content)
    code, _, lines = run_cli("review", run, "--store", str(db), "--import", str(path))
    if problem is None:  # a long note is fine: the labels are saved
        assert code == 0, lines
        return
    assert code == 1 and len(lines) == 1 and lines[0].startswith(f"error: {path}{problem}"), lines
