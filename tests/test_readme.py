"""The README is a landing page that stays true: its commands are CI's, its links resolve, the
options it and the guides in docs/ name exist, and the Python API example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
CI = ROOT / ".ci" / "run"

FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", flags=re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# Options of other programs that the pages show next to redline's (pip, ray start, ruff, a
# benchmark script), and every command's --help.
OTHER_PROGRAMS_OPTIONS = {
    "--no-deps",
    "--head",
    "--address",
    "--check",
    "--data",
    "--help",
    "--stand-in-punkt",
}  # pip, curl, bench scripts


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def sections(markdown: str) -> dict[str, str]:
    """Each ``## `` section of a page (fenced code kept), by its heading."""
    parts = re.split(r"^## (.+)$", markdown, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def anchors(markdown: str) -> set[str]:
    """The anchors GitHub makes of a page's headings (code blocks left out)."""
    prose = FENCE.sub("", markdown)
    headings = re.findall(r"^#{1,6} (.+)$", prose, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def ci_commands() -> list[str]:
    """The commands ``.ci/run`` runs, one per ``&&``-joined part, comments and blank lines left out."""
    commands = []
    for line in text(CI).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            commands.extend(part.strip() for part in line.split("&&"))
    return commands


def readme_block(heading: str) -> list[str]:
    """The commands of the first ``bash`` block of the README's section ``heading``."""
    block = FENCE.search(sections(text(README))[heading])
    assert block is not None, f"the README's {heading!r} section has no code block"
    commands = []
    for line in block.group(1).splitlines():
        line = line.split(" #")[0].strip()
        if line:
            commands.extend(part.strip() for part in line.split("&&"))
    return commands


def redline_options() -> set[str]:
    """Every long option of every ``redline`` command and subcommand."""
    import typer

    from redline.cli.main import app

    options: set[str] = set()

    def walk(command, ctx) -> None:
        for param in command.params:
            options.update(opt for opt in [*param.opts, *param.secondary_opts] if opt.startswith("--"))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                walk(sub, sub.context_class(sub, info_name=name, parent=ctx))

    group = typer.main.get_command(app)
    walk(group, group.context_class(group, info_name="redline"))
    return options


def test_the_readme_installs_exactly_as_ci_does():
    install = readme_block("Install")
    assert install[:2] == ["python -m venv .venv", "source .venv/bin/activate"]  # a fresh environment
    packages = install[2:]
    assert packages and all(command.startswith("pip install") for command in packages)
    assert packages == [command for command in ci_commands() if command.startswith("pip install")]
    ci = ci_commands()
    made = next(i for i, c in enumerate(ci) if c.startswith('python3 -m venv "$venv"'))
    assert ci[made + 1] == 'source "$venv/bin/activate"'  # CI installs into a fresh one too
    assert made + 1 < min(i for i, c in enumerate(ci) if c.startswith("pip install"))


def test_the_readme_test_command_is_the_one_ci_runs():
    tests = readme_block("Development")
    assert tests == ["python -m pytest -q"]
    assert ci_commands()[-1] == "python -m pytest -q"


def test_the_readme_checks_are_the_ones_ci_makes():
    block = FENCE.findall(sections(text(README))["Development"])[1]
    checks = [part.strip() for part in block.strip().split("&&")]
    assert checks == [command for command in ci_commands() if command.split()[0] in {"ruff", "mypy", "lint-imports"}]


def test_the_readme_is_a_landing_page_of_at_most_500_lines():
    lines = text(README).splitlines()
    assert len(lines) <= 500
    headings = list(sections(text(README)))
    for heading in ("Install", "A first scan", "Main commands", "Performance", "Development"):
        assert heading in headings


def test_the_performance_section_is_one_short_table_that_points_at_the_benchmarks():
    performance = sections(text(README))["Performance"]
    assert len(performance.strip().splitlines()) <= 40
    rows = [line for line in performance.splitlines() if line.startswith("|")][2:]
    assert len(rows) == 5
    for words in ("the ideal", "rate-limited provider", "generate()", "100,000 attempts", "garak"):
        assert sum(words in row for row in rows) == 1, words
    assert "Commands and details: [bench/README.md](bench/README.md)" in performance


def test_every_guide_in_docs_is_linked_from_the_readme():
    linked = {target.split("#")[0] for target in LINK.findall(text(README))}
    for guide in DOCS.glob("*.md"):
        assert f"docs/{guide.name}" in linked, guide.name


@pytest.mark.parametrize("page", pages() + [ROOT / "bench" / "README.md"], ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_heading(page):
    for target in LINK.findall(FENCE.sub("", text(page))):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(text(linked)), f"{page.name}: {target}"


def test_every_option_the_readme_and_the_guides_name_is_a_redline_option():
    known = redline_options() | OTHER_PROGRAMS_OPTIONS
    named = {(page.name, option) for page in pages() for option in OPTION.findall(text(page))}
    assert sorted((name, option) for name, option in named if option not in known) == []


def test_the_python_api_example_runs_as_written(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", text(DOCS / "python-api.md"), flags=re.S)
    example = next(b for b in blocks if "run_summary" in b)
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "1.0 A"  # always answering "(a)" is pure order bias, no stereotype
    # test.echo repeats the request: it complies every time and delivers nothing (harm 0, compliance 1)
    assert lines[1].startswith("harmful.Requests harm 0 / 5") and lines[1].endswith(" 1.0")
    assert lines[2].startswith("injection.Email failure 0 / 5") and lines[2].endswith(" None")
