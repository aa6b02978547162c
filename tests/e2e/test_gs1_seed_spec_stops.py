"""End to end: the exchange's GS1 seed spec, copied without its recorded revision file, stops before anything
is spent. Its correctness revisions are UNRESOLVED ("No full run happens while correctness_preflight is
unresolved"), which intake knows: `--plan`, `--rehearse` and a run as written on the embedded backend are refused
with exit 2 and one line naming the pins and `--draft-revision`, and no run directory is made (issue 46: before,
the rehearsal spent the probe and stopped at the correctness preflight after 350 s, and the run as written on the
embedded backend substituted embedded/tiny-arith for Qwen/Qwen3.5-2B and stopped at the same gate).
"""

from __future__ import annotations

import shutil

import pytest

from suite import GS1_SPEC, run_cli


@pytest.mark.parametrize("mode", [("--plan",), ("--rehearse",), ()], ids=["plan", "rehearse", "as-written"])
def test_seed_spec_without_its_revision_file_is_refused_before_any_spending(mode, tmp_path):
    alone = tmp_path / "spec" / GS1_SPEC.name
    alone.parent.mkdir()
    shutil.copy(GS1_SPEC, alone)
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(alone), *mode, "--runs-dir", str(runs), timeout=300)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    line = done.stderr.strip()
    assert "Traceback" not in line and "\n" not in line and not done.stdout.strip()
    assert "baseline_revision" in line and "reference_revision" in line and "UNRESOLVED" in line
    assert "--draft-revision" in line and "the spec has no revision file" in line
    assert not runs.exists() or not any(runs.iterdir())
