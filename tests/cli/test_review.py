"""``redline review``: the sample's order (disagreements between judges first, then judge hits and
passes in turn, seeded), labelling through piped input (each label saved at once, q and the end
of input keep them, undo, notes), model text made inert, export and import of labels (all or
nothing, FILE:LINE errors), and the line ``redline show`` prints about reviews."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from redline.attempt import ATTEMPT_COMPLETE, Attempt
from redline.cli import review as review_cli
from redline.cli.main import app, main
from redline.detectors.specs import disagreement
from redline.evaluation import FAIL, PASS, UNDETECTED
from redline.report import terminal
from redline.report.review import (
    DISAGREEMENT,
    ReviewError,
    ReviewTally,
    parse_label,
    read_labels,
    review_sample,
)
from redline.store import LABEL_FAIL, LABEL_PASS, ReviewRecord, Store

REQUESTS = "harmful.Requests"
PERSONA = "jailbreak.Persona"
JUDGE = "refusal.Compliance"
HITS_A, PASSES_A = [0, 1, 2], [3, 4, 5]


def _attempt(
    probe: str,
    seq: int,
    verdicts: list,
    *,
    members: dict[str, list[float | None]] | None = None,
    texts: list[str] | None = None,
    error: str | None = None,
    prompt: str | None = None,
) -> Attempt:
    """A finished attempt with one output per verdict, the judge's scores (1.0 for a hit) and,
    with ``members``, an ensemble member's scores under ``ensemble:NAME``."""
    a = Attempt(prompt=prompt or f"request {probe} {seq}", probe_classname=probe, seq=seq)
    a.status = ATTEMPT_COMPLETE
    if error:
        a.notes["error"] = error
        return a
    a.outputs = texts or [f"answer {probe} {seq}.{i}" for i in range(len(verdicts))]
    a.notes["evaluation"] = [str(v) for v in verdicts]
    a.detector_results[JUDGE] = [1.0 if v == FAIL else None if v == UNDETECTED else 0.0 for v in verdicts]
    for name, scores in (members or {}).items():
        a.detector_results[f"ensemble:{name}"] = scores
    return a


def _save_result(store: Store, run_id: str, probe: str, position: int, failed: int, n: int) -> None:
    store.save_probe_result(
        run_id,
        probe,
        position,
        {
            "metrics": {
                "failure_rate": {"value": failed / n, "ci95": [0.1, 0.9], "n": n, "undetected": 0, "details": {}}
            },
            "marks": {},
            "goal": "g",
            "tags": [],
            "detectors": [JUDGE],
            "not_measured": None,
        },
    )


@pytest.fixture()
def db_path(tmp_path) -> Path:
    return tmp_path / "review.db"


@pytest.fixture()
def run_id(db_path) -> str:
    """harmful.Requests: hits 0-2, passes 3-5, errored 6, undetected 7, judges disagreeing on 8
    (verdict pass), agreeing on 9 (hit); jailbreak.Persona: hit 0, pass 1, attempt 2 with a hit
    and a pass output, a bias-style answer on 3 (no pass/fail verdict)."""
    with Store(db_path) as store:
        run = store.create_run("test.echo", {"probe_names": [REQUESTS, PERSONA], "scan": {"generations": 1}})
        for seq in HITS_A:
            store.save_attempt(run, _attempt(REQUESTS, seq, [FAIL]))
        for seq in PASSES_A:
            store.save_attempt(run, _attempt(REQUESTS, seq, [PASS]))
        store.save_attempt(run, _attempt(REQUESTS, 6, [], error="HTTP 500"))
        store.save_attempt(run, _attempt(REQUESTS, 7, [UNDETECTED]))
        store.save_attempt(run, _attempt(REQUESTS, 8, [PASS], members={"a": [0.9], "b": [0.1]}))
        store.save_attempt(run, _attempt(REQUESTS, 9, [FAIL], members={"a": [0.8], "b": [0.7]}))
        store.save_attempt(run, _attempt(PERSONA, 0, [FAIL]))
        store.save_attempt(run, _attempt(PERSONA, 1, [PASS]))
        store.save_attempt(run, _attempt(PERSONA, 2, [FAIL, PASS]))
        store.save_attempt(run, _attempt(PERSONA, 3, ["male"]))
        _save_result(store, run, REQUESTS, 0, 4, 8)
        _save_result(store, run, PERSONA, 1, 2, 4)
    return run


def review(db_path: Path, *args: str, input: str | None = None):
    result = CliRunner().invoke(app, ["review", *args, "--store", str(db_path)], input=input)
    return result


def stored(db_path: Path, run_id: str) -> list[ReviewRecord]:
    with Store(db_path) as store:
        return store.reviews(run_id)


def headers(output: str) -> list[str]:
    """The ``[i/N] probe · attempt S · output K of M · stratum`` lines of a session."""
    return [line for line in output.splitlines() if line.startswith("[")]


# -- the sample ---------------------------------------------------------------------------------


def test_disagreement_needs_members_on_both_sides_of_one_half():
    a = _attempt(REQUESTS, 0, [PASS, PASS, FAIL], members={"a": [0.9, 0.6, 0.5], "b": [0.1, None, 0.49]})
    assert [disagreement(a, i) for i in range(3)] == [True, False, True]
    assert not disagreement(_attempt(REQUESTS, 1, [FAIL]), 0)  # no ensemble


def test_sample_order_disagreements_first_then_hits_and_passes_in_turn(db_path, run_id):
    with Store(db_path) as store:
        sample = review_sample(store, run_id, seed=3)
    # judged outputs only: errored 6, undetected 7 and the bias answer are left out
    keys = {item.key for item in sample}
    assert (REQUESTS, 6, 0) not in keys and (REQUESTS, 7, 0) not in keys and (PERSONA, 3, 0) not in keys
    assert len(sample) == 7 + 1 + 4  # 7 judged in Requests besides 8, the disagreement, 4 in Persona
    assert sample[0].key == (REQUESTS, 8, 0) and sample[0].stratum == DISAGREEMENT
    verdicts = [item.verdict for item in sample[1:]]
    # 6 hits, 5 passes: they alternate until the passes run out
    assert verdicts == [FAIL, PASS] * 5 + [FAIL]
    # the probes take turns within a stratum: both appear among the first two hits
    assert {sample[1].probe, sample[3].probe} == {REQUESTS, PERSONA}


def test_sample_is_seeded_and_limited(db_path, run_id):
    with Store(db_path) as store:
        one = [i.key for i in review_sample(store, run_id, seed=1)]
        again = [i.key for i in review_sample(store, run_id, seed=1)]
        orders = {tuple(i.key for i in review_sample(store, run_id, seed=s)) for s in range(6)}
        assert [i.key for i in review_sample(store, run_id, seed=1, limit=4)] == one[:4]
        only = review_sample(store, run_id, probes=[PERSONA])
        with pytest.raises(ReviewError, match="no attempts of probe 'nope.Probe'"):
            review_sample(store, run_id, probes=["nope.Probe"])
    assert one == again and len(orders) > 1
    assert {i.probe for i in only} == {PERSONA} and len(only) == 4


def test_reviewed_outputs_are_skipped_and_the_order_of_the_rest_is_kept(db_path, run_id):
    with Store(db_path) as store:
        before = review_sample(store, run_id, seed=5)
        hits = [i for i in before if i.stratum == "hit"]
        store.save_reviews([before[0].record(LABEL_PASS), hits[0].record(LABEL_FAIL)])
        after = review_sample(store, run_id, seed=5)
    assert before[0].key not in {i.key for i in after} and hits[0].key not in {i.key for i in after}
    assert [i.key for i in after if i.stratum == "hit"] == [i.key for i in hits[1:]]
    # one hit is labelled, no pass: a pass comes first, then they take turns again
    assert [i.stratum for i in after[:3]] == ["pass", "hit", "pass"]


# -- labelling in the terminal ------------------------------------------------------------------


def test_interactive_labels_are_saved_with_the_verdict(db_path, run_id):
    result = review(
        db_path, run_id, "--seed", "3", "--reviewer", "ana", input="f\nn\nlooks like a refusal\np\ns\nf\nq\n"
    )
    assert result.exit_code == 0, result.output
    with Store(db_path) as store:
        sample = review_sample(store, run_id, seed=3, skip_reviewed=False)
    reviews = {(r.probe, r.seq, r.output): r for r in stored(db_path, run_id)}
    first, second, fourth = sample[0], sample[1], sample[3]
    assert set(reviews) == {first.key, second.key, fourth.key}  # the third was skipped
    assert reviews[first.key].label == LABEL_FAIL and reviews[first.key].verdict == PASS
    assert reviews[second.key].label == LABEL_PASS and reviews[second.key].verdict == FAIL
    assert reviews[second.key].note == "looks like a refusal"
    assert reviews[fourth.key].label == LABEL_FAIL and reviews[fourth.key].judge_wrong is False
    assert {r.reviewer for r in reviews.values()} == {"ana"}
    # what was shown: position, probe, attempt, output, stratum, request, output, verdict, scores
    shown = headers(result.output)
    assert shown[0] == f"[1/12] {REQUESTS} · attempt 8 · output 1 of 1 · judges disagree"
    assert len(shown) == 5  # the fifth output was shown, then q
    assert f"request {REQUESTS} 8" in result.output and f"answer {REQUESTS} 8.0" in result.output
    assert "scores: ensemble:a 0.90 · ensemble:b 0.10 · refusal.Compliance 0.00" in result.output
    assert "judge: pass" in result.output
    # the end: how many labelled, how often the judge was wrong in this session
    assert "labelled 3 outputs, skipped 1; the judge was wrong on 2 of 3 (66.7%" in result.output
    assert "1 hit the reviewer passed, 1 pass the reviewer failed" in result.output


def test_end_of_input_keeps_the_labels_made(db_path, run_id):
    result = review(db_path, run_id, "--seed", "3", input="p\np\n")
    assert result.exit_code == 0, result.output
    assert len(stored(db_path, run_id)) == 2
    assert len(headers(result.output)) == 3  # the third was shown; the input ended
    assert "labelled 2 outputs" in result.output
    # a second session starts where the first stopped: the labelled outputs are not shown again
    again = review(db_path, run_id, "--seed", "3", input="q\n")
    with Store(db_path) as store:
        sample = review_sample(store, run_id, seed=3, skip_reviewed=False)
    item = sample[2]
    assert headers(again.output)[0].startswith(f"[1/10] {item.probe} · attempt {item.seq} ·")
    assert "no output labelled" in again.output


def test_undo_removes_the_last_label_and_asks_again(db_path, run_id):
    result = review(db_path, run_id, "--seed", "3", input="f\np\nu\nf\nu\nu\nu\np\nq\n")
    assert result.exit_code == 0, result.output
    with Store(db_path) as store:
        sample = review_sample(store, run_id, seed=3, skip_reviewed=False)
    # f, p, undo p, f (second now fail), undo, undo first, nothing to undo, p on the first
    assert [(r.probe, r.seq, r.label) for r in stored(db_path, run_id)] == [
        (sample[0].probe, sample[0].seq, LABEL_PASS)
    ]
    assert "nothing to undo" in result.output
    assert "labelled 1 output;" in result.output


def test_unknown_answers_are_asked_again(db_path, run_id):
    result = review(db_path, run_id, "--limit", "1", input="maybe\n\nfailed\n")
    assert result.exit_code == 0, result.output
    assert result.output.count("answer f (the model failed)") == 2
    assert [r.label for r in stored(db_path, run_id)] == [LABEL_FAIL]


def test_model_text_cannot_drive_the_terminal(db_path):
    hostile = "\x1b[31mRED\x1b[0m then \x1b]0;pwned title\x07 and a bell\x07\rover[bold]x[/bold]"
    with Store(db_path) as store:
        run = store.create_run("test.echo", {"probe_names": [REQUESTS]})
        store.save_attempt(run, _attempt(REQUESTS, 0, [FAIL], texts=[hostile], prompt="say \x1b[2J please"))
    result = review(db_path, run, input="s\n")
    assert result.exit_code == 0, result.output
    out = result.output
    for raw in ("\x1b[31m", "\x1b]0;", "\x07", "\x1b[2J", "\r"):
        assert raw not in out
    assert "\\x1b[31mRED\\x1b[0m then \\x1b]0;pwned title\\x07" in out
    assert "say \\x1b[2J please" in out
    assert "over[bold]x[/bold]" in out  # no markup read from model text


def test_nothing_to_review(db_path):
    with Store(db_path) as store:
        run = store.create_run("test.echo", {"probe_names": [REQUESTS]})
        store.save_attempt(run, _attempt(REQUESTS, 0, [UNDETECTED]))
    result = review(db_path, run, input="")
    assert result.exit_code == 0 and "nothing to review" in result.output


def test_probe_option_takes_lists_and_repeats(db_path, run_id):
    result = review(db_path, run_id, "--probe", PERSONA, "--probe", f"{PERSONA},", input="q\n")
    assert headers(result.output)[0].startswith(f"[1/4] {PERSONA}")


# -- export and import --------------------------------------------------------------------------


def test_export_then_import_round_trip(db_path, run_id, tmp_path):
    target = tmp_path / "sample.csv"
    result = review(db_path, run_id, "--export", str(target), "--limit", "5", "--seed", "3")
    assert result.exit_code == 0, result.output
    assert stored(db_path, run_id) == []  # exporting labels nothing
    with target.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["run_id", "probe", "seq", "output", "verdict", "prompt", "response", "label", "note"]
    with Store(db_path) as store:
        sample = review_sample(store, run_id, seed=3, limit=5)
    assert [(r["probe"], int(r["seq"]), int(r["output"])) for r in rows] == [i.key for i in sample]
    assert rows[0]["verdict"] == PASS and rows[0]["prompt"] == f"request {REQUESTS} 8"
    assert rows[0]["response"] == f"answer {REQUESTS} 8.0" and rows[0]["label"] == ""
    # label four of them the way a spreadsheet might, leave one empty
    for row, label in zip(rows, ["fail", "PASS", "1", "no", ""]):
        row["label"] = label
    rows[0]["note"] = "ensemble member b missed it"
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = review(db_path, run_id, "--import", str(target), "--reviewer", "bo")
    assert result.exit_code == 0, result.output
    reviews = {(r.probe, r.seq, r.output): r for r in stored(db_path, run_id)}
    assert set(reviews) == {i.key for i in sample[:4]}
    assert [reviews[i.key].label for i in sample[:4]] == [LABEL_FAIL, LABEL_PASS, LABEL_FAIL, LABEL_PASS]
    assert [reviews[i.key].verdict for i in sample[:4]] == [i.verdict for i in sample[:4]]
    assert reviews[sample[0].key].note == "ensemble member b missed it"
    assert {r.reviewer for r in reviews.values()} == {"bo"}
    wrong = sum(1 for i in sample[:4] if reviews[i.key].judge_wrong)
    assert f"imported 4 labels from {target}; the judge was wrong on {wrong} of 4" in result.output
    # the imported outputs are not offered again
    with Store(db_path) as store:
        assert not {i.key for i in review_sample(store, run_id)} & set(reviews)


def test_export_jsonl(db_path, run_id, tmp_path):
    target = tmp_path / "sample.jsonl"
    assert review(db_path, run_id, "--export", str(target), "--limit", "3").exit_code == 0
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3 and rows[0]["run_id"] == run_id and rows[0]["label"] == ""


def test_import_jsonl_with_defaults_and_other_label_spellings(db_path, run_id, tmp_path):
    labels = tmp_path / "labels.jsonl"
    lines = [
        {"probe": REQUESTS, "seq": 7, "label": True, "reviewer": "cy"},  # undetected: stored as such
        {"probe": PERSONA, "seq": 2, "output": 1, "label": "yes", "run_id": run_id},
        {"probe": PERSONA, "seq": 0, "label": 0},
        {"probe": PERSONA, "seq": 0, "label": "false", "note": "later row wins"},
    ]
    labels.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    result = review(db_path, run_id, "--import", str(labels), "--reviewer", "dee")
    assert result.exit_code == 0, result.output
    got = {(r.probe, r.seq, r.output): (r.label, r.verdict, r.reviewer, r.note) for r in stored(db_path, run_id)}
    assert got == {
        (REQUESTS, 7, 0): (LABEL_FAIL, UNDETECTED, "cy", None),
        (PERSONA, 2, 1): (LABEL_FAIL, PASS, "dee", None),
        (PERSONA, 0, 0): (LABEL_PASS, FAIL, "dee", "later row wins"),
    }
    assert "imported 3 labels" in result.output and "the judge was wrong on 2 of 2" in result.output


@pytest.mark.parametrize(
    ("body", "line", "problem"),
    [
        ("probe,seq,label\nharmful.Requests,0,fail\nharmful.Requests,99,fail\n", 3, "has no attempt 99"),
        ("probe,seq,output,label\nharmful.Requests,0,1,pass\n", 2, "has no output 1"),
        ("probe,seq,label\nharmful.Requests,6,pass\n", 2, "has no output (it errored)"),
        ("probe,seq,label\nnope.Probe,0,pass\n", 2, "has no attempt 0 of probe 'nope.Probe'"),
        ("probe,seq,label\nharmful.Requests,0,fail\nharmful.Requests,1,maybe\n", 3, "label 'maybe' is not"),
        ('probe,seq,label,note\nharmful.Requests,0,fail,"two\nlines"\nharmful.Requests,x,fail,\n', 4, "seq 'x' is not"),
        ("run_id,probe,seq,label\nother,harmful.Requests,0,fail\n", 2, "run_id 'other' is not the run"),
        ("probe,label\nharmful.Requests,fail\n", 1, "no column seq"),
    ],
)
def test_a_bad_row_names_file_and_line_and_nothing_is_saved(db_path, run_id, tmp_path, capsys, body, line, problem):
    labels = tmp_path / "labels.csv"
    labels.write_text(body, encoding="utf-8")
    with Store(db_path) as store:
        with pytest.raises(ReviewError) as caught:
            read_labels(labels, store, run_id)
    assert str(caught.value).startswith(f"{labels}:{line}: ") and problem in str(caught.value)
    with pytest.raises(SystemExit) as exited:
        main(["review", run_id, "--store", str(db_path), "--import", str(labels)])
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {labels}:{line}: ")
    assert stored(db_path, run_id) == []


def test_labels_parse():
    assert [parse_label(v) for v in ("fail", " Pass ", "1", "0", "TRUE", "no", 1, 0, True, "", None)] == [
        LABEL_FAIL,
        LABEL_PASS,
        LABEL_FAIL,
        LABEL_PASS,
        LABEL_FAIL,
        LABEL_PASS,
        LABEL_FAIL,
        LABEL_PASS,
        LABEL_FAIL,
        None,
        None,
    ]
    with pytest.raises(ValueError):
        parse_label(2)


def test_import_and_export_together_is_a_usage_error(db_path, run_id, tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["review", run_id, "--store", str(db_path), "--import", "a.csv", "--export", "b.csv"])
    assert exited.value.code == 1 and "cannot be combined" in capsys.readouterr().err


def test_unknown_run_is_one_error_line(db_path, run_id, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["review", "no-such-run", "--store", str(db_path)])
    err = capsys.readouterr().err
    assert exited.value.code == 1 and err.startswith("error: ") and err.count("\n") == 1 and "no-such-run" in err


def test_a_jsonl_row_without_a_label_is_an_error(db_path, run_id, tmp_path):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"probe": REQUESTS, "seq": 0, "Label": "fail"}) + "\n", encoding="utf-8")
    with Store(db_path) as store, pytest.raises(ReviewError, match=f"^{re.escape(str(labels))}:1: no label$"):
        read_labels(labels, store, run_id)


def test_export_into_a_missing_folder_is_one_error_line(db_path, run_id, tmp_path, capsys):
    target = tmp_path / "missing" / "sample.csv"
    with pytest.raises(SystemExit) as exited:
        main(["review", run_id, "--store", str(db_path), "--export", str(target)])
    err = capsys.readouterr().err
    assert exited.value.code == 1 and err.count("\n") == 1 and err.startswith(f"error: cannot write {target}")
    assert not target.parent.exists()


# -- what show says -----------------------------------------------------------------------------


def test_show_says_how_often_the_judge_was_wrong(db_path, run_id):
    before = CliRunner().invoke(app, ["show", run_id, "--store", str(db_path)])
    assert before.exit_code == 5, before.output  # an attempt of the run errored
    assert "Reviewed:" not in before.output
    with Store(db_path) as store:
        store.save_reviews(
            [
                ReviewRecord(run_id, REQUESTS, 0, 0, LABEL_FAIL, FAIL),
                ReviewRecord(run_id, REQUESTS, 1, 0, LABEL_PASS, FAIL),
                ReviewRecord(run_id, REQUESTS, 3, 0, LABEL_PASS, PASS),
                ReviewRecord(run_id, PERSONA, 1, 0, LABEL_PASS, PASS),
            ]
        )
    after = CliRunner().invoke(app, ["show", run_id, "--store", str(db_path)])
    assert after.exit_code == 5, after.output
    line = next(x for x in after.output.splitlines() if x.startswith("Reviewed:"))
    assert line == "Reviewed: 4 outputs; the judge was wrong on 1 (25.0%, 95% CI 4.6–69.9%)"
    lines = after.output.splitlines()
    assert lines.index(line) > next(i for i, x in enumerate(lines) if x.startswith("model failed:"))  # under the table
    # JSON stays the summary alone
    as_json = CliRunner().invoke(app, ["show", run_id, "--store", str(db_path), "--json"])
    assert "Reviewed:" not in as_json.stdout


def test_review_line_with_undetected_reviews():
    tally = ReviewTally.of(
        [
            ReviewRecord("r", REQUESTS, 0, 0, LABEL_FAIL, UNDETECTED),
            ReviewRecord("r", REQUESTS, 1, 0, LABEL_FAIL, PASS),
        ]
    )
    assert (tally.reviewed, tally.judged, tally.wrong, tally.false_hits, tally.missed) == (2, 1, 1, 0, 1)
    assert terminal.review_line(tally).startswith("Reviewed: 2 outputs; the judge was wrong on 1 of 1 (100.0%")


def test_ctrl_c_keeps_the_labels_and_prints_the_session(db_path, run_id, monkeypatch):
    answers = iter(["f", "p"])

    def ask(question: str) -> str | None:
        answer = next(answers, None)
        if answer is None:
            raise KeyboardInterrupt
        return answer

    monkeypatch.setattr(review_cli, "_ask", ask)
    result = review(db_path, run_id)
    assert result.exit_code == 130
    assert [r.label for r in stored(db_path, run_id)].count(LABEL_FAIL) == 1 and len(stored(db_path, run_id)) == 2
    assert "labelled 2 outputs" in result.output


def test_hostile_labels_files_are_bounded(db_path, run_id, tmp_path):
    """A note over the csv module's 128 KiB is read; deep JSON, bad bytes and a huge number are one
    FILE:LINE error each (not an internal error)."""
    labels = tmp_path / "labels.csv"
    labels.write_text(f'probe,seq,label,note\n{REQUESTS},0,fail,"' + "n" * (200 * 1024) + '"\n', encoding="utf-8")
    with Store(db_path) as store:
        assert [len(r.note or "") for r in read_labels(labels, store, run_id)] == [200 * 1024]
        for name, content, problem in [
            ("deep.jsonl", b'{"label": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", ":1: values nested more than 64"),
            ("bad.csv", b"probe,seq,label\n" + REQUESTS.encode() + b",0,f\xe4il\n", ":2: not UTF-8 text"),
            ("int.jsonl", b'{"seq": ' + b"1" * 5000 + b"}\n", ":1: a value cannot be read"),
        ]:
            path = tmp_path / name
            path.write_bytes(content)
            with pytest.raises(ReviewError) as caught:
                read_labels(path, store, run_id)
            assert str(caught.value).startswith(f"{path}{problem}"), caught.value
