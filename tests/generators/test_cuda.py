"""Local generation on a CUDA GPU: the same answers and the same scan as on the CPU (skipped
where torch sees no CUDA GPU, as on CI)."""

from __future__ import annotations

import copy
import json
import sqlite3
import threading
from pathlib import Path

import pytest

from helpers.tiny_lm import tiny_llama
from redline.generators.continuous import BatchRequest, ContinuousBatcher

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA GPU")

MAX_NEW = 12
PROMPTS = [[5, 9, 14], [7, 7, 21, 33, 40, 41, 8, 19], list(range(11, 28)), [60, 61, 2, 90], [44, 3]]


@pytest.fixture(scope="module")
def gpu_model():
    return tiny_llama(hidden_size=64).to("cuda")


def alone(model, ids: list[int]) -> list[int]:
    """transformers' own greedy generate() for ``ids`` alone, on the model's device."""
    with torch.inference_mode():
        out = model.generate(
            input_ids=torch.tensor([ids], device=model.device), max_new_tokens=MAX_NEW, do_sample=False, pad_token_id=0
        )
    return out[0, len(ids) :].tolist()


def batched(model, device: str) -> list[list[int]]:
    """Every prompt of :data:`PROMPTS` through one continuous batcher on ``device`` (greedy)."""
    engine = ContinuousBatcher(
        torch,
        model,
        device=device,
        max_rows=3,
        max_new_tokens=MAX_NEW,
        temperature=0.0,
        top_p=1.0,
        seed=0,
        eos_ids=[],
        cache_class=transformers.DynamicCache,
    )
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []
    finished = threading.Event()

    def answered(index: int):
        def done(outputs: list[list[int]]) -> None:
            results[index] = outputs[0]
            if len(results) + len(errors) == len(PROMPTS):
                finished.set()

        return done

    def failed(exc: BaseException) -> None:
        errors.append(exc)
        finished.set()

    engine.start()
    try:
        for index, ids in enumerate(PROMPTS):
            engine.submit(BatchRequest(ids, 1, answered(index), failed))
        assert finished.wait(60)
    finally:
        engine.stop()
    assert not errors, errors
    return [results[i] for i in range(len(PROMPTS))]


def test_the_batcher_serves_a_model_on_a_cuda_gpu(gpu_model):
    assert ContinuousBatcher.supports(torch, gpu_model, "cuda")


def test_greedy_rows_batched_on_a_cuda_gpu_answer_as_generate_does_alone(gpu_model):
    answers = batched(gpu_model, "cuda")
    assert answers == [alone(gpu_model, ids) for ids in PROMPTS]


def test_greedy_rows_on_a_cuda_gpu_answer_as_on_the_cpu(gpu_model):
    on_cpu = copy.deepcopy(gpu_model).to("cpu")
    assert batched(gpu_model, "cuda") == batched(on_cpu, "cpu")


@pytest.mark.parametrize("device", ["cuda", "auto"])
def test_a_scan_of_a_local_model_on_the_gpu_stores_every_attempt(tmp_path: Path, capsys, device: str):
    from helpers.tiny_lm import build_tiny_lm
    from redline.cli.main import main

    model = build_tiny_lm(tmp_path / "tiny-lm")
    db = tmp_path / "s.db"
    args = ["scan", "-m", f"hf:{model}", "--gen-opt", f"device={device}", "--gen-opt", "max_tokens=8"]
    args += ["-p", "harmful.Requests", "--sample", "4", "--generations", "2", "--store", str(db), "--json"]
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    assert exit_info.value.code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["status"] == "complete"
    (probe,) = summary["probes"]
    assert probe["attempts"] == 4 and probe["outputs"] == 8 and probe["errored"] == 0
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM attempts WHERE errored = 0").fetchone()[0] == 4
