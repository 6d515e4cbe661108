"""The ``redline`` command line.

Heavy third-party packages (torch, transformers, httpx, jinja2, PyYAML) are imported only by
the code that uses them, so ``redline --help`` answers at once. Every user mistake ends in one ``error: ...`` line on stderr
and exit status 1, never a traceback (set ``REDLINE_DEBUG=1`` to see one).
"""

from __future__ import annotations

import importlib
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from redline.attacks.strategies.base import parse_strategy_opts
from redline.cli import budget as budget_cli
from redline.cli import common, resume_trust, scan_run
from redline.cli.common import err_console
from redline.datasets import parse_columns
from redline.detectors import check_detector_spec
from redline.detectors.options import parse_detector_options
from redline.engine import RESUME_GENERATOR_OPTIONS, ScanConfig, build_scan_config, load_config, parse_gen_opts
from redline.engine.config_file import build_executor_config, parse_probe_options
from redline.errors import RedlineError, UsageError
from redline.generators.transport.secrets import has_masked_userinfo, mask_url
from redline.lve.limits import MEMORY_HELP, TIMEOUT_HELP, CheckerLimits, checker_limits, configure_shared_pool

#: The commands that live in modules of their own, in the order ``redline --help`` lists them
#: (after those defined here): name → the module whose ``register(app)`` adds it. A module is
#: imported when one of its commands is run or listed, so that a scan does not load the web
#: viewer, the report writers, the reviewer or the detectors' validation (click's lazily loaded
#: subcommands).
LAZY_COMMANDS = {
    "report": "redline.cli.report",
    "compare": "redline.cli.report",
    "review": "redline.cli.review",
    "demo": "redline.cli.demo",
    "view": "redline.cli.view",
    "lve": "redline.cli.lve",
    "detectors": "redline.cli.detectors",
}

_APP_SETTINGS: dict[str, Any] = {"add_completion": False, "pretty_exceptions_enable": False, "rich_markup_mode": None}


class LazyCommands(typer.core.TyperGroup):
    """The ``redline`` command group: the commands of :data:`LAZY_COMMANDS` are added when first
    asked for by name (to run them, or to list them in ``--help``)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(name for name in LAZY_COMMANDS if name not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        module = LAZY_COMMANDS.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            holder = typer.Typer(**_APP_SETTINGS)
            importlib.import_module(module).register(holder)
            for name, command in typer.main.get_group(holder).commands.items():
                self.add_command(command, name)
        return super().get_command(ctx, cmd_name)


app = typer.Typer(
    name="redline",
    help="Probe large language models for vulnerabilities, unsafe behaviour and bias.",
    no_args_is_help=True,
    cls=LazyCommands,
    **_APP_SETTINGS,
)

# The command-line parser's exceptions, from the module that defines typer's BadParameter: click's
# own (older typer is built on click) or those of the copy of click that newer typer ships, so
# that redline needs no click of its own. ``NoArgsIsHelpError`` (click 8.2 and later) is raised by
# a command group called without a command; older versions print the help and exit 0 themselves.
_parser_errors = sys.modules[typer.BadParameter.__module__]
_PARSER_ERROR: type[Exception] = _parser_errors.ClickException
_NO_ARGS_IS_HELP: tuple[type[Exception], ...] = tuple(
    cls for cls in (getattr(_parser_errors, "NoArgsIsHelpError", None),) if cls is not None
)

STORE_OPTION = typer.Option(common.DEFAULT_STORE, "--store", help="SQLite store file.", envvar="REDLINE_STORE")
FAIL_ABOVE_OPTION = typer.Option(
    None,
    "--fail-above",
    min=0.0,
    max=1.0,
    help="Release gate: exit 3 if a probe's failure rate is above RATE (0-1) or a probe was not measured.",
)
FAIL_MARK_OPTION = typer.Option(
    None, "--fail-mark", help="Release gate: exit 3 if a bias mark is this letter (A-D) or worse."
)


class ExecutorKind(str, Enum):
    local = "local"
    ray = "ray"


def _examples_option() -> Any:
    return typer.Option(
        0,
        "--examples",
        min=0,
        help="After the table, print up to N example failures per probe (prompt and output, shortened).",
    )


@app.command()
def scan(
    model: str | None = typer.Option(
        None,
        "--model",
        "-m",
        help="Generator spec FAMILY[:MODEL], e.g. smollm2 (the default), openai:gpt-4o-mini, ollama:llama3.2, rest:NAME, test.echo.",
    ),
    probes: str | None = typer.Option(
        None, "--probes", "-p", help="Comma-separated probes or families ('all'). Default: harmful,encoding,injection."
    ),
    generations: int | None = typer.Option(None, "--generations", "-g", min=1, help="Outputs per attempt (default 1)."),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        "-c",
        min=1,
        help="Attempts in flight (default 128 local, 16 remote; with --executor ray: per actor).",
    ),
    store: Path = STORE_OPTION,
    resume: str | None = typer.Option(
        None,
        "--resume",
        help="Continue the run RUN_ID with its own settings, skipping finished attempts. Options that would "
        "change the run (-m, -p, --base-url, --sample...) are refused; only --concurrency, --timeout, "
        "--max-retries, --rpm, --tpm, transport --gen-opt options (backoff, concurrency cap) and --executor "
        "with its options are applied.",
    ),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="With --resume: also retry attempts that errored."),
    trust_settings: bool = typer.Option(
        False,
        resume_trust.CONFIRM_FLAG,
        help="With --resume: send to the endpoints and read the environment variables the stored run names "
        "(shown before anything is sent). Without it, a resumed run whose models are not run in this process "
        "needs the options that name them (-m, --base-url, --api-key-env, --gen-opt headers...) given again.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON on stdout."),
    sample: int | None = typer.Option(None, "--sample", min=1, help="A seeded random subset of N items per probe."),
    seed: int | None = typer.Option(None, "--seed", help="Seed for --sample and local sampling (default 0)."),
    repetitions: int | None = typer.Option(
        None, "--repetitions", "-r", min=1, help="Run each prompt N times (num_repetitions)."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="Endpoint of an HTTP generator, e.g. http://127.0.0.1:8000/v1."
    ),
    api_key_env: str | None = typer.Option(
        None, "--api-key-env", help="Environment variable holding the API key (default OPENAI_API_KEY)."
    ),
    max_tokens: int | None = typer.Option(
        None,
        "--max-tokens",
        min=1,
        help="Maximum new tokens per output, for every probe (default: the family's; "
        "remote models 256, more where a probe needs it).",
    ),
    temperature: float | None = typer.Option(None, "--temperature", min=0.0, help="Sampling temperature."),
    timeout: float | None = typer.Option(
        None, "--timeout", min=0.001, help="Seconds per request before it is retried (HTTP generators; default 60)."
    ),
    max_retries: int | None = typer.Option(
        None,
        "--max-retries",
        min=0,
        help="Retries of a failed request before its attempt is marked errored (default 4).",
    ),
    rpm: float | None = typer.Option(
        None, "--rpm", min=0.001, help="Requests per minute at most (client-side rate limit of remote generators)."
    ),
    tpm: float | None = typer.Option(
        None, "--tpm", min=0.001, help="Tokens per minute at most (client-side rate limit of remote generators)."
    ),
    gen_opt: list[str] | None = typer.Option(
        None, "--gen-opt", help="Any generator option as KEY=VALUE (repeatable), e.g. --gen-opt top_p=0.9."
    ),
    cache: bool | None = typer.Option(
        None, "--cache/--no-cache", help="Answer identical requests from the store (default: on)."
    ),
    config_file: Path | None = typer.Option(
        None, "--config", help="A YAML scan configuration; flags given here override it."
    ),
    lve: list[Path] | None = typer.Option(None, "--lve", help="Run the LVEs under PATH as probes (repeatable)."),
    trust_code: bool = typer.Option(
        False,
        "--trust-code",
        help="Allow custom checker.py files inside LVEs to run. Read only from this command line (never from "
        "--config or a stored run): a resumed run that runs them needs it again.",
    ),
    checker_timeout: float = typer.Option(
        CheckerLimits.timeout, "--checker-timeout", min=0.1, help=TIMEOUT_HELP + " Applied with --resume too."
    ),
    checker_memory: int = typer.Option(
        CheckerLimits.memory_mb, "--checker-memory", min=16, help=MEMORY_HELP + " Applied with --resume too."
    ),
    converters: str | None = typer.Option(
        None,
        "--converters",
        help="Transform every prompt, in order: comma-separated base64, base32, hex, rot13, morse, unicode-tags, zero-width, leetspeak, upper, random-case, spacing, translate:LANG, paraphrase.",
    ),
    converter_model: str | None = typer.Option(
        None,
        "--converter-model",
        help="Generator spec for translate:LANG and paraphrase (default: the model under test).",
    ),
    strategy: str | None = typer.Option(
        None,
        "--strategy",
        help="Attack strategy around each probe: crescendo (multi-turn escalation with backtracking), pair (attacker streams refined by judge feedback), tap (tree of attacks with pruning), best-of-n or bon (random augmentations), escalation or refine.",
    ),
    strategy_opt: list[str] | None = typer.Option(
        None,
        "--strategy-opt",
        help="A --strategy option as KEY=VALUE (repeatable): every strategy success (the judge rating 1-10 that ends the search, default 5); crescendo max_backtracks, refusal=detector|judge; pair streams, history; tap branching, width, history; best-of-n n, scramble, capitalize, noise.",
    ),
    max_queries: int | None = typer.Option(
        None,
        "--max-queries",
        min=1,
        help="Budget of --strategy: target outputs one attempt may request (default: no cap beyond --max-turns and the strategy's options).",
    ),
    attacker_model: str | None = typer.Option(
        None, "--attacker-model", help="Generator spec of the attacker for --strategy (default: the model under test)."
    ),
    judge_model: str | None = typer.Option(
        None,
        "--judge-model",
        help="Generator spec of the judge for --strategy, judge.Rubric and --judge llm / llm-harm (default: the model under test).",
    ),
    judge: str | None = typer.Option(
        None,
        "--judge",
        help="Judge harmful, jailbreak and dataset probes with SPEC instead of refusal.Compliance: hf:PATH (a Hugging Face sequence classifier), llm:MODEL or llm (an LLM judge: did the model comply; bare llm asks --judge-model, else the model under test), llm-harm:MODEL or llm-harm (an LLM judge: does the answer deliver harm), a detector name, or an ensemble A+B[+C] averaging their scores.",
    ),
    harm_judge: str | None = typer.Option(
        None,
        "--harm-judge",
        help="Judge the harm rate of harmful, jailbreak, benchmark and dataset probes with SPEC instead of harm.Substance (the specs of --judge; e.g. llm-harm:MODEL). --judge still replaces the compliance judge.",
    ),
    max_turns: int | None = typer.Option(
        None,
        "--max-turns",
        min=1,
        help="Budget of --strategy: dialogue turns (crescendo, default 10; escalation, default 4), iterations per stream (pair, default 3), tree depth (tap, default 5) or prompts tried (refine, default 4).",
    ),
    dataset: str | None = typer.Option(
        None,
        "--dataset",
        help="Prompts from a CSV/TSV/JSONL/JSON/Parquet file, a saved Hugging Face dataset folder, or hf:NAME[:SPLIT]; run by dataset.Prompts (the default then) and wrapped by jailbreak.* probes.",
    ),
    dataset_column: list[str] | None = typer.Option(
        None,
        "--dataset-column",
        help="Map a field to a dataset column as FIELD=COLUMN (repeatable): prompt (default column 'prompt'), target, category, system.",
    ),
    probe_opt: list[str] | None = typer.Option(
        None,
        "--probe-opt",
        help="A probe option as PROBE.KEY=VALUE (repeatable), e.g. benchmark.HarmBench.path=FILE (a benchmark's file; without it the probe reads the Hugging Face cache) or harmful.Requests.sample=5.",
    ),
    detector_opt: list[str] | None = typer.Option(
        None,
        "--detector-opt",
        help="A detector option as DETECTOR.KEY=VALUE (repeatable), e.g. toxicity.Classifier.model=PATH.",
    ),
    fail_above: float | None = FAIL_ABOVE_OPTION,
    fail_mark: str | None = FAIL_MARK_OPTION,
    skip_unavailable: bool = typer.Option(
        False,
        "--skip-unavailable",
        help="Report probes whose detector cannot load (e.g. a missing classifier) as 'not measured' instead of stopping (on by default with --probes all).",
    ),
    examples: int = _examples_option(),
    executor: ExecutorKind | None = typer.Option(
        None,
        "--executor",
        help="Where attempts run: local (this process, the default) or ray (Ray actors, each with its own "
        "generator and --concurrency attempts in flight, sharing the endpoint's --rpm/--tpm; on this machine's "
        "cores, or the cluster of --ray-address; pip install 'redline[ray]'). Applied with --resume too.",
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        help="With --executor ray: the Ray cluster to join, HOST:PORT (or auto); default: start Ray on this machine.",
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=1,
        help="With --executor ray: Ray actors (1-1024), each with its own copy of the model (default: the CPUs Ray has, at most 8).",
    ),
    gpus_per_worker: float | None = typer.Option(
        None,
        "--gpus-per-worker",
        min=0.0,
        help="With --executor ray: GPUs each actor holds, for a local model (0-64, whole above 1; default 0; fractions share a GPU).",
    ),
    plan: bool = typer.Option(
        False,
        "--plan",
        help="Print the requests, prompt and output tokens (and with --price-per-mtok the cost) per probe and in total, "
        "then stop: nothing is sent, no run is stored. With --resume: what is left of the run.",
    ),
    price_per_mtok: str | None = typer.Option(
        None,
        "--price-per-mtok",
        help="Prices as IN,OUT: USD per million prompt and output tokens (e.g. 0.15,0.6), for --plan and --budget-usd.",
    ),
    budget_usd: float | None = typer.Option(
        None,
        "--budget-usd",
        help="Stop the run cleanly (resumable, exit 4) before it would spend more than USD X (needs --price-per-mtok; "
        "counts the endpoint's reported usage, else estimates; with --executor ray too). Not stored with the run: "
        "applied with --resume too.",
    ),
    max_requests: int | None = typer.Option(
        None,
        "--max-requests",
        min=1,
        help="Stop the run cleanly (resumable, exit 4) before it would send more than N requests to the model under test "
        "(with --executor ray too). Not stored with the run: applied with --resume too.",
    ),
) -> None:
    """Scan a model with probes and store every attempt."""
    fail_mark = _check_mark(fail_mark)
    _check_examples(examples, as_json)
    prices, budget = budget_cli.budget_from_options(price_per_mtok, budget_usd, max_requests, plan=plan)

    if retry_errors and not resume:
        raise UsageError("--retry-errors needs --resume RUN_ID")
    if trust_settings and not resume:
        raise UsageError(f"{resume_trust.CONFIRM_FLAG} needs --resume RUN_ID (a new run's settings are those given)")
    config = None
    generator_flags: dict[str, Any] = {  # the generator options with a flag of their own (_GENERATOR_FLAG)
        "base_url": base_url,
        "api_key_env": api_key_env,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "timeout": timeout,
        "max_retries": max_retries,
        "rpm": rpm,
        "tpm": tpm,
    }
    cli_executor: dict[str, Any] = {  # how the run executes: never part of the run (allowed with --resume)
        "executor": executor.value if executor is not None else None,
        "ray_address": ray_address,
        "workers": workers,
        "gpus_per_worker": gpus_per_worker,
    }
    if resume is None:
        file_values = load_config(config_file) if config_file is not None else {}
        executor_config = build_executor_config(file_values, cli_executor)
        cli_values: dict[str, Any] = {
            "model": model,
            "probes": _check_probes(probes),
            "generations": generations,
            "concurrency": concurrency,
            "sample": sample,
            "seed": seed,
            "repetitions": repetitions,
            "cache": cache,
            "lve": [str(p.resolve()) for p in lve] if lve else None,
            "trust_code": True if trust_code else None,
            "judge": _check_judge(judge),
            "harm_judge": _check_judge(harm_judge, "--harm-judge"),
        }
        cli_generator = {**generator_flags, **parse_gen_opts(gen_opt or [])}
        config = build_scan_config(file_values, cli_values, cli_generator)
        config.model = _absolute_model_path(config.model)
        config.converters, config.converter_model = converters, converter_model
        config.strategy, config.attacker_model, config.judge_model = strategy, attacker_model, judge_model
        config.max_turns = max_turns
        config.max_queries, config.strategy_options = max_queries, parse_strategy_opts(strategy_opt or [])

        config.detector_options = parse_detector_options(detector_opt or [])
        config.probe_options = _with_probe_options(config.probe_options, probe_opt)
        # A sweep of every probe (--probes all) should not stop on one optional model that is not
        # on this machine: those probes are reported as 'not measured', with the reason.
        selection = [p.strip() for p in (config.probes or "").split(",")]
        config.skip_unavailable = skip_unavailable or config.skip_unavailable or "all" in selection
        if dataset_column and dataset is None:
            raise UsageError("--dataset-column needs --dataset FILE")
        if dataset is not None:
            config.dataset = _dataset_path(dataset)
            config.dataset_columns = parse_columns(dataset_column or [])
        run_config = config
    elif config_file is not None:
        raise UsageError("--config starts a new run; a resumed run keeps its own configuration")
    else:
        executor_config = build_executor_config({}, cli_executor)
        with common.open_store(store, must_exist=True) as opened:
            stored = ScanConfig.from_dict(opened.get_run(resume).scan)
        run_config = stored
        given = {  # what each option given with --resume would make the run, next to what it is
            "-m/--model": (model, lambda: _absolute_model_path(model or ""), stored.model),
            "-p/--probes": (probes, lambda: _check_probes(probes), stored.probes),
            "-g/--generations": (generations, lambda: generations, stored.generations),
            "--sample": (sample, lambda: sample, stored.sample),
            "--seed": (seed, lambda: seed, stored.seed),
            "-r/--repetitions": (repetitions, lambda: repetitions, stored.num_repetitions),
            "--cache/--no-cache": (cache, lambda: cache, stored.cache),
            "--lve": (lve, lambda: [str(p.resolve()) for p in lve or []], stored.lve_paths),
            "--trust-code": (trust_code or None, lambda: True, stored.trust_code),
            "--converters": (converters, lambda: converters, stored.converters),
            "--converter-model": (converter_model, lambda: converter_model, stored.converter_model),
            "--strategy": (strategy, lambda: strategy, stored.strategy),
            "--attacker-model": (attacker_model, lambda: attacker_model, stored.attacker_model),
            "--judge-model": (judge_model, lambda: judge_model, stored.judge_model),
            "--judge": (judge, lambda: _check_judge(judge), stored.judge),
            "--harm-judge": (harm_judge, lambda: _check_judge(harm_judge, "--harm-judge"), stored.harm_judge),
            "--max-turns": (max_turns, lambda: max_turns, stored.max_turns),
            "--max-queries": (max_queries, lambda: max_queries, stored.max_queries),
            "--strategy-opt": (
                strategy_opt,
                lambda: parse_strategy_opts(strategy_opt or []),
                stored.strategy_options,
            ),
            "--dataset": (dataset, lambda: _dataset_path(dataset or ""), stored.dataset),
            "--dataset-column": (
                dataset_column,
                lambda: parse_columns(dataset_column or []),
                stored.dataset_columns,
            ),
            "--probe-opt": (
                probe_opt,
                lambda: _with_probe_options(stored.probe_options, probe_opt),
                stored.probe_options,
            ),
            "--detector-opt": (
                detector_opt,
                lambda: parse_detector_options(detector_opt or []),
                stored.detector_options,
            ),
            "--skip-unavailable": (skip_unavailable or None, lambda: True, stored.skip_unavailable),
        }
        resumed_options = {
            **{k: v for k, v in generator_flags.items() if v is not None},
            **parse_gen_opts(gen_opt or []),
        }
        config = _resume_config(
            stored,
            [flag for flag, (value, normalised, was) in given.items() if value is not None and normalised() != was],
            resumed_options,
            concurrency=concurrency,
        )
        aux_flags = {
            "--attacker-model": attacker_model,
            "--judge-model": judge_model,
            "--converter-model": converter_model,
            "--judge": judge,
            "--harm-judge": harm_judge,
            "--probe-opt": probe_opt,
        }
        reaches = _check_resume_trust(
            resume,
            stored,
            resume_trust.given_flags(model=model, generator_options=resumed_options, aux=aux_flags),
            trust_settings=trust_settings or plan,
            trust_code=trust_code or plan,
        )
        if reaches:  # what the run reaches, before anything is sent (with --plan too)
            err_console.print(
                f"run {resume}: {resume_trust.describe(reaches)}", markup=False, highlight=False, soft_wrap=True
            )
    if plan:  # nothing is sent, no run is stored
        if resume is not None:
            with common.open_store(store, must_exist=True) as opened:
                planned = ScanConfig.from_dict(opened.get_run(resume).scan)
            planned.trust_code = planned.trust_code is True and trust_code  # code only on this command line's word
        else:
            assert config is not None
            planned = config
        budget_cli.print_plan(
            planned,
            prices=prices,
            budget=budget,
            as_json=as_json,
            store_path=store,
            resume=resume,
            retry_errors=retry_errors,
        )
        return
    configure_shared_pool(checker_limits(checker_timeout, checker_memory))  # LVE checkers' workers
    # how to continue the run, as its own hints print it: with what confirms its settings
    confirm = resume_trust.confirm_flags(run_config)
    run_id = scan_run.run_scan(
        config,
        store,
        resume=resume,
        retry_errors=retry_errors,
        quiet=as_json,
        executor=executor_config,
        budget=budget,
        resume_flags=confirm,
        trust_settings=resume is not None,  # confirmed above (_check_resume_trust)
        trust_code=trust_code,
    )
    if budget is not None and budget.stopped:  # the summary of what is stored, then how to go on
        common.print_summary(store, run_id, as_json=as_json, examples=examples)
        budget_cli.print_stopped(budget, run_id, store, confirm)
        raise typer.Exit(budget_cli.EXIT_BUDGET_STOPPED)
    common.print_summary(
        store, run_id, as_json=as_json, fail_above=fail_above, fail_mark=fail_mark, examples=examples, errors_exit=True
    )


#: The flag of each generator option that has one (the others are given with --gen-opt KEY=VALUE).
_GENERATOR_FLAG = {
    "base_url": "--base-url",
    "api_key_env": "--api-key-env",
    "max_tokens": "--max-tokens",
    "temperature": "--temperature",
    "timeout": "--timeout",
    "max_retries": "--max-retries",
    "rpm": "--rpm",
    "tpm": "--tpm",
}


def _resume_config(
    stored: ScanConfig, changed: list[str], generator_options: dict[str, Any], *, concurrency: int | None
) -> ScanConfig | None:
    """What a ``scan --resume`` takes from the command line, as a :class:`ScanConfig` for the
    engine (``None`` when nothing): ``--concurrency`` and the options of how requests travel
    (``--timeout``, ``--max-retries``, ``--rpm``, ``--tpm`` and the ``--gen-opt`` keys in
    :data:`~redline.engine.RESUME_GENERATOR_OPTIONS`), and a URL whose password the store does not
    keep (given again, the same once masked). ``changed`` names the run-defining options given
    with another value than the run's (``stored``); with the generator options (flags and
    ``--gen-opt``) that differ from the run's, they are refused in one :class:`UsageError`. An
    option given with the run's own value changes nothing and is accepted."""
    refused = list(changed)
    applied: dict[str, Any] = {}
    for key, value in generator_options.items():
        was = stored.generator_options.get(key)
        if key in RESUME_GENERATOR_OPTIONS:
            applied[key] = value
        elif isinstance(value, str) and isinstance(was, str) and has_masked_userinfo(was):
            if mask_url(value) != was:
                refused.append(_GENERATOR_FLAG.get(key, f"--gen-opt {key}"))
            else:
                applied[key] = value  # the engine gives the run its password back
        elif value != was:
            refused.append(_GENERATOR_FLAG.get(key, f"--gen-opt {key}"))
    if refused:
        raise UsageError(
            f"--resume continues a run with its own settings: {', '.join(refused)} would change it; "
            "leave them out (with --resume only --concurrency, --timeout, --max-retries, --rpm, --tpm "
            f"and --gen-opt {'/'.join(RESUME_GENERATOR_OPTIONS)} are applied)"
        )
    if concurrency is None and not applied:
        return None
    return ScanConfig(concurrency=concurrency, generator_options=applied)


def _check_resume_trust(
    run_id: str, stored: ScanConfig, given: set[str], *, trust_settings: bool, trust_code: bool
) -> list[resume_trust.Reach]:
    """What the stored run ``run_id`` reaches outside this process, once this command confirmed it
    (:func:`resume_trust.check_resume`: ``--trust-settings``, or its options ``given`` again; LVE
    checker code only with ``--trust-code``). Raises :class:`~redline.engine.trust.UntrustedRun`
    (one line) before anything is sent."""
    return resume_trust.check_resume(run_id, stored, trust_settings=trust_settings, trust_code=trust_code, given=given)


def _with_probe_options(options: dict[str, dict[str, Any]], items: list[str] | None) -> dict[str, dict[str, Any]]:
    """``options`` (a configuration's ``probe_options``) with the ``--probe-opt`` items given on
    the command line set over them, option by option."""
    merged = {name: dict(values) for name, values in options.items()}
    for name, values in parse_probe_options(items or []).items():
        merged.setdefault(name, {}).update(values)
    return merged


def _dataset_path(dataset: str) -> str:
    """``--dataset`` as the run stores it: a local file's absolute path, an ``hf:`` name as given."""
    return dataset if dataset.startswith("hf:") else str(Path(dataset).expanduser().resolve())


class ListKind(str, Enum):
    probes = "probes"
    detectors = "detectors"
    generators = "generators"


@app.command("list")
def list_(
    kind: ListKind = typer.Argument(..., help="probes, detectors or generators"),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """List the available probes, detectors or generators."""
    common.print_plugins(kind.value, as_json)


@app.command()
def runs(store: Path = STORE_OPTION, as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """List the runs in the store, newest first."""
    common.print_runs(store, as_json)


@app.command()
def show(
    run_id: str = typer.Argument(..., help="The run to show."),
    store: Path = STORE_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
    fail_above: float | None = FAIL_ABOVE_OPTION,
    fail_mark: str | None = FAIL_MARK_OPTION,
    examples: int = _examples_option(),
) -> None:
    """Show a run's summary (the same JSON as scan --json); gate it with --fail-above / --fail-mark."""
    fail_mark = _check_mark(fail_mark)
    _check_examples(examples, as_json)
    common.print_summary(
        store, run_id, as_json=as_json, fail_above=fail_above, fail_mark=fail_mark, examples=examples, errors_exit=True
    )


def _check_examples(examples: int, as_json: bool) -> None:
    """--examples prints to the terminal: with --json, stdout must stay JSON only."""
    if examples and as_json:
        raise UsageError("--examples prints to the terminal and cannot be combined with --json")


def _check_mark(mark: str | None) -> str | None:
    if mark is None:
        return None
    letter = mark.strip().upper()
    if letter not in ("A", "B", "C", "D"):
        raise UsageError(f"--fail-mark must be one of A, B, C, D, not {mark!r}")
    return letter


def _check_judge(spec: str | None, flag: str = "--judge") -> str | None:
    """``--judge`` (or ``flag``) checked and normalised (a local model path made absolute, so that the stored run
    resumes from any folder); a spec that cannot be read is a one-line error before anything runs."""
    if spec is None:
        return None
    try:
        return check_detector_spec(spec, check_paths=True)
    except RedlineError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def _check_probes(selection: str | None) -> str | None:
    """``--probes`` as given, or ``None`` when it was left out (the default set). A selection that
    names nothing (``-p ""``, ``-p ,``) raises :class:`UsageError`: it never means the default."""
    if selection is not None and not any(entry.strip() for entry in selection.split(",")):
        raise UsageError("--probes is empty: name probes or families, or leave the option out for the default set")
    return selection


def _absolute_model_path(spec: str) -> str:
    """``hf:./tiny`` → ``hf:/abs/tiny`` for a local model folder or file, so that the stored run
    can be resumed from any working directory. Hub ids and remote models are left alone."""
    family, sep, rest = spec.partition(":")
    if sep and family in ("hf", "llamacpp") and rest:
        path = Path(rest).expanduser()
        if path.exists():
            return f"{family}:{path.resolve()}"
    return spec


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``redline`` console script."""
    # Libraries we load (transformers' GGUF conversion, classifier pipelines) draw their own tqdm
    # bars; the CLI shows one progress bar of its own. tqdm reads this when it is first imported.
    os.environ.setdefault("TQDM_DISABLE", "1")
    # torch's OpenMP threads spin while they wait for work, holding cores that other processes
    # (and a local model's own work) need; waiting passively leaves the cores to whoever has work.
    # OpenMP reads this when torch is first imported, which the CLI does only when a model starts.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    _escape_what_streams_cannot_encode()
    command = typer.main.get_command(app)
    args = sys.argv[1:] if argv is None else argv
    scan_run.PROCESS_IS_OURS["value"] = argv is None
    try:
        code = command.main(args=args, prog_name="redline", standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("interrupted")
        code = 130
    except SystemExit as exc:
        code = exc.code
    except _PARSER_ERROR as exc:
        code = _report_parser_error(exc)
    except Exception as exc:
        code = common.report_exception(exc)
    sys.exit(code if isinstance(code, int) else 0)


def _escape_what_streams_cannot_encode() -> None:
    """Make standard output and error write a character their encoding lacks (``·`` to an ASCII
    or a Windows code-page stream) as an escape instead of failing the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None or (getattr(stream, "encoding", "") or "").lower().replace("-", "") == "utf8":
            continue
        try:
            reconfigure(errors="backslashreplace")
        except (ValueError, OSError):  # a stream that cannot change now: it stays as it is
            pass


def _report_parser_error(exc: Any) -> int:
    """Report an error the parser (click) found in the command line; returns the exit status.

    A command group called without a command (``redline``, ``redline lve``) prints its help on
    stdout, exit status 0, as ``--help`` does. Every other parsing error (a bad option value, an
    unknown option, a missing argument) is a user mistake: one line on stderr, ``error: `` then
    click's message (which names the option or argument and the problem) on one line and the
    command's ``--help`` to read, exit status :data:`~redline.cli.common.EXIT_USER_ERROR` (1).
    """
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, _NO_ARGS_IS_HELP) and ctx is not None:
        common.out_console.print(ctx.get_help(), markup=False, highlight=False, soft_wrap=True)
        return 0
    message = " ".join(line.strip() for line in exc.format_message().splitlines() if line.strip())
    # typer words a value's problem as pydantic does ("Value error, ...", "Input should be ...")
    message = message.replace(": Value error, ", ": ").replace(": Input should be ", ": must be ")
    message = message[:1].lower() + message[1:].rstrip(".")
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    err_console.print(f"error: {message}{hint}", markup=False, highlight=False)
    return common.EXIT_USER_ERROR
