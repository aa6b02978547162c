"""End-to-end tests of `python -m flows.decide SPEC OBSERVATIONS.jsonl` (no Prefect, no service)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from experiment.stats.decision import Observation, write_observations_jsonl

ROOT = Path(__file__).resolve().parents[2]
GS1_SPEC = ROOT / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"
SELFGEN_SPEC = ROOT / "specs" / "selfgen_tasks_vs_gsm8k.json"


def _run(*arguments):
    environment = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "flows.decide", *map(str, arguments)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=environment)


def _write(path, values_by_arm, evaluator="e" * 64):
    observations = [Observation(f"item-{k}", arm, 0, "accuracy", float(v), evaluator)
                    for arm, values in values_by_arm.items() for k, v in enumerate(values)]
    write_observations_jsonl(path, observations)
    return path


def test_gs1_decision_recomputes_from_the_observations_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 1319
    treatment = (rng.random(n) < 0.9).astype(float)
    baseline = (rng.random(n) < 0.5).astype(float)
    path = _write(tmp_path / "scored-observations.jsonl", {"gs1_kernel": treatment, "grpo_gs8": baseline})
    completed = _run(GS1_SPEC, path)
    assert completed.returncode == 0, completed.stderr
    output = json.loads(completed.stdout)
    criterion = output["criteria"][0]
    effect = float(np.mean(treatment - baseline))
    half_width = 2 * math.sqrt(math.log(1 / 0.05) / (2 * n))
    assert criterion["effect"] == pytest.approx(effect, abs=1e-14)
    assert criterion["lower"] == pytest.approx(effect - half_width, abs=1e-14)
    assert criterion["upper"] == pytest.approx(effect + half_width, abs=1e-14)
    assert criterion["per_arm_means"]["gs1_kernel"] == pytest.approx(treatment.mean(), abs=1e-15)
    assert output["role_to_arm"] == {"treatment": "gs1_kernel", "baseline": "grpo_gs8"}
    assert output["vocabulary"] == "direction_confidence"
    assert (output["verdict"], output["confidence"]) == ("supported", "strong")


def test_selfgen_decision_uses_three_way_vocabulary_and_bonferroni(tmp_path):
    n = 1319
    rng = np.random.default_rng(1)
    same = (rng.random(n) < 0.6).astype(float)
    path = _write(tmp_path / "obs.jsonl", {"rl_selfgen": same, "rl_gsm8k": same, "base": same})
    completed = _run(SELFGEN_SPEC, path)
    assert completed.returncode == 0, completed.stderr
    output = json.loads(completed.stdout)
    assert output["vocabulary"] == "three_way"
    assert output["adjustment"] == "bonferroni"
    assert [c["alpha"] for c in output["criteria"]] == [0.025, 0.025]
    # Identical arms: both effects are 0 and each half-width is 2 * sqrt(ln(1/0.025) / (2n)),
    # wider than 0.03, so both intervals straddle their margins (-0.03 and 0).
    half_width = 2 * math.sqrt(math.log(1 / 0.025) / (2 * n))
    assert half_width > 0.03
    assert [c["effect"] for c in output["criteria"]] == [0.0, 0.0]
    assert [c["status"] for c in output["criteria"]] == ["unsettled", "unsettled"]
    assert output["verdict"] == "inconclusive"
    assert output["outcome_reason"] == "insufficient_evidence"
    assert "confidence" not in output


@pytest.mark.parametrize("content,needle", [
    ('{"item_id": "a", "arm": "gs1_kernel", "seed": 0, "metric": "accuracy", "value": NaN}\n', "not finite"),
    ("{broken\n", "not valid JSON"),
    ('{"item_id": "a", "arm": "gs1_kernel", "seed": 0, "metric": "accuracy", "value": 1}\n', "missing observations"),
])
def test_bad_observations_exit_2_with_one_line(tmp_path, content, needle):
    path = tmp_path / "obs.jsonl"
    path.write_text(content)
    completed = _run(GS1_SPEC, path)
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in completed.stderr


def test_missing_files_and_arguments_exit_2(tmp_path):
    for arguments in ((GS1_SPEC, tmp_path / "absent.jsonl"), (tmp_path / "absent.json", GS1_SPEC), (GS1_SPEC,)):
        completed = _run(*arguments)
        assert completed.returncode == 2
        assert len(completed.stderr.strip().splitlines()) == 1
        assert "Traceback" not in completed.stderr


def test_decision_and_advantage_modules_do_not_mention_prefect():
    for name in ("experiment/rl/advantages.py", "experiment/rl/gs1_reference.py", "experiment/stats/correctness.py",
                 "experiment/stats/decision.py", "experiment/stats/evaluation.py", "flows/decide.py"):
        assert "prefect" not in (ROOT / name).read_text().lower(), name


def test_rows_for_arms_not_in_the_spec_exit_2_with_one_line(tmp_path, monkeypatch):
    from flows import decide as decide_cli

    rng = np.random.default_rng(2)
    values = (rng.random(200) < 0.6).astype(float)
    path = _write(tmp_path / "obs.jsonl", {"gs1_kernel": values, "grpo_gs8": values, "gs1_kernle": values})
    with monkeypatch.context() as weak:  # attack first: without the check, the mistyped arm's rows are dropped
        weak.setattr(decide_cli, "refuse_unknown_arms", lambda *args: None)
        assert decide_cli.decide(GS1_SPEC, path)["observations_file"]["rows"] == 600
    completed = _run(GS1_SPEC, path)
    assert completed.returncode == 2 and completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in completed.stderr
    assert "200 rows name arms the spec does not have ('gs1_kernle'" in lines[0]
