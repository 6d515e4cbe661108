"""Regenerate the profiles of the shipped judge validations (``redline/data/validation_profiles.json``).

Each shipped validation of a refusal judge was measured by ``bench/bench_judges.py`` on human-labelled
answers (XSTest v2, GPTFuzz). This script reads the same answers and records what they look like
(:class:`redline.evaluation.support.Profile`), so that the run summary can tell when a run's outputs are
unlike them and its correction does not apply. Run it after changing the data or the descriptors:

    python bench/validation_profiles.py --data ../shared/judge-dev

Only the answers' descriptor counts are written; no text of the data is shipped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench_judges import GPTFUZZ, XSTEST, load_gptfuzz, load_xstest

from redline.detectors.refusal import COMPLIANCE_VALIDATION, KEYWORDS_VALIDATION, REFUSAL_VALIDATION
from redline.evaluation.support import PROFILES_RESOURCE, Profile

OUT = Path(__file__).resolve().parents[1] / "src" / "redline" / "data" / PROFILES_RESOURCE


def profiles(data: Path) -> dict[str, Profile]:
    """The profile of each shipped validation, by detector name."""
    xstest = [load_xstest(data, model, filename) for model, filename in XSTEST.items()]
    every = [e.response for f in xstest for e in f.examples]
    safe = [e.response for f in xstest for e, unsafe in zip(f.examples, f.unsafe) if not unsafe]
    gptfuzz = [e.response for e in load_gptfuzz(data)]
    pooled = Profile.of(COMPLIANCE_VALIDATION.dataset, every + gptfuzz)
    return {
        "refusal.Compliance": pooled,
        "refusal.Keywords": Profile.of(KEYWORDS_VALIDATION.dataset, every + gptfuzz),
        "refusal.Refusal": Profile.of(REFUSAL_VALIDATION.dataset, safe),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/judge-dev"), help="folder with the labelled files")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the profiles")
    args = parser.parse_args()
    if not (args.data / GPTFUZZ).exists():
        raise SystemExit(f"{args.data}: no {GPTFUZZ} (point --data at the judge-dev folder)")
    found = {name: profile.as_dict() for name, profile in profiles(args.data).items()}
    args.out.write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for name, profile in found.items():
        print(f"{name}: {profile['n']} answers ({profile['dataset']})")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
