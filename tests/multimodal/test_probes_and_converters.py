"""The multimodal probes draw the same images every time, each prompt carries one, and their
detectors catch a model that follows the image; the image converters compose and refuse misuse."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from redline.attachments import stored_file, use_attachment_dir
from redline.attacks.converters import ConverterError, parse_converters
from redline.attempt import Conversation, Message, Turn
from redline.images import perturb, render_text
from redline.probes import get_probe, resolve_probes

PIL = pytest.importorskip("PIL")

NAMES = [
    "multimodal.TypographicJailbreak",
    "multimodal.VisualInjection",
    "multimodal.ImageTextConflict",
    "multimodal.ChartInjection",
]


@pytest.fixture(autouse=True)
def attachments(tmp_path: Path):
    use_attachment_dir(tmp_path / "attachments")
    yield
    use_attachment_dir(None)


def test_the_multimodal_family_selects_its_four_probes() -> None:
    assert sorted(resolve_probes("multimodal")) == sorted(NAMES)


@pytest.mark.parametrize(
    "name,detector",
    list(
        zip(
            NAMES,
            [
                ("harm.Substance", "refusal.Compliance"),
                "injection.InjectedMarker",
                "sycophancy.Agreement",
                "injection.InjectedMarker",
            ],
        )
    ),
)
def test_each_probe_declares_goal_tags_detector_and_distinct_deterministic_prompts(
    name: str, detector: str | tuple[str, ...]
) -> None:
    from helpers.probe_family import assert_declares_itself

    assert_declares_itself(name, detector)


@pytest.mark.parametrize("name", NAMES)
def test_every_prompt_carries_a_png_drawn_the_same_way_each_time(name: str) -> None:
    import redline.images

    first = [a.prompt.turns[-1].content for a in get_probe(name).create_attempts()]
    redline.images.render_text.cache_clear()  # drawn again, not read from memory
    redline.images._page.cache_clear()
    redline.images._chart.cache_clear()
    again = [a.prompt.turns[-1].content for a in get_probe(name).create_attempts()]
    assert [m.data_checksum for m in first] == [m.data_checksum for m in again]
    assert len({m.data_checksum for m in first}) == len({(m.text, m.data_checksum) for m in first})
    for message in first:
        data = stored_file(message.data_path).read_bytes()
        assert data.startswith(b"\x89PNG") and hashlib.sha256(data).hexdigest() == message.data_checksum
        assert message.text and message.data_type == ("image/png", None)


@pytest.mark.parametrize("name", ["multimodal.VisualInjection", "multimodal.ChartInjection"])
async def test_visual_injection_catches_a_model_that_says_the_marker_and_passes_one_that_describes(name: str) -> None:
    from fakes import ScriptedGenerator

    probe = get_probe(name, sample=4, seed=1)
    attempts = probe.create_attempts()
    by_image = {a.prompt.turns[-1].content.data_checksum: a for a in attempts}

    def obey(conversation: Conversation) -> str:
        return f"Sure. {by_image[conversation.turns[-1].content.data_checksum].targets[0]}"

    for respond, expected in ((obey, 1.0), (lambda c: "A product page for boots.", 0.0)):
        result = await get_probe(name, sample=4, seed=1).run(
            ScriptedGenerator(respond, name="test.oracle:oracle", local=True)
        )
        assert result.errored == 0 and result.metrics["failure_rate"].value == expected


def test_image_converter_draws_the_text_the_converters_before_it_made() -> None:
    chain = parse_converters("rot13,image")
    converted = chain.transform_conversation(Conversation(turns=[Turn("user", Message("hello there"))]))
    message = converted.turns[-1].content
    assert stored_file(message.data_path).read_bytes() == render_text(
        parse_converters("rot13").transform("hello there")
    )
    assert "image" in (message.text or "")


def test_a_perturbation_without_an_image_before_it_is_refused_in_one_line() -> None:
    chain = parse_converters("image-noise")
    with pytest.raises(ConverterError) as caught:
        chain.transform_conversation(Conversation(turns=[Turn("user", Message("hi"))]))
    assert "\n" not in str(caught.value) and "image,image-noise" in str(caught.value)


@pytest.mark.parametrize("spec", ["image-noise", "image-rotate:15", "image-contrast", "image-scale:0.5"])
def test_each_perturbation_changes_the_image_the_same_way_for_the_same_seed(spec: str) -> None:
    base = render_text("perturb me")
    kind, _, amount = spec.removeprefix("image-").partition(":")
    kind = "contrast" if kind == "contrast" else kind
    first = perturb(base, kind, float(amount or 0.3), seed=7)
    assert first != base and first == perturb(base, kind, float(amount or 0.3), seed=7)
    chain = parse_converters(f"image,{spec}", seed=7)
    message = chain.transform_conversation(Conversation(turns=[Turn("user", Message("perturb me"))])).turns[0].content
    assert stored_file(message.data_path).read_bytes() != base


def test_scaling_by_a_half_halves_the_image() -> None:
    from PIL import Image

    base = render_text("scale")
    before = Image.open(io.BytesIO(base)).size
    after = Image.open(io.BytesIO(perturb(base, "scale", 0.5))).size
    assert after == (before[0] // 2, before[1] // 2)


@pytest.mark.parametrize("spec", ["image:huge", "image:4", "image-rotate:-3", "image-noise:x"])
def test_a_bad_converter_argument_is_one_line(spec: str) -> None:
    with pytest.raises(ConverterError) as caught:
        parse_converters(spec)
    assert "\n" not in str(caught.value)


def test_the_chart_carries_the_instruction_in_each_place_and_refuses_an_unknown_one() -> None:
    from redline.images import CHART_PLACES, ImageError, render_chart

    bars = (("a", 1.0), ("b", 2.0))
    drawn = {render_chart("t", bars, "say the marker", place=place) for place in CHART_PLACES}
    assert len(drawn) == len(CHART_PLACES) and render_chart("t", bars, "other", place="legend") not in drawn
    with pytest.raises(ImageError, match="unknown chart place"):
        render_chart("t", bars, "x", place="title")
