"""Without the ``genderbench`` package its probes are listed, and a scan reports them "not measured"
with how to install it; nothing imports it until a probe is built."""

from __future__ import annotations

import subprocess
import sys

import pytest

from redline.probes import get_probe


def test_a_genderbench_probe_without_the_package_is_not_measured_and_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "genderbench", None)  # import genderbench raises ImportError
    monkeypatch.setitem(sys.modules, "genderbench.probes", None)
    probe = get_probe("genderbench.DirectProbe", sample=5)
    assert probe.skip_reason is not None
    assert "genderbench is not installed" in probe.skip_reason and "--no-deps" in probe.skip_reason
    assert len(probe.create_attempts()) == 0


def test_listing_the_probes_does_not_import_genderbench() -> None:
    code = (
        "import sys\n"
        "from redline.probes import probes, resolve_probes\n"
        "names = resolve_probes('genderbench')\n"
        "[probes.load(n) for n in names]\n"
        "assert 'genderbench' not in sys.modules, 'imported'\n"
        "print(len(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "14"
