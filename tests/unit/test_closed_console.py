"""A run goes on when the reader of its console goes away (flows.lifetime.survive_closed_console):
Prefect's console handler (rich underneath) raises SystemExit(1) at the first log line it cannot
write, which ended the whole run. Each case runs in a fresh interpreter whose stdout and stderr are a
pipe nobody reads any more."""

from __future__ import annotations

import os
import subprocess
import sys

from suite import REPO_ROOT

LOGS_AFTER_THE_READER_LEFT = """
import logging, sys
if sys.argv[1] == "guarded":
    from flows.lifetime import survive_closed_console
    survive_closed_console()
from prefect.logging.handlers import PrefectConsoleHandler  # keeps the sys.stderr of this moment

logger = logging.getLogger("closed-console")
logger.addHandler(PrefectConsoleHandler())
logger.propagate = False
for line in range(3):
    logger.warning("gate %d passed", line)
    print("progress", line, flush=True)
with open(sys.argv[2], "w") as out:
    out.write("the run went on")
"""


def run_with_closed_console(mode: str, marker) -> int:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-c", LOGS_AFTER_THE_READER_LEFT, mode, str(marker)], cwd=REPO_ROOT,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdout=write_end, stderr=write_end,
                              timeout=120)
    finally:
        os.close(write_end)
    return done.returncode


def test_a_closed_console_ends_an_unguarded_process_and_not_a_guarded_one(tmp_path):
    unguarded = tmp_path / "unguarded"
    assert run_with_closed_console("unguarded", unguarded) == 1  # rich's SystemExit(1) through Prefect's handler
    assert not unguarded.exists()

    guarded = tmp_path / "guarded"
    assert run_with_closed_console("guarded", guarded) == 0  # 0, not 120: the exit's flush succeeds too
    assert guarded.read_text() == "the run went on"


def test_the_listing_and_grading_clis_end_quietly_when_their_reader_is_gone(tmp_path):
    """`python -m flows.runs | head -0`, `python -m flows.validate ... | head`: without the guard the print
    ended in a BrokenPipeError traceback on stderr (shown first with the guard disabled)."""
    weakened = "import flows.lifetime as l, runpy, sys; l.survive_closed_console = lambda: None; sys.argv[0] = 'flows.runs'; runpy.run_module('flows.runs', run_name='__main__')"
    real = "import runpy, sys; sys.argv[0] = 'flows.runs'; runpy.run_module('flows.runs', run_name='__main__')"
    outcomes = {}
    for name, code in (("weakened", weakened), ("real", real)):
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            done = subprocess.run([sys.executable, "-c", code, "--runs-dir", str(tmp_path)], cwd=REPO_ROOT,
                                  env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, stdout=write_end,
                                  stderr=subprocess.PIPE, text=True, timeout=120)
        finally:
            os.close(write_end)
        outcomes[name] = (done.returncode, done.stderr)
    assert outcomes["weakened"][0] != 0 and "BrokenPipeError" in outcomes["weakened"][1]
    assert outcomes["real"] == (0, "")


def test_every_cli_guards_its_console_before_main():
    """Each `python -m flows.<cli>` entry point turns the guard on before its main prints anything."""
    entry_points = [path for path in sorted((REPO_ROOT / "flows").glob("*.py")) if "exit_process(main(" in path.read_text()]
    assert {path.stem for path in entry_points} >= {"run", "runs", "validate", "decide"}
    for path in entry_points:
        source = path.read_text()
        assert "survive_closed_console()" in source.split("exit_process(main(")[0], path.name
