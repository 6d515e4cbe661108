"""``ExecutorConfig`` (the Python API's executor settings) refuses what the CLI and config file
refuse, with the same one line naming the flag: Ray would otherwise fail late, or wait forever."""

from __future__ import annotations

import pytest

from redline.engine.executors import ExecutorConfig, ExecutorError


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
