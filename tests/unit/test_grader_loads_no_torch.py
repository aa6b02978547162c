"""The grader (`python -m flows.validate`) reads a record and loads neither torch nor the tinker SDK:
a check of a result.json takes about a second, not the several seconds torch's import costs on 2 cores."""

from __future__ import annotations

import json
import subprocess
import sys

from suite import REPO_ROOT

HEAVY = ("torch", "tinker", "transformers")


def loaded_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_grading_a_self_generated_record_loads_no_torch(graded_record, tmp_path):
    result, _ = graded_record("paired")  # a generation audit among the categories graded
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    grade = f"from experiment.grading import grade_path\nprint(grade_path({str(path)!r}))"
    # control: the record functions' run-time half (the audit run) does load the SDK, so the probe can see it
    assert "tinker" in loaded_after(grade + "\nfrom experiment.selfgen.generation_audit import blind_resolve\n"
                                            "import experiment.rl.loop")
    assert loaded_after(grade) == set()
