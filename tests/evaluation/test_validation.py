"""Validation of a detector against human labels (``redline.evaluation.validation``): loading
labelled CSV/JSONL files with a column mapping, scoring them with a detector, and the metrics
and intervals of the result (numbers computed by hand in the comments)."""

from __future__ import annotations

import asyncio
import json

import pytest

import redline.evaluation.validation as validation
from redline.attempt import Attempt
from redline.datasets import DatasetError
from redline.detectors import Detector
from redline.errors import RedlineError
from redline.evaluation.validation import (
    LabelledDataError,
    LabelledExample,
    ValidationResult,
    dataset_id,
    load_examples,
    tally,
    validate_detector,
)

# -- the result ----------------------------------------------------------------------------------

# tp=3 fp=1 fn=2 tn=4 undetected=1: 11 rows, 10 scored.
RESULT = ValidationResult(tp=3, fp=1, fn=2, tn=4, undetected=1)


def test_metrics_by_hand():
    assert RESULT.n == 11 and RESULT.scored == 10
    assert RESULT.accuracy == pytest.approx(0.7)  # (3 + 4) / 10
    assert RESULT.precision == pytest.approx(0.75)  # 3 / (3 + 1)
    assert RESULT.recall == pytest.approx(0.6)  # 3 / (3 + 2)
    assert RESULT.specificity == pytest.approx(0.8)  # 4 / (4 + 1)
    assert RESULT.f1 == pytest.approx(2 / 3)  # 2*3 / (2*3 + 1 + 2)
    assert RESULT.predicted_rate == pytest.approx(0.4)  # (3 + 1) / 10
    assert RESULT.labelled_rate == pytest.approx(0.5)  # (3 + 2) / 10


def test_wilson_intervals_by_hand():
    ci = RESULT.ci95()
    # Wilson 7/10, z = 1.96: centre (0.7 + 1.9208/10) / 1.38415 = 0.6445, half-width 0.2477.
    assert ci["accuracy"] == pytest.approx((0.3968, 0.8922), abs=1e-4)
    # Wilson 3/4: centre (0.75 + 1.9208/4) / 1.96036 = 0.6276, half-width 0.4096.
    assert ci["precision"] == pytest.approx((0.3006, 0.9544), abs=1e-4)
    # Wilson 5/10 (labelled rate): symmetric around 0.5, half-width 0.2634.
    assert ci["labelled_rate"] == pytest.approx((0.2366, 0.7634), abs=1e-4)


def test_json_has_exactly_the_contract_keys():
    data = RESULT.as_dict()
    assert list(data) == [
        "n",
        "accuracy",
        "precision",
        "recall",
        "f1",
        "predicted_rate",
        "labelled_rate",
        "confusion",
        "ci95",
    ]
    assert data["confusion"] == {"tp": 3, "fp": 1, "fn": 2, "tn": 4, "undetected": 1}
    assert set(data["ci95"]) == {"accuracy", "precision", "recall", "f1", "predicted_rate", "labelled_rate"}
    assert all(isinstance(v, list) and len(v) == 2 for v in data["ci95"].values())
    assert json.loads(json.dumps(data)) == data


def test_f1_interval_is_seeded_and_covers_the_estimate():
    first, second = RESULT.ci95()["f1"], ValidationResult(3, 1, 2, 4, 1).ci95()["f1"]
    assert first == second  # same counts, same interval
    assert first is not None and first[0] <= 2 / 3 <= first[1]
    assert 0.0 <= first[0] < first[1] <= 1.0
    # Ten times the rows: a narrower interval around the same F1.
    bigger = ValidationResult(30, 10, 20, 40).ci95()["f1"]
    assert bigger is not None and bigger[0] <= 2 / 3 <= bigger[1]
    assert bigger[1] - bigger[0] < first[1] - first[0]


def test_degenerate_results():
    perfect = ValidationResult(tp=5, fp=0, fn=0, tn=5)
    assert perfect.f1 == 1.0 and perfect.ci95()["f1"] == (1.0, 1.0)
    never_hits = ValidationResult(tp=0, fp=0, fn=4, tn=6)
    assert never_hits.precision is None and never_hits.ci95()["precision"] is None
    assert never_hits.f1 == 0.0 and never_hits.ci95()["f1"] == (0.0, 0.0)
    nothing_positive = ValidationResult(tp=0, fp=0, fn=0, tn=3)
    assert nothing_positive.recall is None and nothing_positive.f1 is None
    assert nothing_positive.as_dict()["ci95"]["f1"] is None
    all_undetected = ValidationResult(0, 0, 0, 0, undetected=4)
    data = all_undetected.as_dict()
    assert data["n"] == 4 and data["accuracy"] is None and data["ci95"]["accuracy"] is None


def test_pooling_adds_counts():
    assert RESULT + ValidationResult(1, 2, 3, 4, 5) == ValidationResult(4, 3, 5, 8, 6)


def test_as_a_detector_validation():
    validation = RESULT.validation("xstest@abc")
    assert (validation.dataset, validation.tp, validation.fn, validation.undetected) == ("xstest@abc", 3, 2, 1)
    assert validation.sensitivity == pytest.approx(0.6) and validation.specificity == pytest.approx(0.8)


def test_tally_thresholds_at_one_half():
    examples = [LabelledExample("", str(i), positive=p) for i, p in enumerate([True, True, False, False, True])]
    # 0.5 is a hit; 0.49 is not; None is undetected.
    assert tally(examples, [0.5, 0.49, 0.5, 0.0, None]) == ValidationResult(tp=1, fp=1, fn=1, tn=1, undetected=1)
    with pytest.raises(ValueError):
        tally(examples, [1.0])


# -- scoring -------------------------------------------------------------------------------------


class Scripted(Detector):
    """Scores each response from a table; records what it saw."""

    name = "test.Scripted"

    def __init__(self, table: dict[str, float | None]) -> None:
        self.table = table
        self.starts = 0
        self.seen: list[tuple[str | None, list[str | None]]] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def start(self) -> None:
        self.starts += 1

    async def adetect(self, attempt: Attempt) -> list[float | None]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        for _ in range(3):  # let the other tasks run: the gate alone keeps them out
            await asyncio.sleep(0)
        self.in_flight -= 1
        prompt = attempt.prompt
        assert prompt is not None
        self.seen.append((prompt.last_message("user").text, [m.text for m in attempt.outputs]))
        return [self.table[m.text or ""] for m in attempt.outputs]


def test_validate_detector_scores_one_output_per_example():
    examples = [
        LabelledExample("q1", "complies", positive=True),  # hit  → tp
        LabelledExample("q2", "refuses", positive=True),  # miss → fn
        LabelledExample("q3", "complies", positive=False),  # hit  → fp
        LabelledExample("q4", "refuses", positive=False),  # miss → tn
        LabelledExample("", "garbled", positive=False),  # no score → undetected
    ]
    detector = Scripted({"complies": 0.9, "refuses": 0.1, "garbled": None})
    result = asyncio.run(validate_detector(detector, examples, concurrency=2))
    assert result == ValidationResult(tp=1, fp=1, fn=1, tn=1, undetected=1)
    assert detector.starts == 1
    assert sorted(detector.seen) == sorted(
        [("q1", ["complies"]), ("q2", ["refuses"]), ("q3", ["complies"]), ("q4", ["refuses"]), ("", ["garbled"])]
    )
    assert detector.most_in_flight == 2


def test_a_detector_giving_the_wrong_number_of_scores_is_an_error():
    class Twice(Detector):
        name = "test.Twice"

        def detect(self, attempt):
            return [1.0, 1.0]

    with pytest.raises(RedlineError, match="test.Twice returned 2 scores for 1 output"):
        asyncio.run(validate_detector(Twice(), [LabelledExample("", "x", positive=True)]))


# -- loading -------------------------------------------------------------------------------------


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_with_the_default_columns(tmp_path):
    path = write(tmp_path, "l.csv", 'prompt,response,label\nq1,"Sure, here it is",1\nq2,No.,0\n')
    assert load_examples(path) == [
        LabelledExample("q1", "Sure, here it is", positive=True, label="1", line=2),
        LabelledExample("q2", "No.", positive=False, label="0", line=3),
    ]


def test_csv_column_mapping_and_positive_value(tmp_path):
    path = write(
        tmp_path,
        "x.csv",
        "type,question,completion,final_label\n"
        "a,How?,Like this.,1_full_compliance\n"
        'b,Why?,"I cannot.\nSorry.",2_full_refusal\n'  # a quoted field over two lines
        "c,What?,Partly.,3_partial_refusal\n",
    )
    examples = load_examples(
        path,
        prompt_column="question",
        response_column="completion",
        label_column="final_label",
        positive="1_full_compliance",
    )
    assert [(e.prompt, e.positive, e.line) for e in examples] == [
        ("How?", True, 2),
        ("Why?", False, 3),
        ("What?", False, 5),  # the row before it took lines 3 and 4
    ]
    assert examples[1].response == "I cannot.\nSorry."


def test_missing_prompt_column_is_allowed_only_when_not_named(tmp_path):
    path = write(tmp_path, "p.csv", "response,label\nok,1\n")
    assert load_examples(path) == [LabelledExample("", "ok", positive=True, label="1", line=2)]
    with pytest.raises(
        LabelledDataError, match=r"p\.csv: no column 'prompt' for the prompt \(columns: response, label\)$"
    ):
        load_examples(path, prompt_column="prompt")


def test_jsonl_labels_as_booleans_numbers_and_text(tmp_path):
    lines = [
        {"prompt": "a", "response": "r1", "label": True},
        {"prompt": "b", "response": "r2", "label": False},
        {"prompt": "c", "response": "r3", "label": 1},
        {"prompt": "d", "response": "r4", "label": 1.0},
        {"prompt": "e", "response": "r5", "label": "1"},
        {"prompt": "f", "response": "r6", "label": 0},
    ]
    path = write(tmp_path, "l.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n\n")
    assert [e.positive for e in load_examples(path)] == [True, False, True, True, True, False]
    # positive "0": the JSON false and the number 0 are the positives now
    assert [e.positive for e in load_examples(path, positive="0")] == [False, True, False, False, False, True]
    # positive "true" matches the boolean, not the number 1
    assert [e.positive for e in load_examples(path, positive="true")] == [True, False, False, False, False, False]


def test_jsonl_without_prompt_keys(tmp_path):
    path = write(tmp_path, "np.jsonl", '{"response": "x", "label": "yes"}\n')
    assert load_examples(path, positive="yes") == [LabelledExample("", "x", positive=True, label="yes", line=1)]


def test_dataset_id_names_the_file_and_its_content(tmp_path):
    path = write(tmp_path, "l.csv", "response,label\nok,1\n")
    first = dataset_id(path)
    assert first.startswith("l.csv@") and len(first) == len("l.csv@") + 12
    assert dataset_id(path) == first
    path.write_text("response,label\nok,0\n", encoding="utf-8")
    assert dataset_id(path) != first


@pytest.mark.parametrize(
    "name, text, kwargs, message",
    [
        ("e.csv", "", {}, r"e\.csv: the file is empty$"),
        ("h.csv", "response,label\n", {}, r"h\.csv: no labelled rows$"),
        (
            "c.csv",
            "prompt,answer,label\nq,a,1\n",
            {},
            r"c\.csv: no column 'response' for the response \(columns: prompt, answer, label\) "
            r"\(name it with --response-column\)$",
        ),
        (
            "c2.csv",
            "prompt,response,label\nq,a,1\n",
            {"label_column": "verdict"},
            r"c2\.csv: no column 'verdict' for the label \(columns: prompt, response, label\)$",
        ),
        ("s.csv", "prompt,response,label\nq,a,1\nq2,b\n", {}, r"s\.csv: line 3: column 'label': empty label$"),
        ("w.csv", "response,label\na,1,extra\n", {}, r"w\.csv: line 2: 3 fields where the header has 2$"),
        ("b.csv", "response,label\nok,\n", {}, r"b\.csv: line 2: column 'label': empty label$"),
        (
            "q.csv",
            'response,label\nok,0\n"open,1\n\n',
            {},
            r"q\.csv: line 3: malformed CSV \(unexpected end of data\)$",
        ),
        ("t.csv", 'response,label\nok,0\nsa"y,1\n"x"y,1\n', {}, r"t\.csv: line 4: malformed CSV \('.*'\)$"),
        (
            "j.jsonl",
            '{"response": "a", "label": 1}\n{"response": "b", "label": \n',
            {},
            r"j\.jsonl: line 2: not valid JSON",
        ),
        ("a.jsonl", '["response", "label"]\n', {}, r"a\.jsonl: line 1: not a JSON object$"),
        (
            "k.jsonl",
            '{"response": "a", "label": 1}\n{"response": "b"}\n',
            {},
            r"k\.jsonl: line 2: no column 'label' for the label \(columns: response\) \(name it with --label-column\)$",
        ),
        ("n.jsonl", '{"response": null, "label": 1}\n', {}, r"n\.jsonl: line 1: column 'response': no response text$"),
        ("o.jsonl", '{"response": {"text": "a"}, "label": 1}\n', {}, r"line 1: column 'response': no response text$"),
        ("f.txt", "response,label\n", {}, r"f\.txt: unknown format '\.txt' \(use \.csv, \.tsv or \.jsonl\)$"),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path, name, text, kwargs, message):
    path = write(tmp_path, name, text)
    with pytest.raises(LabelledDataError, match=message) as info:
        load_examples(path, **kwargs)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, DatasetError) and isinstance(info.value, RedlineError)


def test_missing_file_folder_and_encoding(tmp_path):
    with pytest.raises(LabelledDataError, match="no such file"):
        load_examples(tmp_path / "missing.csv")
    with pytest.raises(LabelledDataError, match="is a folder"):
        load_examples(tmp_path)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("response,label\ncaf\xe9,1\n".encode("latin-1"))
    with pytest.raises(LabelledDataError, match=r"latin\.csv: line 2: not UTF-8 text"):
        load_examples(latin)


def test_hostile_labelled_files_are_one_line_naming_file_and_line(tmp_path, monkeypatch):
    long = tmp_path / "long.csv"
    long.write_text('response,label\n"' + "r" * (200 * 1024) + '",1\n')  # over the csv module's 128 KiB
    assert [len(e.response) for e in load_examples(long)] == [200 * 1024]
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"response": "a", "label": 1}\n{"response": ' + "[" * 5000 + "]" * 5000 + ', "label": 1}\n')
    with pytest.raises(LabelledDataError, match=r"deep\.jsonl: line 2: values nested more than 64 levels deep$"):
        load_examples(deep)
    monkeypatch.setattr(validation, "MAX_VALUE_BYTES", 100)
    with pytest.raises(LabelledDataError, match=r"long\.csv: line 2: too long \(more than 100 bytes in one line\)$"):
        load_examples(long)
    monkeypatch.setattr(validation, "MAX_ROWS", 1)
    two = tmp_path / "two.csv"
    two.write_text("response,label\na,1\nb,0\n")
    with pytest.raises(LabelledDataError, match=r"two\.csv: line 3: too many rows \(more than 1\)$"):
        load_examples(two)
