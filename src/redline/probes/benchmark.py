"""Public red-teaming and over-refusal benchmarks as probes (family ``benchmark``).

Each probe knows one benchmark's published file: its column names (the original release and
its Hugging Face copy, whichever the file has), which column holds the categories, and which
rows it sends. The file is never downloaded by redline:

* ``--probe-opt benchmark.HarmBench.path=FILE`` (or ``probe_options`` in a config file) names a
  local copy: CSV, TSV, JSONL, JSON, Parquet, a saved Hugging Face dataset folder, or
  ``hf:NAME[:SPLIT]`` (read as :mod:`redline.datasets` reads ``--dataset``);
* without it, the probe looks for its Hugging Face repository in the local hub cache (where
  ``huggingface-cli download --repo-type dataset REPO`` puts it) and reads the files there;
* found nowhere, the scan stops with one line saying where to get the file and how to name it
  (``--skip-unavailable`` reports the probe "not measured" with that line instead).

The probes are ``active = False``: they are no part of ``all`` or of the default scan (a
machine without the files would measure nothing), and ``--probes benchmark`` or a probe's name
selects them. Every row keeps its category (and the benchmark's other labels) as prompt
metadata, so the summary shows the failure rate per category.

Judges: the harmful sets (:class:`HarmfulBenchmark`) headline the harm rate (``harm.Substance``:
the answer delivers what was asked for), with the compliance rate (``refusal.Compliance``: the
model answered instead of refusing) beside it; the over-refusal sets (XSTest's safe prompts, JailbreakBench's benign behaviours, OR-Bench-Hard) by
``refusal.Refusal``, the same reading of the answer with the opposite verdict (refusing a safe
request is the failure).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from redline.datasets import DatasetError, hub_dataset_files, read_table
from redline.evaluation.measures import HARM
from redline.probes.base import HARM_DETECTORS, HARM_FORMER_DEFAULTS, Probe, ProbeItem, Prompt

__all__ = [
    "AdvBench",
    "BenchmarkFileMissing",
    "BenchmarkProbe",
    "DoNotAnswer",
    "HarmBench",
    "HarmfulBenchmark",
    "HubCopy",
    "JailbreakBench",
    "JailbreakBenchBenign",
    "Layout",
    "ORBenchHard",
    "ORBenchToxic",
    "StrongREJECT",
    "XSTest",
    "XSTestUnsafe",
]

#: The category of a row whose category cell is empty, in a benchmark that has categories.
UNCATEGORISED = "uncategorised"

_LISTED = 30  # column names an error lists at most


class BenchmarkFileMissing(DatasetError):
    """A benchmark probe was selected, but its file was neither given nor in the local cache."""


@dataclass(frozen=True)
class Layout:
    """The column names of one published form of a benchmark's file. A file is read with the
    first layout whose ``prompt`` (and ``label``, when the layout has one) columns it has; the
    other columns are used when the file has them."""

    name: str
    prompt: str
    category: str | None = None
    label: str | None = None
    context: str | None = None
    target: str | None = None
    #: Further columns kept as prompt metadata (``{column: metadata key}``).
    keep: tuple[tuple[str, str], ...] = ()

    @property
    def required(self) -> tuple[str, ...]:
        return (self.prompt,) + ((self.label,) if self.label else ())

    @property
    def columns(self) -> tuple[str, ...]:
        named = (self.prompt, self.category, self.label, self.context, self.target)
        return tuple(c for c in named if c) + tuple(c for c, _ in self.keep)


@dataclass(frozen=True)
class HubCopy:
    """A Hugging Face dataset repository holding the benchmark, and the globs of its files
    (relative to the repository root) that the probe reads."""

    repo: str
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class _Row:
    number: int
    text: str
    category: str | None
    target: str | None
    metadata: dict[str, Any]


def _cell(raw: dict[str, Any], column: str | None, source: str, number: int) -> str | None:
    """The text of ``column`` in a row (``None`` when the row has no value there); a value that
    is no text (a list, a mapping) makes the row malformed."""
    if column is None:
        return None
    value = raw.get(column)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise DatasetError(f"{source}: row {number}: column {column!r} holds {type(value).__name__}, not text")
    text = str(value).strip()
    return text or None


class BenchmarkProbe(Probe):
    """One public benchmark's prompts, from its file (see the module doc).

    Subclasses declare :attr:`benchmark`, :attr:`layouts`, :attr:`hub` (where the Hugging Face
    cache may hold it), :attr:`fetch` (where to download the file by hand) and, to send only
    some rows, :attr:`labels` (every row's label must be one of them; only rows whose label is
    in :attr:`keep_labels` are sent). Constructor options (besides :class:`Probe`'s): ``path``,
    the file; ``if_missing`` ``"error"`` (the default: :class:`BenchmarkFileMissing`) or
    ``"skip"`` (the probe is reported not measured, with the same line, as
    ``--skip-unavailable`` asks).
    """

    benchmark: ClassVar[str] = ""
    layouts: ClassVar[tuple[Layout, ...]] = ()
    hub: ClassVar[tuple[HubCopy, ...]] = ()
    fetch: ClassVar[str] = ""
    labels: ClassVar[frozenset[str] | None] = None
    keep_labels: ClassVar[frozenset[str] | None] = None
    recommended_detectors: ClassVar[tuple[str, ...]] = ("refusal.Compliance",)
    #: Never part of ``all`` or the default scan: it needs a file the user fetches.
    active = False

    def __init__(self, *args: Any, path: str | None = None, if_missing: str = "error", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if if_missing not in ("error", "skip"):
            raise DatasetError(f"{self.name}: if_missing must be 'error' or 'skip', not {if_missing!r}")
        self.path = str(path) if path is not None else None
        self.hub_source: str | None = None
        self._rows: list[_Row] = []
        sources: list[str]
        if self.path is not None:
            sources = [self.path]
        else:
            found = self._cached()
            if found is None:
                if if_missing == "skip":  # reported under the probe's name: the line without it
                    self.skip_reason = self.missing_message().removeprefix(f"{self.name}: ")
                    return
                raise BenchmarkFileMissing(
                    self.missing_message() + " (with --skip-unavailable the scan goes on, the probe 'not measured')"
                )
            self.hub_source, files = found
            sources = [str(f) for f in files]
        for source in sources:
            self._rows.extend(self._read(source))
        if not self._rows:
            shown = self.path or self.hub_source
            raise DatasetError(f"{shown}: no {self.benchmark} prompts to send{self._kept_note()}")

    # -- where the file is ------------------------------------------------------------------------
    def _cached(self) -> tuple[str, list[Any]] | None:
        for copy in self.hub:
            found = hub_dataset_files(copy.repo, copy.patterns)
            if found is not None:
                return found
        return None

    def missing_message(self) -> str:
        """The one line a scan stops with when the file is nowhere: how to name it, where to get it."""
        hub = (
            f", or fetch it into the Hugging Face cache: huggingface-cli download --repo-type dataset {self.hub[0].repo}"
            if self.hub
            else ""
        )
        return (
            f"{self.name}: no {self.benchmark} file: download it from {self.fetch} and give it with "
            f"--probe-opt {self.name}.path=FILE{hub}"
        )

    def _kept_note(self) -> str:
        if self.keep_labels is None:
            return ""
        return f" (only rows labelled {', '.join(sorted(self.keep_labels))} are sent)"

    @property
    def params(self) -> dict:
        params = super().params
        if self.path is not None:
            params["path"] = self.path
        if self.hub_source is not None:
            params["hub"] = self.hub_source
        return params

    # -- reading ----------------------------------------------------------------------------------
    def _layout(self, source: str, names: Sequence[str]) -> Layout:
        present = set(names)
        for layout in self.layouts:
            if all(c in present for c in layout.required):
                return layout
        expected = " or ".join(f"{', '.join(layout.required)} ({layout.name})" for layout in self.layouts)
        shown = ", ".join(map(str, names[:_LISTED])) + (f", ... ({len(names)} in all)" if len(names) > _LISTED else "")
        raise DatasetError(
            f"{source}: not a {self.benchmark} file: expected the column(s) {expected}; it has {shown or 'none'}"
        )

    def _read(self, source: str) -> list[_Row]:
        wanted = dict.fromkeys(c for layout in self.layouts for c in layout.columns)
        names, raw_rows = read_table(source, tuple(wanted))
        layout = self._layout(source, names)
        rows = []
        for number, raw in enumerate(raw_rows, start=1):
            prompt = _cell(raw, layout.prompt, source, number)
            if prompt is None:
                raise DatasetError(f"{source}: row {number}: empty {layout.prompt!r}")
            label = _cell(raw, layout.label, source, number)
            if self.labels is not None and layout.label is not None and label not in self.labels:
                expected = ", ".join(sorted(self.labels))
                raise DatasetError(f"{source}: row {number}: {layout.label!r} is {label!r}, expected one of {expected}")
            if self.keep_labels is not None and label not in self.keep_labels:
                continue
            metadata: dict[str, Any] = {"benchmark": self.benchmark}
            for column, key in layout.keep:
                value = _cell(raw, column, source, number)
                if value is not None:
                    metadata[key] = value
            if label is not None:
                metadata["label"] = label
            if not self.keep_row(metadata):
                continue
            context = _cell(raw, layout.context, source, number) if layout.context in names else None
            category = None
            if layout.category is not None and layout.category in names:
                category = _cell(raw, layout.category, source, number) or UNCATEGORISED
            target = _cell(raw, layout.target, source, number) if layout.target in names else None
            rows.append(_Row(number, self.compose(prompt, context), category, target, metadata))
        return rows

    def keep_row(self, metadata: dict[str, Any]) -> bool:
        """Whether a row is sent (given its kept metadata); all rows by default."""
        return True

    def compose(self, prompt: str, context: str | None) -> str:
        """The text sent for a row: its prompt (a benchmark with context rows overrides this)."""
        return prompt

    def _create_probe_items(self) -> list[ProbeItem]:
        items = []
        for index, row in enumerate(self._rows):
            metadata = dict(row.metadata, row=row.number)
            if row.category is not None:
                metadata["category"] = row.category
            prompt = Prompt(text=row.text, metadata=metadata, targets=[row.target] if row.target else [])
            item_metadata: dict[str, Any] = {"index": index}
            if row.category is not None:
                item_metadata["category"] = row.category
            items.append(ProbeItem(prompts=[prompt], metadata=item_metadata))
        return items


# -- harmful requests: answering is the failure -------------------------------------------------------
# reviewed in redline/data/tag_review.toml: no OWASP item fits; over-refusal fits no framework
_HARMFUL_TAGS = ("atlas:AML.T0048", "nist:dangerous-content", "benchmark")
_OVER_REFUSAL_TAGS = ("benchmark", "over-refusal")


class HarmfulBenchmark(BenchmarkProbe):
    """A benchmark of harmful requests: the harm rate, the compliance rate beside it."""

    recommended_detectors = HARM_DETECTORS
    measure = HARM
    former_defaults = HARM_FORMER_DEFAULTS


class HarmBench(HarmfulBenchmark):
    """HarmBench's text behaviours (Mazeika et al., 2024, "HarmBench: A Standardized Evaluation
    Framework for Automated Red Teaming and Robust Refusal", arXiv:2402.04249;
    https://github.com/centerforaisafety/HarmBench), sent as direct requests.

    File: ``data/behavior_datasets/harmbench_behaviors_text_all.csv`` (columns ``Behavior``,
    ``FunctionalCategory``, ``SemanticCategory``, ``Tags``, ``ContextString``, ``BehaviorID``),
    or the Hugging Face copy ``walledai/HarmBench`` (its ``standard`` and ``contextual``
    configurations: ``prompt``, ``category``, ``context``). Categories: ``SemanticCategory``.
    A contextual behaviour is sent as HarmBench's direct requests send it, its context, a
    ``---`` line, then the behaviour. The ``copyright`` behaviours are left out: HarmBench judges
    them by matching the reproduced text, not by refusal."""

    name = "benchmark.HarmBench"
    benchmark = "HarmBench"
    goal = "make the model carry out HarmBench's harmful behaviours"
    description = "HarmBench text behaviours (standard and contextual) as direct requests"
    tags = _HARMFUL_TAGS + ("nist:cbrn", "nist:information-integrity", "harm:requests")
    layouts = (
        Layout(
            "harmbench_behaviors_text_all.csv",
            prompt="Behavior",
            category="SemanticCategory",
            context="ContextString",
            keep=(("FunctionalCategory", "functional_category"), ("BehaviorID", "id")),
        ),
        Layout("the walledai/HarmBench copy", prompt="prompt", category="category", context="context"),
    )
    hub = (HubCopy("walledai/HarmBench", ("standard/*.parquet", "contextual/*.parquet")),)
    fetch = (
        "https://github.com/centerforaisafety/HarmBench/blob/main/data/behavior_datasets/"
        "harmbench_behaviors_text_all.csv"
    )

    def keep_row(self, metadata: dict[str, Any]) -> bool:
        return metadata.get("functional_category") != "copyright"

    def compose(self, prompt: str, context: str | None) -> str:
        return f"{context}\n\n---\n\n{prompt}" if context else prompt


class AdvBench(HarmfulBenchmark):
    """AdvBench's harmful behaviours (Zou et al., 2023, "Universal and Transferable Adversarial
    Attacks on Aligned Language Models", arXiv:2307.15043; https://github.com/llm-attacks/llm-attacks).

    File: ``data/advbench/harmful_behaviors.csv`` (columns ``goal``, ``target``: the affirmative
    answer opening the attack aims for, kept as the attempt's target), or the Hugging Face copy
    ``walledai/AdvBench`` (``prompt``, ``target``). AdvBench has no categories."""

    name = "benchmark.AdvBench"
    benchmark = "AdvBench"
    goal = "make the model carry out AdvBench's harmful behaviours"
    description = "AdvBench harmful_behaviors (520 instructions) as direct requests"
    tags = _HARMFUL_TAGS + ("harm:requests",)
    layouts = (
        Layout("harmful_behaviors.csv", prompt="goal", target="target"),
        Layout("the walledai/AdvBench copy", prompt="prompt", target="target"),
    )
    hub = (HubCopy("walledai/AdvBench", ("data/*.parquet",)),)
    fetch = "https://github.com/llm-attacks/llm-attacks/blob/main/data/advbench/harmful_behaviors.csv"


_JBB_LAYOUT = Layout(
    "JBB-Behaviors",
    prompt="Goal",
    category="Category",
    target="Target",
    keep=(("Behavior", "behavior"), ("Source", "source")),
)


class JailbreakBench(HarmfulBenchmark):
    """JailbreakBench's 100 misuse behaviours, JBB-Behaviors (Chao et al., 2024, "JailbreakBench:
    An Open Robustness Benchmark for Jailbreaking Large Language Models", arXiv:2404.01318;
    https://huggingface.co/datasets/JailbreakBench/JBB-Behaviors).

    File: ``data/harmful-behaviors.csv`` of the dataset (columns ``Index``, ``Goal``,
    ``Target``, ``Behavior``, ``Category``, ``Source``). Categories: ``Category`` (ten, after
    OpenAI's usage policies)."""

    name = "benchmark.JailbreakBench"
    benchmark = "JailbreakBench"
    goal = "make the model carry out JailbreakBench's misuse behaviours"
    description = "JBB-Behaviors: 100 harmful behaviours in ten categories, as direct requests"
    tags = _HARMFUL_TAGS + ("nist:information-integrity", "harm:requests")
    layouts = (_JBB_LAYOUT,)
    hub = (HubCopy("JailbreakBench/JBB-Behaviors", ("data/harmful-behaviors.csv",)),)
    fetch = "https://huggingface.co/datasets/JailbreakBench/JBB-Behaviors/blob/main/data/harmful-behaviors.csv"


class StrongREJECT(HarmfulBenchmark):
    """StrongREJECT's forbidden prompts (Souly et al., 2024, "A StrongREJECT for Empty
    Jailbreaks", arXiv:2402.10260; https://github.com/alexandrasouly/strongreject).

    File: ``strongreject_dataset/strongreject_dataset.csv`` (or the 50-prompt
    ``strongreject_small_dataset.csv``; columns ``category``, ``source``, ``forbidden_prompt``),
    or the Hugging Face copy ``walledai/StrongREJECT`` (``prompt``, ``category``, ``source``).
    Categories: ``category`` (six). The paper's own rubric judge scores how useful a compliant
    answer is; here the harm verdict is harm.Substance's (``--harm-judge llm-harm`` asks an LLM instead)."""

    name = "benchmark.StrongREJECT"
    benchmark = "StrongREJECT"
    goal = "make the model answer StrongREJECT's forbidden prompts"
    description = "StrongREJECT forbidden prompts in six categories, as direct requests"
    tags = _HARMFUL_TAGS + ("nist:information-integrity", "nist:obscene-content", "harm:requests")
    layouts = (
        Layout(
            "strongreject_dataset.csv", prompt="forbidden_prompt", category="category", keep=(("source", "source"),)
        ),
        Layout("the walledai/StrongREJECT copy", prompt="prompt", category="category", keep=(("source", "source"),)),
    )
    hub = (HubCopy("walledai/StrongREJECT", ("data/*.parquet",)),)
    fetch = "https://github.com/alexandrasouly/strongreject/blob/main/strongreject_dataset/strongreject_dataset.csv"


class DoNotAnswer(HarmfulBenchmark):
    """Do-Not-Answer's 939 questions a responsible model declines (Wang et al., 2024,
    "Do-Not-Answer: Evaluating Safeguards in LLMs", Findings of EACL 2024, arXiv:2308.13387;
    https://github.com/Libr-AI/do-not-answer).

    File: ``datasets/data_en.csv`` or the Hugging Face dataset ``LibrAI/do-not-answer``
    (columns ``id``, ``risk_area``, ``types_of_harm``, ``specific_harms``, ``question``, then
    six models' answers, which are not read), or the ``walledai/DNA`` copy (``prompt``,
    ``risk_area``, ``harm_area``, ``harms``). Categories: the twelve types of harm; the risk
    area (five) is kept as metadata."""

    name = "benchmark.DoNotAnswer"
    benchmark = "Do-Not-Answer"
    goal = "make the model answer Do-Not-Answer's questions"
    description = "Do-Not-Answer: 939 questions in five risk areas and twelve types of harm"
    tags = _HARMFUL_TAGS + ("nist:data-privacy", "nist:harmful-bias", "nist:information-integrity", "harm:requests")
    layouts = (
        Layout(
            "do-not-answer data_en.csv",
            prompt="question",
            category="types_of_harm",
            keep=(("risk_area", "risk_area"), ("specific_harms", "specific_harm"), ("id", "id")),
        ),
        Layout(
            "the walledai/DNA copy",
            prompt="prompt",
            category="harm_area",
            keep=(("risk_area", "risk_area"), ("harms", "specific_harm")),
        ),
    )
    hub = (HubCopy("LibrAI/do-not-answer", ("data/*.parquet",)), HubCopy("walledai/DNA", ("data/*.parquet",)))
    fetch = "https://huggingface.co/datasets/LibrAI/do-not-answer"


_XSTEST_LAYOUT = Layout(
    "xstest_prompts.csv (v2)",
    prompt="prompt",
    category="type",
    label="label",
    keep=(("id", "id"), ("focus", "focus"), ("note", "note")),
)
_XSTEST_FETCH = "https://github.com/paul-rottger/xstest/blob/main/xstest_prompts.csv"
_XSTEST_HUB = (HubCopy("walledai/XSTest", ("data/*.parquet",)),)


class XSTest(BenchmarkProbe):
    """XSTest v2's 250 safe prompts, for exaggerated safety (Röttger et al., 2024, "XSTest: A
    Test Suite for Identifying Exaggerated Safety Behaviours in Large Language Models", NAACL
    2024, arXiv:2308.01263; https://github.com/paul-rottger/xstest).

    File: ``xstest_prompts.csv`` (columns ``id``, ``prompt``, ``type``, ``label``, ``focus``,
    ``note``; ``label`` is ``safe`` or ``unsafe``), or the Hugging Face copy ``walledai/XSTest``
    (same columns). Only the ``safe`` rows are sent, and a **refusal** is the failure
    (``refusal.Refusal``); the unsafe contrast prompts are :class:`XSTestUnsafe`. Categories:
    ``type`` (ten kinds of safe prompt: homonyms, figurative language, safe targets...)."""

    name = "benchmark.XSTest"
    benchmark = "XSTest"
    goal = "make the model refuse XSTest's safe prompts (over-refusal)"
    description = "XSTest v2 safe prompts: a refusal is the failure (exaggerated safety)"
    tags = _OVER_REFUSAL_TAGS
    recommended_detectors = ("refusal.Refusal",)
    layouts = (_XSTEST_LAYOUT,)
    hub = _XSTEST_HUB
    fetch = _XSTEST_FETCH
    labels = frozenset({"safe", "unsafe"})
    keep_labels = frozenset({"safe"})


class XSTestUnsafe(HarmfulBenchmark):
    """XSTest v2's 200 unsafe contrast prompts (Röttger et al., 2024, arXiv:2308.01263; see
    :class:`XSTest` for the file): the harm rate, the compliance rate (``refusal.Compliance``) beside it.
    Categories: ``type`` (``contrast_homonyms``...)."""

    name = "benchmark.XSTestUnsafe"
    benchmark = "XSTest"
    goal = "make the model comply with XSTest's unsafe contrast prompts"
    description = "XSTest v2 unsafe contrast prompts: complying is the failure"
    tags = _HARMFUL_TAGS + ("harm:requests",)
    layouts = (_XSTEST_LAYOUT,)
    hub = _XSTEST_HUB
    fetch = _XSTEST_FETCH
    labels = frozenset({"safe", "unsafe"})
    keep_labels = frozenset({"unsafe"})


class JailbreakBenchBenign(BenchmarkProbe):
    """JailbreakBench's 100 benign behaviours, topic-matched to the misuse ones (Chao et al.,
    2024, arXiv:2404.01318; see :class:`JailbreakBench`): a **refusal** is the failure
    (``refusal.Refusal``).

    File: ``data/benign-behaviors.csv`` of JBB-Behaviors (same columns as the harmful file)."""

    name = "benchmark.JailbreakBenchBenign"
    benchmark = "JailbreakBench (benign)"
    goal = "make the model refuse JailbreakBench's benign behaviours (over-refusal)"
    description = "JBB-Behaviors benign behaviours: a refusal is the failure"
    tags = _OVER_REFUSAL_TAGS
    recommended_detectors = ("refusal.Refusal",)
    layouts = (_JBB_LAYOUT,)
    hub = (HubCopy("JailbreakBench/JBB-Behaviors", ("data/benign-behaviors.csv",)),)
    fetch = "https://huggingface.co/datasets/JailbreakBench/JBB-Behaviors/blob/main/data/benign-behaviors.csv"


_ORBENCH_LAYOUT = Layout("OR-Bench CSV", prompt="prompt", category="category")


class ORBenchHard(BenchmarkProbe):
    """OR-Bench-Hard-1K: about a thousand seemingly toxic but benign prompts that strong models
    still refuse (Cui et al., 2024, "OR-Bench: An Over-Refusal Benchmark for Large Language
    Models", arXiv:2405.20947; https://huggingface.co/datasets/bench-llm/or-bench).

    File: ``or-bench-hard-1k.csv`` (columns ``prompt``, ``category``: ten rejection
    categories). A **refusal** is the failure (``refusal.Refusal``)."""

    name = "benchmark.ORBenchHard"
    benchmark = "OR-Bench-Hard-1K"
    goal = "make the model refuse OR-Bench's hard benign prompts (over-refusal)"
    description = "OR-Bench-Hard-1K seemingly toxic benign prompts: a refusal is the failure"
    tags = _OVER_REFUSAL_TAGS
    recommended_detectors = ("refusal.Refusal",)
    layouts = (_ORBENCH_LAYOUT,)
    hub = (HubCopy("bench-llm/or-bench", ("or-bench-hard-1k.csv",)),)
    fetch = "https://huggingface.co/datasets/bench-llm/or-bench/blob/main/or-bench-hard-1k.csv"


class ORBenchToxic(HarmfulBenchmark):
    """OR-Bench-Toxic: the 600 toxic prompts OR-Bench pairs with its benign ones so that a model
    refusing everything does not look well calibrated (Cui et al., 2024, arXiv:2405.20947; see
    :class:`ORBenchHard`). The harm rate, the compliance rate (``refusal.Compliance``) beside it.

    File: ``or-bench-toxic.csv`` (columns ``prompt``, ``category``)."""

    name = "benchmark.ORBenchToxic"
    benchmark = "OR-Bench-Toxic"
    goal = "make the model comply with OR-Bench's toxic prompts"
    description = "OR-Bench-Toxic prompts: complying is the failure"
    tags = _HARMFUL_TAGS + ("harm:requests",)
    layouts = (_ORBENCH_LAYOUT,)
    hub = (HubCopy("bench-llm/or-bench", ("or-bench-toxic.csv",)),)
    fetch = "https://huggingface.co/datasets/bench-llm/or-bench/blob/main/or-bench-toxic.csv"
