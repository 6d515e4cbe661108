"""The attempt data model (seed 002): every documented field and access/setting rule."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

from redline import jsonio
from redline.attempt import (
    ATTEMPT_COMPLETE,
    ATTEMPT_NEW,
    ATTEMPT_STARTED,
    Attempt,
    AttemptError,
    Conversation,
    Message,
    Tool,
    ToolCall,
    Turn,
)


def test_status_constants_are_distinct_and_ordered():
    assert ATTEMPT_NEW < ATTEMPT_STARTED < ATTEMPT_COMPLETE
    assert Attempt().status == ATTEMPT_NEW


def test_prompt_from_string_returns_first_user_prompt_as_conversation():
    a = Attempt(prompt="hello there")
    assert isinstance(a.prompt, Conversation)
    assert a.prompt.turns[0].role == "user"
    assert a.prompt.turns[0].content.text == "hello there"


def test_prompt_includes_system_turn_and_stops_at_first_user():
    conv = Conversation(
        [
            Turn("system", Message("be nice")),
            Turn("user", Message("q1")),
            Turn("assistant", Message("a1")),
            Turn("user", Message("q2")),
        ]
    )
    a = Attempt(prompt=conv)
    assert [t.role for t in a.prompt.turns] == ["system", "user"]
    assert a.prompt.last_message("user").text == "q1"


def test_prompt_can_be_set_only_once():
    a = Attempt()
    assert a.prompt is None
    a.prompt = Message("first")
    with pytest.raises(AttemptError, match="only once"):
        a.prompt = "second"
    assert a.prompt.turns[0].content.text == "first"


def test_prompt_needs_a_user_turn():
    with pytest.raises(AttemptError):
        Attempt(prompt=Conversation([Turn("system", Message("only system"))]))


def test_outputs_before_prompt_fails():
    with pytest.raises(AttemptError, match="prompt"):
        Attempt().outputs = ["x"]


def test_outputs_expand_prompt_into_one_history_per_generation():
    a = Attempt(prompt="q")
    assert a.outputs == []
    a.outputs = ["a", "b", "c"]
    assert len(a.conversations) == 3
    assert [m.text for m in a.outputs] == ["a", "b", "c"]
    for conv, expected in zip(a.conversations, "abc"):
        assert [t.role for t in conv.turns] == ["user", "assistant"]
        assert conv.turns[0].content.text == "q"
        assert conv.last_message("assistant").text == expected
    # histories are independent copies
    a.conversations[0].turns[0].content.text = "changed"
    assert a.conversations[1].turns[0].content.text == "q"


def test_second_layer_and_all_outputs():
    a = Attempt(prompt="q")
    a.outputs = ["a1", "b1"]
    a.add_user_turns(["follow a", "follow b"])
    a.outputs = ["a2", "b2"]
    assert [m.text for m in a.outputs] == ["a2", "b2"]
    assert [m.text for m in a.all_outputs] == ["a1", "a2", "b1", "b2"]
    assert [t.content.text for t in a.conversations[1].turns] == ["q", "b1", "follow b", "b2"]
    assert a.prompt.turns[-1].content.text == "q"


def test_layer_length_must_match_generations():
    a = Attempt(prompt="q")
    a.outputs = ["a", "b"]
    with pytest.raises(AttemptError, match="expected 2"):
        a.outputs = ["only one"]


def test_none_output_is_kept_as_empty_message():
    a = Attempt(prompt="q")
    a.outputs = [None, "x"]
    assert a.outputs[0].text is None and a.outputs[1].text == "x"


def test_detector_results_one_score_per_output_and_fields():
    a = Attempt(
        prompt="q",
        probe_classname="p.Q",
        probe_params={"k": 1},
        targets=["t"],
        notes={"n": 2},
        goal="do x",
        seq=7,
    )
    a.outputs = ["a", "b"]
    a.detector_results["d.One"] = [0.0, 1.0]
    assert a.detector_results == {"d.One": [0.0, 1.0]}
    assert (a.probe_classname, a.probe_params, a.targets, a.notes, a.goal, a.seq) == (
        "p.Q",
        {"k": 1},
        ["t"],
        {"n": 2},
        "do x",
        7,
    )


def test_as_dict_from_dict_round_trip_is_lossless_and_json_ready():
    a = Attempt(
        prompt=Conversation([Turn("system", Message("sys")), Turn("user", Message("q", lang="en"))]),
        probe_classname="p.Q",
        targets=["x"],
        goal="g",
        seq=3,
        notes={"k": [1, 2]},
    )
    a.outputs = [Message("a", notes={"finish": "stop"}), "b"]
    a.add_user_turns(["more"])
    a.outputs = ["c", "d"]
    a.detector_results = {"det": [0.5, None]}
    a.reverse_translation_outputs = [Message("rc", lang="en"), Message("rd", lang="en")]
    a.status = ATTEMPT_COMPLETE
    data = json.loads(json.dumps(a.as_dict()))
    b = Attempt.from_dict(data)
    assert b == a
    assert b.as_dict() == a.as_dict()
    assert [m.text for m in b.outputs] == ["c", "d"]
    assert [m.text for m in b.all_outputs] == ["a", "c", "b", "d"]
    assert b.uuid == a.uuid and b.status == ATTEMPT_COMPLETE
    assert data["prompt"]["turns"][1]["content"]["text"] == "q"
    assert [o["text"] for o in data["outputs"]] == ["c", "d"]


#: The JSON text an earlier version wrote of the attempt in
#: test_the_json_of_an_attempt_is_what_earlier_versions_wrote.
EARLIER_JSON = (
    '{"entry_type":"attempt","uuid":"u","seq":0,"status":0,"probe_classname":"p.Q","probe_params":{}'
    ',"targets":[],"prompt":{"turns":[{"role":"user","content":{"text":"q","lang":null,"data_path":null'
    ',"data_type":null,"data_checksum":null,"notes":{"from":{"turns":[{"role":"user"'
    ',"content":{"text":"x","lang":null,"data_path":null,"data_type":null,"data_checksum":null'
    ',"notes":{}}}],"notes":{}}}}}],"notes":{}},"outputs":[{"text":"a","lang":null,"data_path":null'
    ',"data_type":null,"data_checksum":null,"notes":{}}],"detector_results":{"det":[0.25]}'
    ',"notes":{"k":[1,2],"said":{"text":"m","lang":null,"data_path":null,"data_type":null'
    ',"data_checksum":null,"notes":{}}},"goal":null,"conversations":[{"turns":[{"role":"user"'
    ',"content":{"text":"q","lang":null,"data_path":null,"data_type":null,"data_checksum":null'
    ',"notes":{"from":{"turns":[{"role":"user","content":{"text":"x","lang":null,"data_path":null'
    ',"data_type":null,"data_checksum":null,"notes":{}}}],"notes":{}}}}},{"role":"assistant"'
    ',"content":{"text":"a","lang":null,"data_path":null,"data_type":null,"data_checksum":null'
    ',"notes":{}}}],"notes":{}}],"output_layers":1,"reverse_translation_outputs":[]}'
)


def _attempts_of_every_shape() -> list[Attempt]:
    plain = Attempt(prompt="q", probe_classname="p.Q", seq=0, notes={"k": (1, 2), 3: "non-text key"})
    plain.outputs = ["a"]
    plain.detector_results = {"det": [0.25]}
    multi = Attempt(
        prompt=Conversation([Turn("system", Message("sys")), Turn("user", Message("q", lang="en"))], notes={"c": 1}),
        targets=("x", "y"),
        notes={"original_prompt": Conversation([Turn("user", Message("before"))]), "said": Message("m")},
    )
    multi.outputs = [Message("a", notes={"finish": "stop"}, data_type=("text/plain", None)), None]
    multi.add_user_turns(["more"])
    multi.outputs = ["c", "d"]
    multi.reverse_translation_outputs = [Message("rc", lang="en"), Message("rd", lang="en")]
    tools = Attempt(prompt=Conversation([Turn("user", Message("q"))], tools=[Tool("search", "finds")]))
    tools.outputs = [Message(None, tool_calls=[ToolCall("c1", "search", {"q": "Peru"})])]
    tools.add_user_turns([Message("found", tool_call_id="c1")])
    tools.outputs = ["done"]
    odd = [Attempt(prompt="q", notes={"n": 2**70}), Attempt(prompt="q", notes={"t": ToolCall("c", "f", {})})]
    odd += [Attempt(prompt="q", notes={"s": {1, 2}}), Attempt(prompt="q", probe_params={"b": b"bytes"})]
    return [plain, multi, tools, Attempt(prompt="only a prompt"), *odd]


def test_the_json_of_as_dict_reads_back_to_the_same_json():
    """What the store writes is ``jsonio.dumps(attempt.as_dict())``: conversations and messages in
    notes become dicts, and reading it back gives the same text."""
    plain, multi, tools, prompt_only, *_ = _attempts_of_every_shape()
    for attempt in (plain, multi, tools, prompt_only):
        text = jsonio.dumps(attempt.as_dict())
        assert jsonio.dumps(Attempt.from_dict(jsonio.loads(text)).as_dict()) == text, attempt


def test_an_attempt_holding_what_json_has_no_form_for_is_refused_with_type_error():
    *_, huge, call, a_set, some_bytes = _attempts_of_every_shape()
    assert '"n":1180591620717411303424' in jsonio.dumps(huge.as_dict())
    assert '"t":{"id":"c","name":"f","arguments":{}}' in jsonio.dumps(call.as_dict())
    for attempt in (a_set, some_bytes):
        with pytest.raises(TypeError):
            jsonio.dumps(attempt.as_dict())


def test_the_json_of_an_attempt_is_what_earlier_versions_wrote():
    """Stores hold rows written by earlier versions next to new ones: the text stays the same."""
    attempt = Attempt(
        prompt=Conversation([Turn("user", Message("q", notes={"from": Conversation([Turn("user", Message("x"))])}))]),
        probe_classname="p.Q",
        notes={"k": (1, 2), "said": Message("m")},
        seq=0,
        uuid="u",
    )
    attempt.outputs = ["a"]
    attempt.detector_results = {"det": [0.25]}
    assert jsonio.dumps(attempt.as_dict()) == EARLIER_JSON


def test_round_trip_of_attempt_without_outputs():
    a = Attempt(prompt="only a prompt", seq=0)
    b = Attempt.from_dict(a.as_dict())
    assert b == a and b.outputs == []
    b.outputs = ["now"]  # still settable after the round trip
    assert b.outputs[0].text == "now"


def test_lang_and_prompt_for_outputs_for():
    a = Attempt(prompt=Message("Bonjour", lang="fr"))
    a.notes["pre_translation_prompt"] = Conversation([Turn("user", Message("Hello", lang="en"))])
    a.outputs = [Message("Salut", lang="fr")]
    a.reverse_translation_outputs = [Message("Hi", lang="en")]
    assert a.lang == "fr"
    assert a.prompt_for("fr").turns[0].content.text == "Bonjour"
    assert a.prompt_for("*").turns[0].content.text == "Bonjour"
    assert a.prompt_for(None).turns[0].content.text == "Bonjour"
    assert a.prompt_for("en").turns[0].content.text == "Hello"
    assert [m.text for m in a.outputs_for("fr")] == ["Salut"]
    assert [m.text for m in a.outputs_for("*")] == ["Salut"]
    assert [m.text for m in a.outputs_for("en")] == ["Hi"]
    # the translated prompt note survives the round trip
    b = Attempt.from_dict(json.loads(json.dumps(a.as_dict())))
    assert b.prompt_for("en").turns[0].content.text == "Hello"


def test_outputs_for_without_translation_returns_original():
    a = Attempt(prompt=Message("hi", lang="en"))
    a.outputs = ["yo"]
    assert [m.text for m in a.outputs_for("de")] == ["yo"]


def test_conversation_from_openai_and_last_message():
    conv = Conversation.from_openai(
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u1"},
            {"role": "assistant", "content": "a1"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "img.png"}}],
            },
        ],
        notes={"src": "x"},
    )
    assert [t.role for t in conv.turns] == ["system", "user", "assistant", "user"]
    assert conv.last_message().text == "look"
    assert conv.last_message().data_path == "img.png"
    assert conv.last_message("assistant").text == "a1"
    assert conv.last_message("system").text == "s"
    assert conv.notes == {"src": "x"}
    with pytest.raises(AttemptError):
        Conversation([Turn("user", Message("x"))]).last_message("assistant")
    assert Conversation(conv.turns[:3]).to_openai()[1] == {"role": "user", "content": "u1"}
    with pytest.raises(AttemptError, match="takes text only"):  # the image is not dropped silently
        conv.to_openai()


def test_conversation_from_openai_rejects_garbage():
    with pytest.raises(AttemptError, match="message 0"):
        Conversation.from_openai(["not a dict"])


def test_turn_from_dict_and_roles():
    t = Turn.from_dict({"role": "assistant", "content": {"text": "hi", "lang": "en"}})
    assert t.role == "assistant" and t.content.text == "hi" and t.content.lang == "en"
    assert Turn.from_dict({"role": "user", "content": "plain"}).content.text == "plain"
    with pytest.raises(AttemptError, match="role"):
        Turn("robot", Message("x"))


def test_message_attachment_lazy_load_and_checksum(tmp_path):
    path = tmp_path / "pic.png"
    path.write_bytes(b"\x89PNG fake")
    m = Message(text="see", data_path=str(path))
    assert m.data_type == ("image/png", None)
    assert m.data_checksum is None  # not loaded yet
    assert m.data == b"\x89PNG fake"
    assert m.data_checksum == hashlib.sha256(b"\x89PNG fake").hexdigest()
    # a changed file is detected against the recorded checksum
    m2 = Message(data_path=str(path), data_checksum="0" * 64)
    with pytest.raises(AttemptError, match="changed"):
        _ = m2.data
    # round trip keeps path/type/checksum, not the bytes
    d = m.as_dict()
    assert "data" not in d and Message.from_dict(d) == m
    # missing file: clear error
    with pytest.raises(AttemptError, match="cannot read"):
        _ = Message(data_path=str(tmp_path / "missing.wav")).data


def test_message_data_setter_sets_checksum():
    m = Message(text="x")
    m.data = b"abc"
    assert m.data == b"abc" and m.data_checksum == hashlib.sha256(b"abc").hexdigest()


def test_a_deep_copy_of_a_conversation_shares_nothing_that_can_change():
    original = Conversation(
        turns=[Turn(role="user", content=Message(text="hi", notes={"tags": ["a"], "empty": {}}))],
        notes={"source": {"row": 3}},
    )
    clone = copy.deepcopy(original)
    assert clone == original
    clone.turns[0].content.notes["tags"].append("b")
    clone.turns[0].content.notes["empty"]["x"] = 1
    clone.turns.append(Turn(role="assistant", content=Message(text="hello")))
    clone.notes["source"]["row"] = 4
    assert original.turns[0].content.notes == {"tags": ["a"], "empty": {}}
    assert len(original.turns) == 1 and original.notes == {"source": {"row": 3}}
    shared = Message(text="same")  # one object twice stays one object in the copy
    pair = copy.deepcopy([Turn(role="user", content=shared), Turn(role="user", content=shared)])
    assert pair[0].content is pair[1].content is not shared


def test_an_attempt_read_back_takes_a_later_layer_of_outputs():
    original = Attempt(prompt="hi", notes={"evaluation": ["fail"]}, seq=3)
    original.outputs = ["one", "two"]
    read = Attempt.from_dict(json.loads(json.dumps(original.as_dict())))
    assert read == original and read.uuid == original.uuid
    assert [m.text for m in read.outputs] == ["one", "two"]
    read.outputs = ["three", "four"]  # a later layer still goes on each history
    assert [m.text for m in read.all_outputs] == ["one", "three", "two", "four"]
