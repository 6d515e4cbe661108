"""``redline detectors validate``: a detector scored against a labelled file made here, printed
for a person, as JSON with exactly the contract's keys, and saved in the store; user mistakes
are one ``error:`` line with exit status 1. The detector is ``strings.Regex`` with a pattern
that gets some rows wrong, so the numbers are not trivial (worked out by hand below)."""

from __future__ import annotations

import csv
import json

import pytest

from redline.cli.detectors import parse_options
from redline.cli.main import main
from redline.detectors import check_detector_spec, get_detector
from redline.store import Store

# (prompt, response, human label): the pattern "sure|here" scores a hit on rows 1, 2 and 5.
ROWS = [
    ("q1", "Sure, here is how to do it.", 1),  # hit, labelled 1  → tp
    ("q2", "Here you go: step 1, step 2.", 1),  # hit, labelled 1  → tp
    ("q3", "Step 1: mix the two.", 1),  # miss, labelled 1 → fn
    ("q4", "I cannot help with that.", 0),  # miss, labelled 0 → tn
    ("q5", "Sure, but I cannot do that.", 0),  # hit, labelled 0  → fp
    ("q6", "No.", 0),  # tn
    ("q7", "That would not be right.", 0),  # tn
    ("q8", "Of course: first, take the lid off.", 1),  # fn
]
# tp=2 fp=1 fn=2 tn=3: accuracy 5/8, precision 2/3, recall 2/4, F1 4/7, predicted 3/8, labelled 4/8.
EXPECTED = {
    "n": 8,
    "accuracy": 0.625,
    "precision": 2 / 3,
    "recall": 0.5,
    "f1": 4 / 7,
    "predicted_rate": 0.375,
    "labelled_rate": 0.5,
    "confusion": {"tp": 2, "fp": 1, "fn": 2, "tn": 3, "undetected": 0},
}
KEYS = ["n", "accuracy", "precision", "recall", "f1", "predicted_rate", "labelled_rate", "confusion", "ci95"]
PATTERN = ["--detector", "strings.Regex", "--detector-opt", "pattern=sure|here"]


@pytest.fixture
def run_cli(monkeypatch, capsys):
    """``run_cli(*args)`` → (exit status, stdout, non-empty stderr lines) of ``redline ARGS``."""
    monkeypatch.delenv("REDLINE_DEBUG", raising=False)
    monkeypatch.delenv("REDLINE_STORE", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")

    def run(*args: str) -> tuple[int, str, list[str]]:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main([str(a) for a in args])
        captured = capsys.readouterr()
        return (
            int(exit_info.value.code or 0),
            captured.out,
            [line for line in captured.err.splitlines() if line.strip()],
        )

    return run


@pytest.fixture
def labels_csv(tmp_path):
    path = tmp_path / "labels.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["prompt", "response", "label"])
        writer.writerows(ROWS)
    return path


def check_numbers(data: dict) -> None:
    assert list(data) == KEYS
    for key, value in EXPECTED.items():
        assert data[key] == (value if isinstance(value, (int, dict)) else pytest.approx(value)), key
    ci = data["ci95"]
    assert set(ci) == {"accuracy", "precision", "recall", "f1", "predicted_rate", "labelled_rate"}
    for metric, (lo, hi) in ci.items():
        assert 0.0 <= lo <= data[metric] <= hi <= 1.0, metric
    # Wilson 5/8 for the accuracy
    assert ci["accuracy"] == pytest.approx([0.3057, 0.8632], abs=1e-4)


def test_json_has_exactly_the_contract_keys_and_hand_computed_numbers(run_cli, labels_csv):
    code, out, err = run_cli("detectors", "validate", labels_csv, *PATTERN, "--json")
    assert (code, err) == (0, [])
    check_numbers(json.loads(out))


def test_other_columns_and_a_positive_value_give_the_same_result(run_cli, tmp_path):
    path = tmp_path / "mapped.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for prompt, response, label in ROWS:
            verdict = "complied" if label else "refused"
            handle.write(json.dumps({"question": prompt, "answer": response, "verdict": verdict}) + "\n")
    args = ["--prompt-column", "question", "--response-column", "answer", "--label-column", "verdict"]
    code, out, err = run_cli("detectors", "validate", path, *PATTERN, *args, "--positive", "complied", "--json")
    assert (code, err) == (0, [])
    check_numbers(json.loads(out))

    # Without --positive, no row is labelled "1": every row is negative, and a note says why.
    code, out, err = run_cli("detectors", "validate", path, *PATTERN, *args, "--json")
    assert code == 0
    assert json.loads(out)["confusion"] == {"tp": 0, "fp": 3, "fn": 0, "tn": 5, "undetected": 0}
    assert err == [
        "note: no row has the label '1' (labels: 'complied', 'refused'); set the positive value with --positive"
    ]


def test_human_output(run_cli, labels_csv):
    code, out, err = run_cli("detectors", "validate", labels_csv, *PATTERN)
    assert (code, err) == (0, [])
    lines = [line.strip() for line in out.splitlines()]
    assert lines[0] == "strings.Regex (version 1) on labels.csv: 8 rows, 0 undetected"
    rows = {line.split("  ")[0]: line.split() for line in lines if line}
    assert rows["accuracy"][1:] == ["62.5%", "30.6–86.3%"]
    assert rows["precision"][1] == "66.7%"
    assert rows["recall"][1] == "50.0%"
    assert rows["F1"][1] == "0.571"
    assert rows["predicted rate"][2] == "37.5%"
    assert rows["labelled rate"][2] == "50.0%"
    assert rows["label 1"][2:] == ["2", "tp", "2", "fn"]
    assert rows["other labels"][2:] == ["1", "fp", "3", "tn"]
    assert "undetected (no score, left out of the metrics): 0" in lines


def test_save_stores_a_validation_record(run_cli, labels_csv, tmp_path):
    store = tmp_path / "s.db"
    code, out, err = run_cli("detectors", "validate", labels_csv, *PATTERN, "--save", "--store", store, "--json")
    assert code == 0
    check_numbers(json.loads(out))  # stdout stays JSON only
    with Store(store) as db:
        records = db.validations("strings.Regex")
    assert len(records) == 1
    record = records[0]
    assert (record.detector, record.version) == ("strings.Regex", "1")
    assert (record.tp, record.fp, record.fn, record.tn, record.undetected) == (2, 1, 2, 3, 0)
    assert record.dataset.startswith("labels.csv@") and len(record.dataset) == len("labels.csv@") + 12
    assert record.created > 0
    assert err == [f"saved: strings.Regex version 1 on {record.dataset} in {store}"]

    # An edited file is another dataset: a second record, listed first.
    labels_csv.write_text(labels_csv.read_text(encoding="utf-8") + "q9,Sure.,1\n", encoding="utf-8")
    assert run_cli("detectors", "validate", labels_csv, *PATTERN, "--save", "--store", store)[0] == 0
    with Store(store) as db:
        records = db.validations("strings.Regex", version="1")
    assert [r.tp for r in records] == [3, 2]
    assert records[0].dataset != records[1].dataset


def test_undetected_rows_are_counted_apart(run_cli, tmp_path):
    """refusal.Compliance scores an answer, a refusal, and cannot tell on an answer with neither
    (undetected)."""
    path = tmp_path / "judged.csv"
    answer = "Sure, here is how: step 1 mix the flour and water, step 2 knead the dough and bake it until golden."
    path.write_text(
        "prompt,response,label\n"
        f'How do I bake bread at home?,"{answer}",1\n'  # a hit → tp
        "How do I bake bread at home?,I am sorry but I cannot help with that.,1\n"  # a miss → fn
        f'How do I bake bread at home?,"{answer}",0\n'  # fp
        "How do I bake bread at home?,Hmm.,0\n",  # undetected
        encoding="utf-8",
    )
    code, out, err = run_cli("detectors", "validate", path, "--detector", "refusal.Compliance", "--json")
    assert (code, err) == (0, [])
    data = json.loads(out)
    assert data["n"] == 4
    assert data["confusion"] == {"tp": 1, "fp": 1, "fn": 1, "tn": 0, "undetected": 1}
    assert data["accuracy"] == pytest.approx(1 / 3)  # over the 3 scored rows


@pytest.mark.parametrize("spec", ["strings.Regex+refusal.Keywords", "strings.Regex + refusal.Keywords"])
def test_an_ensemble_takes_its_members_options_by_name(run_cli, labels_csv, spec):
    """strings.Regex (pattern from MEMBER.KEY=VALUE) + refusal.Keywords (the phrase list), soft
    vote: a row is a hit when either scores 1 (mean 0.5). Keywords scores 0 only on the two
    rows with "I cannot" (4 and 5), so rows 3, 6, 7, 8 become hits: tp=4, fp=3, fn=0, tn=1."""
    code, out, err = run_cli(
        "detectors", "validate", labels_csv, "-d", spec, "--detector-opt", "strings.Regex.pattern=sure|here", "--json"
    )
    assert (code, err) == (0, [])
    assert json.loads(out)["confusion"] == {"tp": 4, "fp": 3, "fn": 0, "tn": 1, "undetected": 0}


def test_a_member_named_by_a_relative_path_gets_its_options(tmp_path, monkeypatch):
    """The ensemble names its members with absolute paths; an option given with the path as
    written reaches the member all the same (not dropped for want of the same name)."""
    monkeypatch.chdir(tmp_path)
    spec = "hf:./judge+refusal.Keywords"
    own, by_name = parse_options(["hf:./judge.label=unsafe"], spec)
    assert (own, by_name) == ({}, {check_detector_spec("hf:./judge"): {"label": "unsafe"}})
    assert get_detector(spec, options_by_name=by_name).members[0].label == "unsafe"
    own, _ = parse_options(["label=unsafe", f"{spec}.threshold=0.6"], spec)
    assert own == {"label": "unsafe", "threshold": 0.6}


def test_detectors_list_is_an_alias_of_list_detectors(run_cli):
    code, out, _ = run_cli("detectors", "list", "--json")
    assert code == 0
    names = [row["name"] for row in json.loads(out)]
    assert "refusal.Compliance" in names and "strings.Regex" in names
    assert run_cli("list", "detectors", "--json")[1] == out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--detector", "refusal.Complianc"], "error: unknown detector 'refusal.Complianc'"),
        (["--detector", "strings.Regex", "--label-column", "verdict"], "no column 'verdict' for the label"),
        (
            ["--detector", "strings.Regex", "--detector-opt", "pattern"],
            "error: --detector-opt 'pattern': expected KEY=VALUE",
        ),
        (
            ["--detector", "strings.Regex", "--detector-opt", "colour=red"],
            "error: detector strings.Regex: bad --detector-opt",
        ),
        (["--detector", "strings.Regex", "--detector-opt", "pattern=("], "error: strings.Regex: invalid pattern '('"),
        (
            ["--detector", "strings.Regex", "--detector-opt", "toxicity.Classifier.model=x"],
            "error: --detector-opt toxicity.Classifier.KEY=VALUE: 'toxicity.Classifier' is not part of the detector",
        ),
    ],
)
def test_user_mistakes_are_one_line_and_exit_1(run_cli, labels_csv, extra, message):
    code, out, err = run_cli("detectors", "validate", labels_csv, *extra)
    assert code == 1 and out == ""
    assert len(err) == 1 and message in err[0], err


def test_a_bad_file_is_one_line_and_exit_1(run_cli, tmp_path):
    code, _, err = run_cli("detectors", "validate", tmp_path / "missing.csv", *PATTERN)
    assert (code, err) == (1, [f"error: {tmp_path / 'missing.csv'}: no such file"])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"response": "a", "label": 1}\n{oops\n', encoding="utf-8")
    code, _, err = run_cli("detectors", "validate", broken, *PATTERN)
    assert code == 1 and len(err) == 1
    assert err[0].startswith(f"error: {broken}: line 2: not valid JSON")


def test_save_refuses_a_validation_in_which_no_row_was_scored(run_cli, labels_csv, tmp_path):
    store = tmp_path / "s.db"
    assert run_cli("detectors", "validate", labels_csv, *PATTERN, "--save", "--store", store)[0] == 0
    unscorable = tmp_path / "unscorable.csv"
    question = "How do I bake bread at home?"
    unscorable.write_text(f"prompt,response,label\n{question},Hmm.,1\n{question},Hmm.,0\n", encoding="utf-8")
    code, out, err = run_cli(
        "detectors", "validate", unscorable, "-d", "refusal.Compliance", "--save", "--store", store, "--json"
    )
    assert code != 0
    assert json.loads(out)["confusion"]["undetected"] == 2  # the result is still shown
    assert len(err) == 1 and err[0].startswith("error: not saved: refusal.Compliance scored none of the 2 rows")
    with Store(store) as db:
        assert db.validations("refusal.Compliance") == []
        assert len(db.validations("strings.Regex")) == 1
