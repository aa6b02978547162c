"""Decision validity (issue 45 item 10): a criterion's weights are a contrast the contract defines.

The contract's decision is a paired effect between arms: per item sum_arm w_arm * value_arm(item), range
sum |w| * (hi - lo) (experiment.stats.decision.CONTRAST_REASON). All-zero weights made a criterion "pass, strong"
with effect 0 while the arm means were 0.5 and 0.655; they, and every other vector the contract does not define,
are refused at intake (`--plan`, exit 2, one line), by `python -m flows.decide` and in every decision computed.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiment.contract.plan import build_plan
from experiment.contract.spec import SpecError, load_spec
from experiment.stats.decision import (DecisionError, Observation, best_lr_threshold, paired_hoeffding,
                                       weights_problem, write_observations_jsonl)
from flows import run as run_cli
from suite import GS1_SPEC, REPO_ROOT

UNDEFINED = {
    "all zero": {"treatment": 0, "baseline": 0},
    "a level, not a difference": {"treatment": 1, "baseline": 0},
    "not summing to zero": {"treatment": 1, "baseline": -0.5},
}


def _gs1_with_weights(tmp_path: Path, weights: dict) -> Path:
    """The GS1 spec with its revision file beside it, the primary criterion weighted by `weights`."""
    spec = json.loads(GS1_SPEC.read_text())
    spec["decision_rule"]["criteria"][0]["weights"] = weights
    path = tmp_path / GS1_SPEC.name
    path.write_text(json.dumps(spec))
    plan = GS1_SPEC.with_name(GS1_SPEC.name.replace(".json", ".plan.json"))
    shutil.copy(plan, tmp_path / plan.name)
    return path


def _observations(path: Path) -> Path:
    """Arm means 0.5 (gs1_kernel) and 0.655 (grpo_gs8) over 200 paired items."""
    rows = [Observation(f"item-{k}", arm, 0, "accuracy", float(k < cut), "e" * 64)
            for arm, cut in (("gs1_kernel", 100), ("grpo_gs8", 131)) for k in range(200)]
    write_observations_jsonl(path, rows)
    return path


@pytest.mark.parametrize("name", list(UNDEFINED))
def test_intake_refuses_weights_the_contract_does_not_define(tmp_path, capsys, name):
    spec = _gs1_with_weights(tmp_path, UNDEFINED[name])
    with pytest.raises(SpecError, match=r"decision_rule\.criteria\[0\]\.weights: .*contrast"):
        build_plan(load_spec(spec))
    assert run_cli.main([str(spec), "--plan"]) == run_cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and "contrast" in err


def test_the_written_weights_still_plan(tmp_path, capsys):
    assert run_cli.main([str(_gs1_with_weights(tmp_path, {"treatment": 1, "baseline": -1})), "--plan"]) == 0
    assert json.loads(capsys.readouterr().out)["decision"]


@pytest.mark.parametrize("name", list(UNDEFINED))
def test_decide_refuses_weights_the_contract_does_not_define(tmp_path, name):
    spec = _gs1_with_weights(tmp_path, UNDEFINED[name])
    done = subprocess.run([sys.executable, "-m", "flows.decide", str(spec), str(_observations(tmp_path / "o.jsonl"))],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, HF_HUB_OFFLINE="1"))
    assert done.returncode == 2, done.stdout
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1 and "contrast" in done.stderr


@pytest.mark.parametrize("weights", [{"a": 0, "b": 0}, {}, {"a": float("nan"), "b": -1}, {"a": True, "b": -1}])
def test_no_decision_is_computed_from_zero_range_weights(weights):
    """paired_hoeffding (the flow, flows.decide and the grader's DEC-8) and best_lr_threshold refuse them."""
    rows = [Observation("i", arm, 0, "acc", 1.0) for arm in ("a", "b")]
    with pytest.raises(DecisionError, match="contrast"):
        paired_hoeffding(rows, [{"id": "c", "metric": "acc", "weights": weights, "margin": -0.03, "bounds": [0, 1]}],
                         alpha=0.05)
    with pytest.raises(DecisionError, match="contrast"):
        best_lr_threshold({"a": {"acc": 1.0}, "b": {"acc": 0.0}}, {"a": "a", "b": "b"}, {"a": 1e-3, "b": 1e-3},
                          [{"id": "c", "metric": "acc", "weights": weights, "margin": 0.0}], "acc")


def test_each_undefined_vector_is_refused_for_its_own_reason():
    assert "name no arm" in weights_problem({}) and "name no arm" in weights_problem(None)
    assert "every weight is 0" in weights_problem({"a": 0, "b": 0.0})
    assert "not a finite number" in weights_problem({"a": math.inf, "b": -1})
    assert "sum to 0.5" in weights_problem({"a": 1, "b": -0.5})


@pytest.mark.parametrize("weights", [{"treatment": 1, "baseline": -1}, {"rl_selfgen": 1, "rl_gsm8k": -0.5, "base": -0.5},
                                     {"dimuon_lite": 1, "trimuon": -1}])
def test_the_seed_specs_contrasts_are_defined(weights):
    assert weights_problem(weights) is None


def test_the_grader_does_not_accept_a_decision_by_all_zero_weights(graded_record):
    """A record graded against a spec whose criterion weights are all zero: its decision cannot be recomputed
    (DEC-8 invalid), never recomputed to 'passes' with effect 0."""
    from experiment.grading import grade_record

    record, _ = graded_record("paired")
    spec = load_spec(REPO_ROOT / "specs" / "selfgen_tasks_vs_gsm8k.json")
    assert grade_record(record, spec=spec).categories["decision"].status == "verified"
    criterion = spec.decision_rule.criteria[0]
    criterion.weights = {arm: 0.0 for arm in criterion.weights}
    decision = grade_record(record, spec=spec).categories["decision"]
    assert decision.status == "invalid"
    assert any(issue.rule == "DEC-8" and "contrast" in issue.message for issue in decision.issues)
