"""Train ``harm.Substance``: the logistic model over :func:`redline.detectors.harm.features`.

Training data (licences allow a shipped model to learn from them; see ``shared/judge-dev/README.md``):

* GPTFuzz labelled jailbreak responses (Yu et al., 2023; MIT): ``label`` 1 = the response delivers
  the harmful question (0 also covers in-character answers that give nothing harmful);
* XSTest v2 completions of three models (Röttger et al., 2024; CC BY 4.0) to its unsafe prompts
  (``type`` starting ``contrast_``): harm = full compliance.

The judge reads answers to harmful requests, so it learns from those only. The answers to XSTest's
safe prompts (none of them harm) are reported apart, as the rate at which harmless answers to
borderline questions are scored harm. The script reports cross-validation folds split by request
(GPTFuzz question / XSTest prompt), fits the model on all the training rows, picks the threshold from the out-of-fold predictions (the one that best
matches the labelled harm rate while keeping accuracy), and writes the weights to
``src/redline/detectors/../data/harm_substance.json``. With ``--evaluate FILE`` (a CSV of
``question, answer, label``, e.g. ``saferlhf_mini.csv``) it reports the shipped model on that
file; such a file is never used for training or for choosing the threshold.

    python bench/train_harm_judge.py [--data ../shared/judge-dev] [--no-write] [--train-safe] [--evaluate FILE ...]

Deterministic: the same data gives the same weights (L-BFGS from zeros, fixed folds).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from redline.detectors.harm import FEATURE_NAMES, WEIGHTS_FILE, features, readings  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "judge-dev"
OUTPUT = REPO / "src" / "redline" / "data" / WEIGHTS_FILE
XSTEST = ("xstest_v2_gpt4.csv", "xstest_v2_llama2new.csv", "xstest_v2_mistralinstruct.csv")
#: L2 penalty on the standardised weights.
L2 = 1.0
FOLDS = 5
#: Features whose direction is known: more of them never makes an answer less harmful (``(0, None)``)
#: or more harmful (``(None, 0)``). The training data has few placeholders, codes or quantities;
#: the signs keep what it cannot teach from being learned backwards.
SIGNS: dict[str, tuple[float | None, float | None]] = {
    "complied": (0, None),
    "log_substance": (0, None),
    "request_coverage": (0, None),
    "log_steps_with_content": (0, None),
    "log_quantities": (0, None),
    "code": (0, None),
    "urls": (0, None),
    "imperative_share": (0, None),
    "you_can": (0, None),
    "harm_term_rate": (0, None),
    "redirected": (None, 0),
    "empty_after_refusal": (None, 0),
    "placeholders": (None, 0),
    "placeholder_share": (None, 0),
    "warning_rate": (None, 0),
    "hedge_rate": (None, 0),
    "question_share": (None, 0),
    "log_short_items": (None, 0),
}


def load_training(data: Path) -> tuple[list[str], list[str], list[int], list[str]]:
    """Requests, answers, harm labels and group keys (one per request; ``xstest-safe:`` for the
    safe prompts, which are not trained on) of GPTFuzz and XSTest."""
    questions = {row["index"]: row["text"] for row in csv.DictReader((data / "gptfuzz_questions.csv").open())}
    requests, answers, labels, groups = [], [], [], []
    for row in csv.DictReader((data / "gptfuzz_train.csv").open(encoding="utf-8")):
        requests.append(questions[row["question"]])
        answers.append(row["Response"])
        labels.append(int(row["label"]))
        groups.append(f"gptfuzz:{row['question']}")
    for filename in XSTEST:
        for row in csv.DictReader((data / filename).open(encoding="utf-8")):
            requests.append(row["prompt"])
            answers.append(row["completion"])
            unsafe = row["type"].startswith("contrast_")
            labels.append(int(unsafe and row["final_label"] == "1_full_compliance"))
            groups.append(f"xstest:{row['id']}" if unsafe else f"xstest-safe:{row['id']}")
    return requests, answers, labels, groups


def matrix(requests: list[str], answers: list[str]) -> np.ndarray:
    return np.array([features(q, a) for q, a in zip(requests, answers)], dtype=float)


def rest_matrix(requests: list[str], answers: list[str]) -> np.ndarray:
    """The features of what follows an answer's opening refusal (:func:`readings`); a row of NaN
    for an answer without one."""
    rows = []
    for q, a in zip(requests, answers):
        texts = readings(q, a)
        rows.append(features(q, texts[1]) if len(texts) > 1 else [math.nan] * len(FEATURE_NAMES))
    return np.array(rows, dtype=float)


def judged(model: tuple[np.ndarray, np.ndarray, np.ndarray, float], x: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """The probability the detector acts on: the higher of the answer's and of what follows its
    opening refusal (the same order of answers as a threshold on the score)."""
    alternative = predict(model, np.nan_to_num(rest))
    return np.where(np.isnan(rest[:, 0]), predict(model, x), np.maximum(predict(model, x), alternative))


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Mean, scale, weights and bias of an L2-penalised logistic regression on ``x``, ``y``."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        logits = z @ w + b
        p = 1.0 / (1.0 + np.exp(-logits))
        value = np.sum(np.logaddexp(0.0, logits) - y * logits) + 0.5 * L2 * w @ w
        grad = np.append(z.T @ (p - y) + L2 * w, np.sum(p - y))
        return float(value), grad

    bounds = [SIGNS.get(name, (None, None)) for name in FEATURE_NAMES] + [(None, None)]
    result = minimize(
        loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 2000}
    )
    return mean, scale, result.x[:-1], float(result.x[-1])


def predict(model: tuple[np.ndarray, np.ndarray, np.ndarray, float], x: np.ndarray) -> np.ndarray:
    mean, scale, w, b = model
    return 1.0 / (1.0 + np.exp(-(((x - mean) / scale) @ w + b)))


def folds(groups: list[str]) -> np.ndarray:
    """A fold number per row: requests dealt round-robin in sorted order, so a request's rows share a fold."""
    order = {g: i % FOLDS for i, g in enumerate(sorted(set(groups)))}
    return np.array([order[g] for g in groups])


def metrics(y: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    tp = int(np.sum((predicted == 1) & (y == 1)))
    fp = int(np.sum((predicted == 1) & (y == 0)))
    fn = int(np.sum((predicted == 0) & (y == 1)))
    tn = int(np.sum((predicted == 0) & (y == 0)))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "n": len(y),
        "accuracy": (tp + tn) / len(y),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "predicted_rate": float(np.mean(predicted)),
        "labelled_rate": float(np.mean(y)),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
    }


def choose_threshold(y: np.ndarray, p: np.ndarray) -> float:
    """The threshold with the best accuracy on out-of-fold probabilities, ties to the one whose
    predicted rate is nearest the labelled rate."""
    candidates = np.round(np.arange(0.20, 0.81, 0.01), 2)
    best = max(
        candidates,
        key=lambda t: (round(float(np.mean((p >= t) == y)), 3), -abs(float(np.mean(p >= t) - np.mean(y)))),
    )
    return float(best)


def row_line(name: str, m: dict[str, float]) -> str:
    return (
        f"| {name} | {m['n']} | {m['accuracy']:.3f} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} "
        f"| {m['predicted_rate']:.3f} | {m['labelled_rate']:.3f} |"
    )


def evaluate_file(path: Path, model: tuple[np.ndarray, np.ndarray, np.ndarray, float], threshold: float) -> str:
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    questions, answers = [r["question"] for r in rows], [r["answer"] for r in rows]
    x, rest = matrix(questions, answers), rest_matrix(questions, answers)
    y = np.array([int(r["label"]) for r in rows])
    return row_line(f"{path.name} (held out)", metrics(y, (judged(model, x, rest) >= threshold).astype(int)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--no-write", action="store_true", help="report only; leave the shipped weights alone")
    parser.add_argument("--evaluate", type=Path, nargs="*", default=[], help="held-out CSVs (question, answer, label)")
    parser.add_argument(
        "--train-safe",
        action="store_true",
        help="also train on the answers to XSTest's safe prompts, as no harm (an experiment; implies --no-write)",
    )
    args = parser.parse_args(argv)

    requests, answers, labels, groups = load_training(args.data)
    x, y = matrix(requests, answers), np.array(labels)
    rest = rest_matrix(requests, answers)
    fold = folds(groups)
    safe = np.array([g.startswith("xstest-safe:") for g in groups])
    used = np.ones(len(y), dtype=bool) if args.train_safe else ~safe
    out_of_fold = np.zeros(len(y))
    for k in range(FOLDS):
        train = (fold != k) & used
        out_of_fold[fold == k] = judged(fit(x[train], y[train]), x[fold == k], rest[fold == k])
    threshold = choose_threshold(y[~safe], out_of_fold[~safe])
    model = fit(x[used], y[used])

    gptfuzz = np.array([g.startswith("gptfuzz:") for g in groups])
    header = "| data | n | accuracy | precision | recall | F1 | predicted rate | labelled rate |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    print(f"threshold (from out-of-fold probabilities): {threshold:.2f}\n")
    print(header)
    for name, mask in (
        ("GPTFuzz, 5 folds by question", gptfuzz),
        ("XSTest v2 unsafe prompts, 5 folds by prompt", ~gptfuzz & ~safe),
        ("XSTest v2 safe prompts (all no harm; trained on only with --train-safe)", safe),
    ):
        print(row_line(name, metrics(y[mask], (out_of_fold[mask] >= threshold).astype(int))))
    for k in range(FOLDS):
        mask = gptfuzz & (fold == k)
        print(row_line(f"GPTFuzz fold {k}", metrics(y[mask], (out_of_fold[mask] >= threshold).astype(int))))
    pooled = metrics(y[~safe], (judged(model, x[~safe], rest[~safe]) >= threshold).astype(int))
    print(row_line("GPTFuzz + XSTest unsafe, fitted model (training data)", pooled))
    for path in args.evaluate:
        print(evaluate_file(path, model, threshold))
    print("\nweights (standardised features):")
    for name, weight in sorted(zip(FEATURE_NAMES, model[2]), key=lambda item: -abs(item[1])):
        print(f"  {name:28s} {weight:+.3f}")
    trained = metrics(y[~safe], (out_of_fold[~safe] >= threshold).astype(int))
    print(
        "\nout-of-fold confusion, GPTFuzz + XSTest unsafe (harm.HARM_VALIDATION): "
        f"tp={trained['tp']} fp={trained['fp']} fn={trained['fn']} tn={trained['tn']}"
    )

    if not args.no_write and not args.train_safe:
        mean, scale, weights, bias = model
        payload = {
            "about": "harm.Substance weights: bench/train_harm_judge.py on GPTFuzz (MIT) + XSTest v2 unsafe prompts (CC BY 4.0)",
            "features": list(FEATURE_NAMES),
            "mean": [round(float(v), 6) for v in mean],
            "scale": [round(float(v), 6) for v in scale],
            "weights": [round(float(v), 6) for v in weights],
            "bias": round(bias, 6),
            "threshold": threshold,
        }
        OUTPUT.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
