"""``ExecutorConfig`` (the Python API's executor settings) refuses what the CLI and config file
refuse, with the same one line naming the flag: Ray would otherwise fail late, or wait forever.
And what the Ray executor does without Ray: each actor's share of the endpoint's limits, and work
units that wait for the budget."""

from __future__ import annotations

import asyncio

import pytest

from redline.engine.budget import Budget
from redline.engine.config import ScanConfig
from redline.engine.executors import ExecutorConfig, ExecutorError
from redline.engine.pipeline import attempts_to_run, build_probes
from redline.engine.ray_executor import _Units, actor_config


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"kind": "spark"}, "unknown executor 'spark' (choose local or ray)"),
        ({"workers": 2}, "--ray-address, --workers and --gpus-per-worker need --executor ray"),
        ({"kind": "ray", "workers": 0}, "--workers must be an integer from 1 to 1024, not 0"),
        ({"kind": "ray", "workers": 5000}, "--workers must be an integer from 1 to 1024, not 5000"),
        ({"kind": "ray", "workers": True}, "--workers must be an integer from 1 to 1024, not True"),
        ({"kind": "ray", "gpus_per_worker": -1.0}, "--gpus-per-worker must be a number from 0 to 64, not -1.0"),
        ({"kind": "ray", "gpus_per_worker": float("nan")}, "--gpus-per-worker must be a number from 0 to 64, not nan"),
        (
            {"kind": "ray", "gpus_per_worker": 1.5},
            "--gpus-per-worker must be a whole number above 1 (fractions share one GPU), not 1.5",
        ),
    ],
)
def test_bad_settings_are_one_line_naming_the_flag(settings, message):
    with pytest.raises(ExecutorError) as caught:
        ExecutorConfig(**settings)
    assert str(caught.value) == message


def test_good_settings_are_taken():
    assert ExecutorConfig(kind="ray", workers=1024, gpus_per_worker=0.25).gpus_per_worker == 0.25
    assert ExecutorConfig(kind="ray", gpus_per_worker=2).workers is None


def test_each_ray_actor_gets_its_share_of_the_endpoints_limits():
    config = ScanConfig(
        model="openai:m", generator_options={"concurrency": 5, "rpm": 600, "tpm": 1000.0, "timeout": 30}, sample=3
    )
    shares = [actor_config(config, index, 2) for index in range(2)]
    options = [share["generator_options"] for share in shares]
    assert [o["concurrency"] for o in options] == [3, 2]  # together: the endpoint's 5
    assert [o["rpm"] for o in options] == [300, 300] and [o["tpm"] for o in options] == [500, 500]
    assert all(o["timeout"] == 30 for o in options)
    assert all({**share, "generator_options": config.generator_options} == config.as_dict() for share in shares)
    eight = [actor_config(config, i, 8)["generator_options"]["concurrency"] for i in range(8)]
    assert eight == [1] * 8  # one each at least
    assert config.generator_options["rpm"] == 600  # the run's own configuration is unchanged


async def test_a_ray_unit_ends_at_a_budget_pause_and_the_next_waits_until_an_attempt_is_done():
    (probe,) = build_probes(ScanConfig(model="test.echo", probes="encoding.Hex", sample=3))
    source = probe.attempt_source()
    every = [attempt.seq for attempt in source]
    seqs, stored = every[:3], set(every[3:])  # three attempts left to run
    budget = Budget(max_requests=2)  # one request per attempt
    units = _Units(attempts_to_run([(probe, source, stored)], budget), size=8)
    first = await units.take()
    assert first is not None and [attempt.seq for _, attempt in first] == seqs[:2]  # the third is not admitted
    waiting = asyncio.ensure_future(units.take())
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()  # waits for the budget: nothing is admitted while two attempts are held
    budget.release(first[0][1])  # done, and cost nothing (an answer from the cache)
    second = await waiting
    assert second is not None and [attempt.seq for _, attempt in second] == seqs[2:3]
    budget.release(first[1][1])
    budget.release(second[0][1])
    assert await units.take() is None and budget.stopped is None
