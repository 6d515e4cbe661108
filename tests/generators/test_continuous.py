"""Continuous batching (redline.generators.continuous) on a tiny Llama built in memory."""

from __future__ import annotations

import threading
import time
import warnings

import pytest

from helpers.tiny_lm import tiny_llama
from redline.generators.continuous import BatchRequest, ContinuousBatcher, cache_keyword

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

MAX_NEW = 12


@pytest.fixture(scope="module")
def model():
    return tiny_llama()


def reference(model, ids: list[int], eos: int | None = None, max_new: int = MAX_NEW) -> list[int]:
    """What transformers' own generate() answers for ``ids`` alone (greedy)."""
    with torch.inference_mode():
        out = model.generate(
            input_ids=torch.tensor([ids]),
            max_new_tokens=max_new,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=0,
        )
    tokens = out[0, len(ids) :].tolist()
    if eos is not None and eos in tokens:
        tokens = tokens[: tokens.index(eos)]
    return tokens


def batcher(model, **options) -> ContinuousBatcher:
    settings = {
        "device": "cpu",
        "max_rows": 4,
        "max_new_tokens": MAX_NEW,
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 0,
        "eos_ids": [],
        "cache_class": transformers.DynamicCache,
    } | options
    return ContinuousBatcher(torch, model, **settings)


class Collector:
    """Callbacks that record results (and their order) and signal when all have arrived."""

    def __init__(self, expected: int) -> None:
        self.results: dict[str, list[list[int]]] = {}
        self.errors: dict[str, BaseException] = {}
        self.order: list[str] = []
        self.running_at_end: dict[str, int] = {}
        self.expected = expected
        self.all_done = threading.Event()
        self.lock = threading.Lock()

    def request(self, name: str, ids: list[int], n: int = 1, engine: ContinuousBatcher | None = None, **kw):
        def done(outputs: list[list[int]]) -> None:
            with self.lock:
                self.results[name] = outputs
                self.order.append(name)
                if engine is not None:
                    self.running_at_end[name] = engine.running
                self._check()

        def failed(exc: BaseException) -> None:
            with self.lock:
                self.errors[name] = exc
                self._check()

        return BatchRequest(ids, n, done, failed, **kw)

    def _check(self) -> None:
        if len(self.results) + len(self.errors) >= self.expected:
            self.all_done.set()

    def wait(self) -> None:
        assert self.all_done.wait(30), f"only {self.order} finished"


def run(engine: ContinuousBatcher, prompts: dict[str, list[int]], n: int = 1, **request) -> Collector:
    """Submit every prompt, wait for every answer, stop the worker; the collector holds them."""
    collector = Collector(len(prompts))
    engine.start()
    try:
        for name, ids in prompts.items():
            engine.submit(collector.request(name, ids, n=n, engine=engine, **request))
        collector.wait()
    finally:
        engine.stop()
    return collector


def watch_decoding(engine: ContinuousBatcher, before=None, after=None) -> None:
    """Call ``before()`` and ``after()`` around every decoding step of ``engine``."""
    original = engine._decode

    def watching() -> None:
        if before is not None:
            before()
        original()
        if after is not None:
            after()

    engine._decode = watching


PROMPTS = {
    "short": [5, 9, 14],
    "medium": [7, 7, 21, 33, 40, 41, 8, 19],
    "long": [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27],
    "other": [60, 61, 2, 90],
    "fifth": [30, 31, 32, 33, 34, 35],
    "sixth": [44, 3],
}


def test_greedy_rows_answer_as_generate_does_alone_whatever_joins_when(model):
    engine = batcher(model, max_rows=3)
    stepped = threading.Event()
    watch_decoding(engine, after=stepped.set)
    collector = Collector(len(PROMPTS))
    engine.start()
    try:
        for i, (name, ids) in enumerate(PROMPTS.items()):
            stepped.clear()
            engine.submit(collector.request(name, ids))
            if i % 2:  # arrivals spread over the run: the next rows join a batch already decoding
                assert stepped.wait(30)
        collector.wait()
    finally:
        engine.stop()
    assert not collector.errors
    for name, ids in PROMPTS.items():
        assert collector.results[name] == [reference(model, ids)], name


def test_a_row_that_ends_leaves_at_once_and_is_answered_before_the_others(model):
    long_ref = reference(model, PROMPTS["long"])
    short_ref = reference(model, PROMPTS["short"])
    # an end token the short prompt produces early and the long one never does
    eos = next(t for t in short_ref[1:4] if t not in long_ref)
    engine = batcher(model, max_rows=4, eos_ids=[eos])
    collector = Collector(2)
    engine.start()
    try:
        engine.submit(collector.request("long", PROMPTS["long"], engine=engine))
        engine.submit(collector.request("short", PROMPTS["short"], engine=engine))
        collector.wait()
    finally:
        engine.stop()
    assert collector.results["short"] == [reference(model, PROMPTS["short"], eos=eos)]
    assert len(collector.results["short"][0]) < 4
    assert collector.results["long"] == [long_ref]
    assert collector.order == ["short", "long"]
    # the short row had left while the long one was still running
    assert collector.running_at_end["short"] == 1


def test_a_row_that_ends_leaves_in_place_the_last_row_taking_its_place(model):
    refs = {name: reference(model, PROMPTS[name]) for name in ("short", "medium", "long")}
    # an end token the short prompt produces early and the others never do
    eos = next(t for t in refs["short"][1:4] if t not in refs["medium"] and t not in refs["long"])
    engine = batcher(model, max_rows=4, eos_ids=[eos])
    steps: list[tuple[tuple[int, list[str]], tuple[int, list[str]]]] = []  # (pointer, rows) around each step

    def state() -> tuple[int, list[str]]:
        return engine._cache.layers[0].buffers[0].data_ptr(), [row.request.name for row in engine._rows]

    watch_decoding(
        engine, before=lambda: steps.append((state(), state())), after=lambda: steps.append((steps.pop()[0], state()))
    )
    collector = Collector(3)
    for name in ("short", "medium", "long"):  # all waiting before the worker starts: one prefill
        request = collector.request(name, PROMPTS[name], engine=engine)
        request.name = name
        engine.submit(request)
    engine.start()
    try:
        collector.wait()
    finally:
        engine.stop()
    assert collector.results["short"] == [reference(model, PROMPTS["short"], eos=eos)]
    assert collector.results["medium"] == [refs["medium"]] and collector.results["long"] == [refs["long"]]
    before, after = next(step for step in steps if len(step[1][1]) < len(step[0][1]))
    assert before[1] == ["short", "medium", "long"] and after[1] == ["long", "medium"]
    assert after[0] == before[0]  # the last row moved into the first place: no new buffer


def test_never_more_rows_than_max_rows_and_waiting_requests_take_free_places(model):
    engine = batcher(model, max_rows=2)
    seen = []
    watch_decoding(engine, before=lambda: seen.append(engine.running))
    collector = run(engine, PROMPTS)
    assert len(collector.results) == len(PROMPTS)
    assert max(seen) == 2 and min(seen) >= 1


def test_rows_of_one_prompt_share_one_prefill_and_common_prefixes_are_computed_once(model):
    prefix = list(range(40, 56))  # 16 shared tokens, as a chat template's system prompt
    prompts = {"a": prefix + [3, 4], "b": prefix + [5], "c": prefix + [6, 7, 8]}
    engine = batcher(model, max_rows=8)
    collector = Collector(4)
    engine.start()
    try:
        for name, ids in prompts.items():
            engine.submit(collector.request(name, ids))
        engine.submit(collector.request("repeated", prompts["a"], n=3))
        collector.wait()
    finally:
        engine.stop()
    for name, ids in prompts.items():
        assert collector.results[name] == [reference(model, ids)]
    assert collector.results["repeated"] == [reference(model, prompts["a"])] * 3
    assert engine.stats["shared_tokens"] >= 16
    # every distinct prompt token was computed at most once: the prefix once, then each suffix
    distinct = len(prefix) + sum(len(ids) - len(prefix) for ids in prompts.values())
    assert engine.stats["prefill_tokens"] <= distinct


def test_a_sampled_row_does_not_depend_on_the_rows_beside_it(model):
    def sample(names: list[str]) -> dict[str, list[list[int]]]:
        engine = batcher(model, temperature=0.9, top_p=0.9, seed=7)
        return run(engine, {name: PROMPTS[name] for name in names}, n=2).results

    alone = sample(["medium"])
    together = sample(["long", "medium", "short"])
    assert alone["medium"] == together["medium"]
    # two rows of one request are two different draws
    assert alone["medium"][0] != alone["medium"][1]


def test_a_cancelled_request_leaves_the_batch_unanswered(model):
    engine = batcher(model, max_rows=4, max_new_tokens=200)
    cancelled = threading.Event()
    collector = Collector(1)
    engine.start()
    try:
        engine.submit(collector.request("gone", PROMPTS["long"], cancelled=cancelled.is_set))
        engine.submit(collector.request("kept", PROMPTS["short"]))
        cancelled.set()
        collector.wait()
        deadline = time.monotonic() + 5
        while engine.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engine.running == 0
    finally:
        engine.stop()
    assert "gone" not in collector.results and "kept" in collector.results


def test_a_failed_forward_pass_fails_its_rows_and_the_batcher_goes_on(model):
    engine = batcher(model)
    original = engine.model
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("out of memory (simulated)")
        return original(*args, **kwargs)

    engine.model = flaky
    engine.model.config = original.config
    first = Collector(1)
    engine.start()
    try:
        engine.submit(first.request("first", PROMPTS["medium"]))
        first.wait()
        assert "out of memory" in str(first.errors["first"])
        second = Collector(1)
        engine.submit(second.request("second", PROMPTS["medium"]))
        second.wait()
    finally:
        engine.stop()
    assert second.results["second"] == [reference(model, PROMPTS["medium"])]


def test_stop_ends_the_worker_after_its_current_step_and_fails_what_was_running(model):
    engine = batcher(model, max_new_tokens=10_000)
    steps = [0]
    decoding = threading.Event()

    def count() -> None:
        steps[0] += 1
        decoding.set()

    watch_decoding(engine, after=count)
    collector = Collector(1)
    engine.start()
    engine.submit(collector.request("endless", PROMPTS["short"]))
    assert decoding.wait(30)
    before = steps[0]
    engine.stop(timeout=30)
    assert not engine._thread.is_alive()
    assert steps[0] - before <= 1  # at most the step under way when stop was asked
    assert engine.running == 0 and not collector.results
    assert "stopped" in str(collector.errors["endless"])


def test_supports_plain_dynamic_caches_only(model):
    assert ContinuousBatcher.supports(torch, model, "cpu")

    class NoCache(torch.nn.Module):
        def forward(self, **kwargs):
            raise TypeError("unexpected keyword argument 'logits_to_keep'")

    assert not ContinuousBatcher.supports(torch, NoCache(), "cpu")


def test_the_cache_is_passed_under_the_name_the_model_takes():
    class Renamed:
        def forward(self, input_ids=None, cache=None, use_cache=None): ...

    class Older:
        def forward(self, input_ids=None, past_key_values=None, use_cache=None): ...

    assert cache_keyword(Renamed()) == "cache"
    assert cache_keyword(Older()) == "past_key_values"


def test_decoding_uses_no_deprecated_cache_argument(model):
    prefix = list(range(40, 56))  # shared: the prefix's own prefill pass runs too
    prompts = {"one": prefix + [3, 4], "two": prefix + [5]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        collector = run(batcher(model, max_rows=8), prompts)
    assert collector.results["one"] == [reference(model, prompts["one"])]
    assert not [w for w in caught if "past_key_values" in str(w.message)]


def test_decoding_keeps_no_autograd_graph(model):
    """Without inference mode on the worker thread every step's cache would hold the graph of all
    steps before it (memory grows with every token, gigabytes on a real model)."""
    engine = batcher(model)
    seen = []

    def look() -> None:
        if engine._cache is not None:
            keys = engine._cache.layers[0].keys
            seen.append((torch.is_inference_mode_enabled(), keys.requires_grad, keys.grad_fn))

    watch_decoding(engine, after=look)
    run(engine, {"one": PROMPTS["medium"]})
    assert seen and all(state == (True, False, None) for state in seen)


def test_decoding_writes_into_spare_room_instead_of_copying_the_cache_each_step(model):
    engine = batcher(model, max_new_tokens=40)
    buffers = []

    def look() -> None:
        if engine._cache is not None:
            buffers.append(engine._cache.layers[0].buffers[0].data_ptr())

    watch_decoding(engine, after=look)
    collector = run(engine, {"one": PROMPTS["medium"]})
    assert collector.results["one"] == [reference(model, PROMPTS["medium"], max_new=40)]
    # 39 steps of one row: a new buffer only when the spare room (64 positions) runs out
    assert len(buffers) >= 30 and len(set(buffers)) <= 2


def test_a_prefill_pass_takes_a_bounded_number_of_prompt_tokens(model):
    engine = batcher(model, max_rows=8, prefill_tokens=12)
    groups = []
    original = engine._prefill

    def watching_prefill(prompts):
        groups.append(sum(len(p) for p in prompts))
        return original(prompts)

    engine._prefill = watching_prefill
    collector = Collector(len(PROMPTS))
    engine.start()
    try:
        for name, ids in PROMPTS.items():
            engine.submit(collector.request(name, ids))
        collector.wait()
    finally:
        engine.stop()
    for name, ids in PROMPTS.items():
        assert collector.results[name] == [reference(model, ids)], name
    # several passes, each within the bound unless one prompt alone is longer
    assert len(groups) >= 3 and all(size <= 12 or size == len(PROMPTS["long"]) for size in groups)


def test_a_cuda_device_prefills_wider_passes_than_other_devices(model):
    from redline.generators import continuous

    on_cpu, on_mps, on_gpu = batcher(model), batcher(model, device="mps"), batcher(model, device="cuda:0")
    assert on_cpu.prefill_tokens == on_mps.prefill_tokens == continuous.PREFILL_TOKENS
    assert on_gpu.prefill_tokens == continuous.CUDA_PREFILL_TOKENS > on_cpu.prefill_tokens
    assert batcher(model, device="cuda:0", prefill_tokens=12).prefill_tokens == 12  # told another


def test_on_cuda_the_worker_attends_without_cudnn_and_restores_the_setting_after(model):
    assert torch.backends.cuda.cudnn_sdp_enabled()
    with batcher(model, device="cuda:0")._attention_kernels():
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()
    assert torch.backends.cuda.cudnn_sdp_enabled()
    with batcher(model)._attention_kernels():  # on the CPU nothing changes
        assert torch.backends.cuda.cudnn_sdp_enabled()


def test_a_prefill_pass_takes_the_oldest_prompt_and_those_of_like_length(model):
    prompts = {"a": PROMPTS["long"], "b": PROMPTS["sixth"], "c": list(range(70, 86)), "d": PROMPTS["short"]}
    engine = batcher(model, max_rows=8, prefill_tokens=40)  # rows x the longest prompt of a pass
    passes = []
    original = engine._prefill
    engine._prefill = lambda distinct: passes.append(sorted(map(len, distinct))) or original(distinct)
    collector = Collector(len(prompts))
    for name, ids in prompts.items():  # all waiting, in this order, before the worker starts
        engine.submit(collector.request(name, ids))
    engine.start()
    try:
        collector.wait()
    finally:
        engine.stop()
    for name, ids in prompts.items():
        assert collector.results[name] == [reference(model, ids)], name
    # in arrival order one pass would be 4 rows as wide as the 17 tokens of "a": 68 positions,
    # 30 of them padding; by length, "a" (the oldest) with "c", then "b" with "d": 40 positions
    assert passes == [[16, 17], [2, 3]]


@pytest.mark.parametrize("candidates", [256, 2])
def test_nucleus_sampling_draws_the_nucleus_in_proportion(model, monkeypatch, candidates):
    """top_p 0.8 over probabilities .4 .3 .2 .1: the nucleus is the first three tokens, drawn
    as .4/.9, .3/.9, .2/.9; with 2 candidates the nucleus reaches past them (the full-sort path)."""
    from redline.generators import continuous

    monkeypatch.setattr(continuous, "NUCLEUS_CANDIDATES", candidates)
    engine = batcher(model, temperature=1.0, top_p=0.8)
    probs = torch.tensor([0.1, 0.4, 0.0001, 0.3, 0.2])
    logits = probs.log().unsqueeze(0).repeat(2, 1)
    rows = [continuous._Row(BatchRequest([1], 1, print, print), i) for i in range(2)]
    for row in rows:
        row.generator = torch.Generator().manual_seed(row.index)
    counts = {}
    for _ in range(3000):
        for token in engine._sample(logits, rows):
            counts[token] = counts.get(token, 0) + 1
    assert set(counts) == {1, 3, 4}  # never outside the nucleus
    for token, p in ((1, 0.4), (3, 0.3), (4, 0.2)):
        assert abs(counts[token] / 6000 - p / 0.9) < 0.03, counts


def test_sampling_without_nucleus_draws_from_the_whole_distribution(model):
    engine = batcher(model, temperature=1.0, top_p=1.0)
    logits = torch.tensor([[0.5, 0.25, 0.25]]).log()
    from redline.generators.continuous import _Row

    row = _Row(BatchRequest([1], 1, print, print), 0, generator=torch.Generator().manual_seed(3))
    draws = [engine._sample(logits, [row])[0] for _ in range(3000)]
    assert abs(draws.count(0) / 3000 - 0.5) < 0.04 and set(draws) == {0, 1, 2}


def test_rows_join_only_while_their_cache_fits_the_memory_budget(model):
    from redline.generators.continuous import GROWTH

    probe = batcher(model)
    per_row = (len(PROMPTS["long"]) + MAX_NEW + GROWTH) * probe.token_bytes
    assert probe.token_bytes == 2 * 2 * 2 * 8 * 4  # layers x kv heads x head size x (keys, values) x float32
    engine = batcher(model, max_rows=8, cache_bytes=int(2.5 * per_row))
    seen = []
    watch_decoding(engine, before=lambda: seen.append(engine.running))
    collector = run(engine, PROMPTS)
    assert not collector.errors, collector.errors
    assert len(collector.results) == len(PROMPTS) and max(seen) == 2


def test_a_row_that_ends_at_its_first_token_as_it_joins_leaves_the_running_rows_as_they_were(model):
    refs = {name: reference(model, ids) for name, ids in PROMPTS.items()}
    # a prompt whose first token ends it, and that token appears in no answer of the running rows
    ender, eos = next(
        (name, refs[name][0])
        for name in PROMPTS
        if name not in ("long", "medium") and refs[name][0] not in refs["long"] + refs["medium"]
    )
    engine = batcher(model, max_rows=4, eos_ids=[eos])
    stepped = threading.Event()
    watch_decoding(engine, after=stepped.set)
    collector = Collector(3)
    engine.start()
    try:
        engine.submit(collector.request("long", PROMPTS["long"]))
        assert stepped.wait(30)  # the long row is decoding: the next two join a running batch
        engine.submit(collector.request(ender, PROMPTS[ender]))
        engine.submit(collector.request("medium", PROMPTS["medium"]))
        collector.wait()
    finally:
        engine.stop()
    assert not collector.errors
    assert collector.results[ender] == [[]]
    assert collector.results["long"] == [refs["long"]]
    assert collector.results["medium"] == [refs["medium"]]


def test_a_row_that_has_ended_is_answered_even_when_reshaping_the_batch_then_fails(model):
    refs = {name: reference(model, PROMPTS[name]) for name in ("short", "long")}
    eos = next(t for t in refs["short"][1:4] if t not in refs["long"])
    engine = batcher(model, max_rows=4, eos_ids=[eos])
    original = engine._select

    def failing(keep: list[int]) -> None:
        engine._select = original
        raise RuntimeError("cannot reshape")

    engine._select = failing
    collector = Collector(2)
    for name in ("short", "long"):
        engine.submit(collector.request(name, PROMPTS[name]))
    engine.start()
    try:
        collector.wait()
    finally:
        engine.stop()
    assert collector.results == {"short": [reference(model, PROMPTS["short"], eos=eos)]}
    assert str(collector.errors["long"]) == "cannot reshape"


def test_a_failure_while_dropping_a_cancelled_request_fails_the_rows_and_the_batcher_goes_on(model):
    engine = batcher(model, max_rows=4, max_new_tokens=200)
    cancelled = threading.Event()
    original = engine._select

    def failing(keep: list[int]) -> None:
        engine._select = original
        raise RuntimeError("out of memory")

    stepped = threading.Event()
    watch_decoding(engine, after=stepped.set)
    first = Collector(2)
    engine.start()
    try:
        engine.submit(first.request("gone", PROMPTS["long"], cancelled=cancelled.is_set))
        engine.submit(first.request("beside", PROMPTS["medium"]))
        assert stepped.wait(30)
        engine._select = failing
        cancelled.set()  # the worker drops the cancelled row, and reshaping the batch fails
        deadline = time.monotonic() + 30
        while "beside" not in first.errors and time.monotonic() < deadline:
            time.sleep(0.01)
        later = Collector(1)
        engine.submit(later.request("later", PROMPTS["short"]))
        later.wait()
    finally:
        engine.stop()
    assert str(first.errors["beside"]) == "out of memory"
    assert later.results == {"later": [reference(model, PROMPTS["short"], max_new=200)]}
