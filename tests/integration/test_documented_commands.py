"""Docs that match behaviour: every option a documented command line gives is one its command accepts.

The README, docs/*.md and deployments/README.md show command lines in code blocks and inline code. Each
`python -m <module> [subcommand] --option ...` and `python benchmarks/<file>.py --option ...` among them is
parsed, and the command's own `--help` (run once per command, as a process, as a reader would) must name every
option the docs give it. A documented option the program does not have ("prefect flow-run ls --tag", once in
deployments/README.md) fails here. Prefect's own CLI commands the docs show are held to `prefect ... --help` too.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import lru_cache

import pytest
from suite import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", REPO_ROOT / "deployments" / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
# Subcommands: the word after the module that selects another parser.
SUBCOMMANDS = {"flows.runs": ("show", "recover"), "embedded_tinker": ("serve",)}
OURS = re.compile(r"python -m ((?:flows|tools|embedded_tinker)(?:\.\w+)*)(?![.<\w])|python (benchmarks/\w+\.py)")
PREFECT = re.compile(r"\bprefect ((?:flow-run|deployment|gcl|worker|server) [\w-]+)")


def _documented_lines() -> list[tuple[str, str]]:
    """(file, command line) for every line of the docs that names one of our commands or prefect's."""
    found = []
    for doc in DOCS:
        for line in doc.read_text(encoding="utf-8").splitlines():
            for piece in re.split(r"`|(?<=\S)\s{2,}#", line):  # inline code and a block's trailing comment apart
                if OURS.search(piece) or PREFECT.search(piece):
                    found.append((doc.relative_to(REPO_ROOT).as_posix(), piece.strip()))
    return found


def _command_and_options(text: str) -> tuple[tuple[str, ...], list[str]] | None:
    """The command (argv prefix to run with --help) and the long options the line gives it."""
    ours, theirs = OURS.search(text), PREFECT.search(text)
    if ours:
        module, script = ours.groups()
        command = (sys.executable, "-m", module) if module else (sys.executable, script)
        rest = text[ours.end():]
    elif theirs:
        command = (str(REPO_ROOT / ".venv" / "bin" / "prefect"), *theirs.group(1).split())
        rest = text[theirs.end():]
    else:
        return None
    try:
        words = shlex.split(re.sub(r"[\\\[\]]", " ", rest), comments=True)
    except ValueError:  # a quote the line's prose opened: take the words as they are
        words = rest.split()
    words = [word for word in words if not word.startswith(("|", "&", ";"))]
    if ours and module in SUBCOMMANDS and words and words[0] in SUBCOMMANDS[module]:
        command = (*command, words[0])
    options = sorted({word.split("=", 1)[0] for word in words if re.fullmatch(r"--[a-z][\w-]*(=.*)?", word)})
    return command, options


@lru_cache(maxsize=None)
def _help(command: tuple[str, ...]) -> str:
    done = subprocess.run([*command, "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=180,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT),
                               "COLUMNS": "200", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"})
    assert done.returncode == 0, f"{' '.join(command)} --help failed: {done.stderr[-500:]}"
    return done.stdout


def _cases() -> list[tuple[str, tuple[str, ...], list[str]]]:
    cases: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    for doc, line in _documented_lines():
        parsed = _command_and_options(line)
        if parsed is None:
            continue
        command, options = parsed
        where, known = cases.get(command, (doc, []))
        cases[command] = (where, sorted(set(known) | set(options)))
    return [(where, command, options) for command, (where, options) in sorted(cases.items())]


def test_the_docs_name_commands_to_check():
    commands = {" ".join(command[1:]) for _, command, _ in _cases()}
    assert {"-m flows.run", "-m flows.validate", "-m flows.runs", "-m flows.runs show", "-m flows.decide"} <= commands


@pytest.mark.slow  # one --help process per documented command (about 20)
@pytest.mark.parametrize("where, command, options", _cases(), ids=lambda value: " ".join(value[1:])
                         if isinstance(value, tuple) else None)
def test_every_documented_option_is_one_the_command_accepts(where, command, options):
    text = _help(command)
    missing = [option for option in options if not re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text)]
    assert not missing, f"{where} documents {' '.join(command[1:])} {' '.join(missing)}, which its --help does not name"


def test_a_documented_option_the_program_lacks_is_found():
    """The check itself: the line deployments/README.md once had is caught."""
    command, options = _command_and_options("prefect flow-run ls --tag rehearsal")
    assert command[1:] == ("flow-run", "ls") and options == ["--tag"]
    assert _command_and_options("python -m flows.runs show <run_id> --runs-dir DIR")[0][-1] == "show"
