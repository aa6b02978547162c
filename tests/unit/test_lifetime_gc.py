"""The CLI keeps the garbage collector off its imported heap (flows/lifetime.py): `imports_frozen()`
around the imports, `exit_process(code)` at the end. Each case runs in a fresh interpreter, so that
freezing never touches this test process's own heap."""

from __future__ import annotations

import os
import subprocess
import sys

from suite import REPO_ROOT

FINALIZED_ON_EXIT = """
import gc, sys
from flows.lifetime import exit_process

class WritesWhenFinalized:
    def __init__(self, path):
        self.path, self.me = path, self  # a reference cycle: only the collector frees it

    def __del__(self):
        with open(self.path, "w") as out:
            out.write("finalized")

WritesWhenFinalized(sys.argv[1])
if sys.argv[2] == "freeze-only":  # weakened: freeze without the collection before it
    gc.freeze()
    sys.exit(3)
exit_process(3)
"""

FROZEN_BLOCK = """
import gc, json
from flows.lifetime import imports_frozen

seen = {}
with imports_frozen():
    import fractions  # a module imported inside the block
    seen["inside_enabled"] = gc.isenabled()
seen["after_enabled"], seen["frozen_after"] = gc.isenabled(), gc.get_freeze_count()
try:
    with imports_frozen():
        raise KeyError("an import failed")
except KeyError:
    pass
seen["after_error_enabled"], seen["frozen_after_error"] = gc.isenabled(), gc.get_freeze_count()
print(json.dumps(seen))
"""


def python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


def test_exit_process_keeps_the_exit_code_and_finalizes_what_is_garbage(tmp_path):
    weakened, real = tmp_path / "weakened", tmp_path / "real"
    done = python(FINALIZED_ON_EXIT, str(weakened), "freeze-only")
    assert done.returncode == 3, done.stderr
    assert not weakened.exists()  # a frozen cycle is never finalized: what its finalizer writes is lost
    done = python(FINALIZED_ON_EXIT, str(real), "exit_process")
    assert done.returncode == 3, done.stderr
    assert real.read_text() == "finalized"


def test_imports_frozen_pauses_collection_then_freezes_and_always_resumes():
    import json

    done = python(FROZEN_BLOCK)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["inside_enabled"] is False and seen["after_enabled"] is True
    assert seen["frozen_after"] > 1000  # the interpreter's and the block's objects are frozen
    # a failing block resumes collection and freezes nothing more
    assert seen["after_error_enabled"] is True and seen["frozen_after_error"] == seen["frozen_after"]
