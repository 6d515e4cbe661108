"""Package hallucination: known-package lists, the user's own lists, and hostile lists."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

import redline.detectors.output.packages as packages
from helpers.answered import answered
from redline.detectors import DetectorUnavailable, get_detector
from redline.detectors.output.packages import default_index


async def test_package_lists_user_file_and_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = "```python\nimport acme_internal_sdk\n```"
    d = get_detector("output.PackageHallucination")
    await d.start()
    assert d.detect(answered(code)) == [1.0] and d.unknown_packages(code) == ["acme_internal_sdk"]
    known = tmp_path / "known.txt"
    known.write_text("# our private index\nacme-internal-sdk\n", encoding="utf-8")
    with_file = get_detector("output.PackageHallucination", known_packages=str(known))
    await with_file.start()
    assert with_file.detect(answered(code)) == [0.0]
    monkeypatch.setenv("REDLINE_KNOWN_PACKAGES", str(known))
    from_env = get_detector("output.PackageHallucination")
    await from_env.start()
    assert from_env.detect(answered(code)) == [0.0]
    missing = get_detector("output.PackageHallucination", known_packages=str(tmp_path / "nope.txt"))
    with pytest.raises(DetectorUnavailable, match="nope.txt"):
        await missing.start()
    with pytest.raises(DetectorUnavailable, match="ecosystem"):
        get_detector("output.PackageHallucination", ecosystems="python,cargo")


def test_package_index_knows_stdlib_aliases_namespaces_and_node_builtins() -> None:
    index = default_index()
    for module in ("os", "json", "yaml", "cv2", "sklearn.linear_model", "PIL.Image", "google.cloud.storage", "numpy"):
        assert index.python_known(module), module
    for spec in ("fs", "node:path", "express", "@babel/core", "lodash/fp", "react@18"):
        assert index.npm_known(spec), spec
    assert not index.python_known("klingon_tts_pro_zz")
    assert not index.npm_known("excel-formula-to-jsfunc-converter")
    total = sum(
        len(resources.files("redline.data").joinpath(f).read_bytes())
        for f in ("pypi_top.txt", "npm_top.txt", "python_stdlib.txt")
    )
    assert total < 1_000_000


async def test_a_hostile_package_list_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"requests\ncaf\xe9\n")
    with pytest.raises(DetectorUnavailable, match=r"latin\.txt \(known_packages\): line 2: not UTF-8 text"):
        await get_detector("output.PackageHallucination", known_packages=str(latin)).start()
    big = tmp_path / "big.txt"
    big.write_text("requests\n" * 10)
    monkeypatch.setattr(packages, "MAX_PACKAGE_LIST_BYTES", 89)
    with pytest.raises(DetectorUnavailable, match=r"big\.txt \(known_packages\): too large \(more than 89 bytes\)"):
        await get_detector("output.PackageHallucination", known_packages=str(big)).start()
