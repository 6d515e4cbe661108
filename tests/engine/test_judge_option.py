"""``--judge SPEC`` / config key ``judge``: the judge replaces refusal.Compliance (the compliance
judge, beside the harm judge) in the selected probes, the stored attempts carry the judge's and
its members' scores, the compliance verdict is the judge's own, and a resumed run rebuilds the
same judge from any folder."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fakes import ScriptedGenerator
from redline.attempt import Conversation
from redline.engine import ConfigError, ScanConfig, build_probes, build_scan_config, load_config, scan
from redline.evaluation import FAIL, PASS
from redline.generators import GeneratorError
from redline.store import Store

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="needs torch and transformers",
)


@pytest.fixture(scope="module")
def judge_folder(tmp_path_factory) -> Path:
    """A tiny classifier (labels safe/unsafe) scoring 0.9 "unsafe" for a text starting with
    "Sure" or "Here", else 0.1."""
    from helpers.tiny_classifier import build_first_word_classifier

    return build_first_word_classifier(tmp_path_factory.mktemp("models") / "judge", ["safe", "unsafe"], positive=1)


def redline(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "redline", *args], capture_output=True, text=True, timeout=180, env=env, cwd=cwd
    )


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    (line,) = [l for l in proc.stderr.splitlines() if l.strip()]
    assert line.startswith("error: ")
    return line


@needs_torch
@pytest.mark.parametrize(
    "answer, reply, verdict, llm_score",
    [
        # the classifier says 0.9 (starts with "Sure"), the LLM judge "refused": mean 0.45, a pass
        ("Sure, here is how.", '{"verdict": "refused", "reason": "no steps"}', PASS, 0.0),
        # the classifier says 0.1, the LLM judge "complied": mean 0.55, a failure
        ("Sorry to hear that.", '{"verdict": "complied", "reason": "it helps"}', FAIL, 1.0),
    ],
)
def test_scan_with_an_ensemble_judge(tmp_path, judge_folder, answer, reply, verdict, llm_score):
    work = tmp_path / "work"
    work.mkdir()
    (work / "judge").symlink_to(judge_folder, target_is_directory=True)
    db = tmp_path / "r.db"
    # test.repeat answers every request with its text: the model under test with the answer, the
    # bare llm judge (--judge-model) with its verdict
    proc = redline(
        "scan", "-m", f"test.repeat:{answer}", "-p", "harmful.Requests", "--sample", "3",
        "--judge", "hf:./judge+llm", "--judge-model", f"test.repeat:{reply}", "--store", str(db), "--json",
        cwd=work,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    (probe,) = summary["probes"]
    assert probe["metrics"]["compliance_rate"]["value"] == (1.0 if verdict == FAIL else 0.0)

    store = Store(db)
    run = store.get_run(summary["run_id"])
    judge = f"hf:{work / 'judge'}+llm"
    assert run.config["scan"]["judge"] == judge  # absolute: a resume finds it from any folder
    assert store.probe_results(run.run_id)["harmful.Requests"].data["detectors"] == ["harm.Substance", judge]
    attempts = list(store.iter_attempts(run.run_id))
    assert len(attempts) == 3
    member = f"ensemble:hf:{work / 'judge'}"
    for attempt in attempts:
        results = attempt.detector_results
        assert set(results) == {"harm.Substance", judge, member, "ensemble:llm"}  # refusal.Compliance was replaced
        assert results[member] == [pytest.approx(0.9 if answer.startswith("Sure") else 0.1, abs=1e-4)]
        assert results["ensemble:llm"] == [llm_score]
        assert results[judge] == [pytest.approx((results[member][0] + llm_score) / 2)]
        assert attempt.notes["compliance"] == [verdict]  # the ensemble's verdict, not a member's
        assert attempt.notes["llm_judge"]["llm"]["reply"] == [reply]


def test_bad_judges_stop_before_anything_runs(tmp_path):
    db = tmp_path / "r.db"
    line = one_error_line(
        redline("scan", "-m", "test.echo", "-p", "harmful", "--judge", "hf:", "--store", str(db), cwd=tmp_path)
    )
    assert "--judge" in line and "hf: needs a model folder" in line
    line = one_error_line(
        redline(
            "scan", "-m", "test.echo", "-p", "harmful", "--judge", "refusal.Complance", "--store", str(db), cwd=tmp_path
        )
    )
    assert "unknown detector 'refusal.Complance'; did you mean refusal.Compliance" in line
    line = one_error_line(
        redline("scan", "-m", "test.echo", "-p", "encoding", "--judge", "llm", "--store", str(db), cwd=tmp_path)
    )
    assert "replaces the refusal.Compliance detector, which none of the selected probes uses" in line
    line = one_error_line(
        redline(
            "scan", "-m", "test.echo", "-p", "harmful", "--judge", "hf:./nothing-here", "--store", str(db), cwd=tmp_path
        )
    )
    assert f"no model folder {tmp_path / 'nothing-here'}" in line
    assert not db.exists() or Store(db).list_runs() == []  # stopped before a run was made
    # a folder that holds no model stops the scan when the judge starts, before any generation
    (tmp_path / "empty").mkdir()
    proc = redline(
        "scan", "-m", "test.echo", "-p", "harmful", "--judge", "hf:./empty", "--store", str(db), cwd=tmp_path
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = [l for l in proc.stderr.splitlines() if l.startswith("error:")]
    assert f"hf:{tmp_path / 'empty'}: cannot load the classifier" in line
    store = Store(db)
    assert all(store.count_attempts(run.run_id) == 0 for run in store.list_runs())


def test_judge_model_is_accepted_for_a_bare_llm_judge():
    probes = build_probes(
        ScanConfig(model="test.echo", probes="harmful.Requests", judge="llm", judge_model="test.echo")
    )
    assert probes[0].detectors == ["harm.Substance", "llm"] and probes[0].model_pool.spec("judge") == "test.echo"


def test_config_file_judge_is_relative_to_the_file(tmp_path):
    path = tmp_path / "conf" / "scan.yaml"
    path.parent.mkdir()
    (tmp_path / "conf" / "judge").mkdir()
    path.write_text(textwrap.dedent("model: test.echo\njudge: hf:./judge + refusal.Compliance\n"))
    values = load_config(path)
    assert values["judge"] == f"hf:{tmp_path / 'conf' / 'judge'}+refusal.Compliance"
    assert build_scan_config(values, {}, {}).judge == values["judge"]
    assert build_scan_config(values, {"judge": "llm"}, {}).judge == "llm"  # the flag wins
    path.write_text("judge: hf:./missing\n")
    with pytest.raises(ConfigError, match=r"scan\.yaml: judge: .*no model folder .*conf/missing"):
        load_config(path)
    path.write_text("judge: llm:nosuchfamily\n")
    with pytest.raises(ConfigError, match=r"scan\.yaml: judge: .*unknown generator 'nosuchfamily'"):
        load_config(path)


@needs_torch
async def test_resume_rebuilds_the_judge_from_the_stored_config(tmp_path, judge_folder, monkeypatch):
    (tmp_path / "judge").symlink_to(judge_folder, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    store = Store(tmp_path / "r.db")
    requests: list[Conversation] = []

    def first_fails(conversation: Conversation) -> bool:
        requests.append(conversation)
        return len(requests) == 1

    flaky = ScriptedGenerator("Sure, here it is.", fail_on=first_fails, error=GeneratorError("HTTP 500"))
    config = ScanConfig(
        model="test.scripted", probes="harmful.Requests", sample=2, judge="hf:./judge+llm:test.repeat:Verdict: refused"
    )
    run_id = await scan(config, store, generator=flaky)
    assert len(list(store.iter_attempts(run_id, errored=True))) == 1
    member = f"ensemble:hf:{tmp_path.resolve() / 'judge'}"
    judge = f"hf:{tmp_path.resolve() / 'judge'}+llm:test.repeat:Verdict: refused"
    assert store.get_run(run_id).config["scan"]["judge"] == judge

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    await scan(None, store, resume=run_id, retry_errors=True, generator=ScriptedGenerator("Sure, here it is."))
    attempts = list(store.iter_attempts(run_id))
    assert len(attempts) == 2 and not any(a.notes.get("error") for a in attempts)
    for attempt in attempts:  # the retried one too: scored by the same judge
        results = attempt.detector_results
        assert set(results) == {"harm.Substance", judge, member, "ensemble:llm:test.repeat:Verdict: refused"}
        assert results[member] == [pytest.approx(0.9, abs=1e-4)]
        assert results["ensemble:llm:test.repeat:Verdict: refused"] == [0.0]
        assert results[judge] == [pytest.approx(0.45, abs=1e-4)] and attempt.notes["compliance"] == [PASS]


@needs_torch
async def test_detector_options_reach_the_members_of_an_ensemble_judge(tmp_path, judge_folder):
    store = Store(tmp_path / "r.db")
    config = ScanConfig(
        model="test.repeat:Sure, here it is.",
        probes="harmful.Requests",
        sample=1,
        judge=f"hf:{judge_folder}+llm:test.repeat:Verdict: complied",
        detector_options={f"hf:{judge_folder}": {"label": "safe"}},  # as --detector-opt hf:PATH.label=safe
    )
    run_id = await scan(config, store)
    (attempt,) = store.iter_attempts(run_id)
    assert attempt.detector_results[f"ensemble:hf:{judge_folder}"] == [pytest.approx(0.1, abs=1e-4)]
    assert attempt.detector_results[config.judge] == [pytest.approx(0.55, abs=1e-4)]
    versions = store.probe_results(run_id)["harmful.Requests"].data.get("detector_versions")
    assert versions[config.judge] == "1(1;label=safe,1)"  # the options are part of the version
