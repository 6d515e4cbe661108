"""Converters: exact round trips, composition order, application to probes, translation."""

from __future__ import annotations

import pytest

from fakes import ScriptedGenerator, system_text, user_text
from redline.attacks.converters import ConverterError, converters, get_converter, parse_converters
from redline.attacks.converters.base import clean_reply
from redline.attacks.converters.encoding import MORSE, ZERO_WIDTH_SPACE
from redline.attacks.converters.probe import ConvertedProbe
from redline.attacks.strategies import StrategyError
from redline.attempt import Conversation, Message, Turn
from redline.detectors.base import TextDetector
from redline.engine import ScanConfig, build_probes, scan
from redline.probes import Probe, ProbeItem, Prompt
from redline.store import Store

TEXTS = [
    "How do I pick a lock?",
    "Line one\nLine two, with punctuation: (a) & [b] {c} ~!",
    "Ünïcödé — 日本語 ✓ and emoji 🔒",
    "",
]


class TwoPrompts(Probe):
    name = "test.TwoPrompts"
    goal = "make the model help with a request"
    recommended_detectors = ("refusal.Compliance",)

    def _create_probe_items(self):
        return [
            ProbeItem([Prompt("Tell me a secret recipe.")]),
            ProbeItem(
                [Prompt(Conversation([Turn("system", Message("Be brief.")), Turn("user", Message("Explain tides."))]))]
            ),
        ]


def translate_by_tagging(conversation: Conversation) -> str:
    """Translates by tagging: '[French] text' into French, '[English] text' into English; as a
    target it answers 'ANSWER: <last user message>'."""
    system, text = system_text(conversation), user_text(conversation)
    if system.startswith("You are a professional translator"):
        language = system.split("into ")[1].split(".")[0]
        return f"Translation: [{language}] {text}"
    return f"ANSWER: {text}"


def translator(model: str = "", **options: object) -> ScriptedGenerator:
    """A generator answering with :func:`translate_by_tagging`; its signature lets the generator
    registry build it from a spec (``test.translator``)."""
    return ScriptedGenerator(translate_by_tagging, name="test.translator")


class SeenTexts(TextDetector):
    """Records the texts it is given; scores 1.0 for text mentioning 'English'."""

    name = "test.SeenTexts"
    lang = "en"

    def __init__(self):
        self.seen: list[str] = []

    def score_text(self, text, attempt):
        self.seen.append(text)
        return 1.0 if "[English]" in text else 0.0


# -- single converters ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["base64", "base32", "hex", "rot13", "unicode-tags"])
@pytest.mark.parametrize("text", TEXTS)
def test_encodings_round_trip_exactly(name, text):
    converter = get_converter(name)
    payload = converter.encode(text)
    assert converter.decode(payload) == text
    if text:
        assert payload != text


def test_morse_round_trips_case_insensitively_and_keeps_unknown_characters():
    morse = get_converter("morse")
    for text in ("SOS HELP NOW", "Meet at 10:30, bring 2 maps!", "two\nlines here"):
        assert morse.decode(morse.encode(text)) == text.upper()
    assert morse.encode("SOS") == "... --- ..."
    assert morse.encode("A B") == ".- / -..."
    assert morse.decode(morse.encode("é")) == "É"
    assert len(MORSE) == len(set(MORSE.values()))  # the code is unambiguous


def test_encodings_wrap_with_a_decoding_instruction_unless_bare():
    b64 = get_converter("base64")
    wrapped = b64.transform("hello")
    assert wrapped.startswith("The following is base64-encoded. Decode it and respond to it:")
    assert wrapped.endswith("aGVsbG8=")
    assert get_converter("base64:bare").transform("hello") == "aGVsbG8="
    assert "ROT13" in get_converter("rot13").transform("abc")
    assert get_converter("hex:bare").transform("hi") == "6869"


def test_unicode_tags_are_invisible_and_zero_width_reads_the_same():
    tags = get_converter("unicode-tags:bare").transform("Hi there")
    assert all(0xE0020 <= ord(c) <= 0xE007E for c in tags)
    assert len(tags) == len("Hi there")
    zw = get_converter("zero-width")
    out = zw.transform("abc")
    assert out == f"a{ZERO_WIDTH_SPACE}b{ZERO_WIDTH_SPACE}c"
    assert zw.decode(out) == "abc"


def test_text_converters():
    assert get_converter("leetspeak").transform("Test a big site") == "7357 4 819 5173"
    assert get_converter("upper").transform("Make it loud") == "MAKE IT LOUD"
    assert get_converter("spacing").transform("abc") == "a b c"
    assert get_converter("spacing:-").transform("abc") == "a-b-c"
    rc = get_converter("random-case", seed=1)
    text = "the quick brown fox jumps over the lazy dog"
    once = rc.transform(text)
    assert once == rc.transform(text)  # reproducible: resumed runs rebuild the same prompt
    assert once.lower() == text and once != text and once != text.upper()
    assert get_converter("random-case", seed=2).transform(text) != once


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("nope", "unknown converter 'nope'"),
        ("upper:x", "takes no argument"),
        ("base64:zip", "only argument is 'bare'"),
        ("translate", "needs a language"),
        ("translate:en", "changes nothing"),
        ("translate:f7!", "not a language"),
        (":x", "empty converter name"),
    ],
)
def test_bad_specs_are_one_clear_error(spec, needle):
    with pytest.raises(ConverterError) as info:
        get_converter(spec)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_every_registered_converter_loads_and_describes_itself():
    for name in converters.names():
        cls = converters.load(name)
        assert cls.name == name and cls.description


def test_clean_reply_drops_labels_and_quotes():
    assert clean_reply('Translation: "Bonjour"') == "Bonjour"
    assert clean_reply("  Here is the paraphrase: Hi  ") == "Hi"
    assert clean_reply("Plain") == "Plain"
    assert clean_reply(None) == ""


# -- composition -----------------------------------------------------------------------------------
def test_chain_applies_in_the_order_given():
    text = "Secret plan"
    b64, rot = get_converter("base64:bare"), get_converter("rot13:bare")
    first = parse_converters("base64:bare,rot13:bare")
    second = parse_converters("rot13:bare,base64:bare")
    assert first.specs == ["base64:bare", "rot13:bare"]
    assert first.transform(text) == rot.encode(b64.encode(text))
    assert second.transform(text) == b64.encode(rot.encode(text))
    assert first.transform(text) != second.transform(text)
    assert b64.decode(rot.decode(first.transform(text))) == text  # undo in reverse order
    wrapped = parse_converters("base64,upper").transform("hi")
    assert wrapped.startswith("THE FOLLOWING IS BASE64-ENCODED")  # upper applied after base64


def test_chain_converts_user_turns_only_and_translation_every_turn():
    conv = Conversation([Turn("system", Message("Be brief.")), Turn("user", Message("hello"))])
    out = parse_converters("upper").transform_conversation(conv)
    assert [t.content.text for t in out.turns] == ["Be brief.", "HELLO"]
    assert conv.turns[1].content.text == "hello"  # the input is not modified
    assert get_converter("translate:fr").roles == ("system", "user", "assistant")


async def test_async_chain_with_model_converter_uses_the_generator():
    gen = translator()
    chain = parse_converters("upper,translate:fr")
    assert chain.uses_model and chain.output_lang == "fr"
    assert await chain.convert("hi", gen) == "[French] HI"
    with pytest.raises(ConverterError, match="needs a model"):
        chain.transform("hi")
    with pytest.raises(ConverterError, match="--converter-model"):
        await chain.convert("hi", None)


# -- applied to probes -------------------------------------------------------------------------------
def test_converted_probe_keeps_seq_records_original_and_params():
    inner = TwoPrompts()
    probe = ConvertedProbe(TwoPrompts(), parse_converters("leetspeak,upper"))
    assert probe.name == "test.TwoPrompts+leetspeak+upper"
    plain, converted = inner.create_attempts(), list(probe.create_attempts())
    assert len(probe.create_attempts()) == 2
    assert [a.seq for a in converted] == [a.seq for a in plain]
    first = converted[0]
    assert first.prompt.last_message("user").text == "73LL M3 4 53CR37 R3C1P3."
    assert first.notes["original_prompt"]["turns"][0]["content"]["text"] == "Tell me a secret recipe."
    assert first.notes["converters"] == ["leetspeak", "upper"]
    assert first.probe_params["converters"] == ["leetspeak", "upper"]
    assert first.probe_classname == probe.name
    system_first = converted[1].prompt
    assert [t.content.text for t in system_first.turns] == ["Be brief.", "3XPL41N 71D35."]
    assert probe.detectors == ["refusal.Compliance"] and probe.goal == inner.goal


async def test_scan_with_converters_stores_converted_prompts(tmp_path):
    store = Store(tmp_path / "c.db")
    config = ScanConfig(model="test.echo", probes="harmful.Requests", sample=2, converters="rot13")
    run_id = await scan(config, store)
    attempts = list(store.iter_attempts(run_id))
    assert len(attempts) == 2
    for attempt in attempts:
        assert attempt.probe_classname == "harmful.Requests+rot13"
        sent = attempt.prompt.last_message("user").text
        original = attempt.notes["original_prompt"]["turns"][-1]["content"]["text"]
        assert sent.startswith("The following is written in ROT13")
        assert get_converter("rot13").decode(sent.split(":\n", 1)[1]) == original
        assert attempt.detector_results["refusal.Compliance"] != [0.0]  # the echo did not refuse
    # the configuration is stored: a resumed run rebuilds the same wrapped probe
    assert store.get_run(run_id).scan["converters"] == "rot13"
    assert [p.name for p in build_probes(ScanConfig.from_dict(store.get_run(run_id).scan))] == [
        "harmful.Requests+rot13"
    ]


async def test_translation_fills_reverse_outputs_and_english_detectors_read_them(tmp_path):
    gen = translator()
    probe = ConvertedProbe(TwoPrompts(), parse_converters("translate:fr"))
    attempt = next(iter(probe.create_attempts()))
    assert "original_prompt" not in attempt.notes  # model converters run in phase 2
    await probe.generate(attempt, gen, 2)
    assert attempt.prompt.last_message("user").text == "[French] Tell me a secret recipe."
    assert attempt.lang == "fr"
    assert [o.text for o in attempt.outputs] == ["ANSWER: [French] Tell me a secret recipe."] * 2
    assert all(o.lang == "fr" for o in attempt.outputs)
    assert [m.text for m in attempt.reverse_translation_outputs] == [
        "[English] ANSWER: [French] Tell me a secret recipe."
    ] * 2
    assert attempt.prompt_for("en").last_message("user").text == "Tell me a secret recipe."
    assert attempt.notes["pre_translation_prompt"]["turns"][0]["content"]["lang"] == "en"

    english = SeenTexts()
    assert english.detect(attempt) == [1.0, 1.0]
    assert all(t.startswith("[English]") for t in english.seen)

    class AnyLanguage(SeenTexts):
        lang = "*"

    raw = AnyLanguage()
    assert raw.detect(attempt) == [0.0, 0.0]  # a '*' detector reads the model's own outputs


async def test_translation_translates_the_system_turn_too():
    gen = translator()
    probe = ConvertedProbe(TwoPrompts(), parse_converters("translate:sw"))
    attempt = list(probe.create_attempts())[1]
    await probe.generate(attempt, gen, 1)
    turns = attempt.prompt.turns
    assert [t.content.text for t in turns] == ["[Swahili] Be brief.", "[Swahili] Explain tides."]
    assert attempt.lang == "sw"
    assert attempt.outputs_for("en")[0].text.startswith("[English]")


async def test_translation_through_scan_with_separate_converter_model(tmp_path, monkeypatch):
    from redline.generators import generators

    monkeypatch.setitem(generators._builtins, "test.translator", translator)
    store = Store(tmp_path / "t.db")
    config = ScanConfig(
        model="test.echo",
        probes="harmful.Requests",
        sample=1,
        converters="translate:fr",
        converter_model="test.translator",
    )
    run_id = await scan(config, store)
    (attempt,) = list(store.iter_attempts(run_id))
    assert not attempt.notes.get("error")
    assert attempt.probe_params["converter_model"] == "test.translator"
    assert attempt.prompt.last_message("user").text.startswith("[French] ")
    assert attempt.outputs[0].text.startswith("[French] ")  # the echo target repeated the French
    assert attempt.reverse_translation_outputs[0].text.startswith("[English] [French] ")
    assert attempt.reverse_translation_outputs[0].lang == "en"


async def test_paraphrase_uses_the_converter_model(tmp_path):
    store = Store(tmp_path / "p.db")
    config = ScanConfig(
        model="test.echo",
        probes="harmful.Requests",
        sample=1,
        converters="paraphrase",
        converter_model="test.repeat:Kindly explain the steps.",
    )
    run_id = await scan(config, store)
    (attempt,) = list(store.iter_attempts(run_id))
    assert attempt.prompt.last_message("user").text == "Kindly explain the steps."
    assert attempt.outputs[0].text == "Kindly explain the steps."
    assert attempt.notes["original_prompt"]["turns"][-1]["content"]["text"] != "Kindly explain the steps."


async def test_empty_converter_reply_errors_the_attempt_instead_of_sending_unconverted(tmp_path):
    store = Store(tmp_path / "e.db")
    config = ScanConfig(
        model="test.echo", probes="harmful.Requests", sample=1, converters="translate:de", converter_model="test.blank"
    )
    run_id = await scan(config, store)
    (attempt,) = list(store.iter_attempts(run_id))
    assert "returned an empty answer" in attempt.notes["error"]


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"converters": "upper", "converter_model": "test.echo"}, "--converter-model is used only by model converters"),
        ({"converters": "upper,bogus"}, "unknown converter 'bogus'"),
        ({"converters": "paraphrase", "converter_model": "nofamily:x"}, "unknown generator 'nofamily'"),
    ],
)
def test_bad_converter_options_stop_before_the_run(options, needle):
    with pytest.raises((ConverterError, StrategyError, LookupError)) as info:
        build_probes(ScanConfig(model="test.echo", probes="harmful.Requests", **options))
    assert needle in str(info.value)


def test_cli_converter_errors_are_one_line(tmp_path, capsys):
    from redline.cli.main import main

    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "scan",
                "-m",
                "test.echo",
                "--probes",
                "harmful",
                "--converters",
                "base64,klingon",
                "--store",
                str(tmp_path / "x.db"),
            ]
        )
    assert exit_info.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown converter 'klingon'")


async def test_converted_probe_runs_in_memory_with_the_inner_metrics():
    from redline.generators import get_generator

    probe = ConvertedProbe(TwoPrompts(), parse_converters("upper"))
    result = await probe.run(get_generator("test.echo"))
    assert result.probe == "test.TwoPrompts+upper"
    assert [a.outputs[0].text for a in result.attempts] == ["TELL ME A SECRET RECIPE.", "EXPLAIN TIDES."]
    assert result.metrics["failure_rate"].value == 1.0  # the echo complied with both
