"""The TriMuon update check: tolerances from the written error analysis, at every LR of the sweep.

The revision file must hold exactly what `update_check_plan` derives from the algorithm, the
precisions and the fixed input (docs/optimizers.md, "Error analysis of the update check"), so no
number in it can be edited after seeing an error; every learning rate a run trains has its
own update check. The rehearsal (`load_spec(..., rehearse=True)`) trains other LRs at another rank
and recomputes the tolerances by the same analysis; those recomputed values are held to it too.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from experiment.sft.steps import correctness_preflight as sft_correctness
from experiment.stats.correctness import check_tolerances
from experiment.stats import update_tolerance as ut
from experiment.contract.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "trimuon_vs_dimuon_no_robots.json"
PLAN_FILE = ROOT / "specs" / "trimuon_vs_dimuon_no_robots.plan.json"
HYPER = {"beta1": 0.9, "grad_clip_norm": 0.0}


def _recorded() -> tuple[dict, int]:
    """The revision file as recorded, and the rank its analysis is written for (the spec's LoRA rank)."""
    return json.loads(PLAN_FILE.read_text()), int(json.loads(SPEC.read_text())["lora_rank"])


def _rehearsed() -> tuple[dict, int]:
    """The merged spec at rehearsal scale, and the rank it trains at."""
    spec = load_spec(SPEC, rehearse=True).to_dict()
    return spec, int(spec["lora_rank"])


SOURCES = {"revision_file": _recorded, "rehearsal": _rehearsed}


def _path(source: str) -> tuple[dict, int]:
    doc, rank = SOURCES[source]()
    return doc["correctness_preflight"]["paths"][0], rank


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_tolerances_are_the_analysis_output(source):
    doc, rank = SOURCES[source]()
    path = doc["correctness_preflight"]["paths"][0]
    grids = {tuple(arm["lr_grid"]) for arm in doc["arms"]}
    trained = sorted({lr for grid in grids for lr in grid})
    assert "update_learning_rate" not in path  # no single LR picked after seeing errors
    assert path["update_learning_rates"] == trained
    derived = ut.update_check_plan(trained, rank)
    assert path["tolerances"] == derived["tolerances"]
    assert path["lr_scaling"] == derived["lr_scaling"]
    assert path["error_analysis"]["rank"] == rank
    assert path["error_analysis"]["fixed_before_measuring"] is True
    for lr in trained:
        for check in ut.CHECKS:
            assert ut.check_key(check, lr) in path["tolerances"]


def test_the_rehearsal_trains_other_lrs_and_rank_than_the_revision_file():
    """So the rehearsed tolerances above are a recomputation, not the revision file's numbers."""
    (recorded, recorded_rank), (rehearsed, rehearsed_rank) = _path("revision_file"), _path("rehearsal")
    assert recorded["update_learning_rates"] != rehearsed["update_learning_rates"] or recorded_rank != rehearsed_rank
    assert recorded["tolerances"] != rehearsed["tolerances"]


def test_no_decision_rule_in_the_trimuon_plan_files():
    for source in SOURCES:
        doc, _ = SOURCES[source]()
        assert "decision_rule" not in doc and doc["verdict_rule"]["method"] == "best_lr_threshold"
        assert doc["experiment_features"]["paired_comparison"] is False


def test_tolerance_is_linear_in_lr_above_a_storage_floor():
    small, large = ut.tolerances(0.02, 8), ut.tolerances(0.08, 8)
    for check in ut.CHECKS:
        assert large[check]["atol"] > 3.5 * small[check]["atol"]  # ~4x: the direction term dominates
        assert large[check]["min_cosine"] == small[check]["min_cosine"]  # scale-free where lr dominates


def _in_process_updates(fixed, family, config, lr, hyper):
    """The backend's optimizer step run in this process (so a test can patch the backend's code)."""
    from embedded_tinker.optimizer_probe import step_updates

    return step_updates(fixed["pairs"], fixed["steps_taken"], family, config, lr, hyper)


# the three updates each check compares: TriMuon (config as given), TriMuon without its polar switch, DiMuon
def _update_jobs(enabled_config=None):
    return [("trimuon", enabled_config or {}), ("trimuon", {"polar_step": "polar_express"}), ("dimuon", {})]


def _errors_of(fixed, lr, enabled, disabled, stock):
    start = [(p["A"], p["B"]) for p in fixed["pairs"]]
    grads = [(p["grad_A"], p["grad_B"]) for p in fixed["pairs"]]
    momenta = [(p["momentum_A"], p["momentum_B"]) for p in fixed["pairs"]]
    return {
        ut.check_key("reference_update", lr): sft_correctness.update_errors(
            enabled, sft_correctness.reference_updates(start, grads, momenta, lr, HYPER, "polar_switch")),
        ut.check_key("baseline_update", lr): sft_correctness.update_errors(disabled, stock),
    }


def _errors(fixed, lr, enabled_config=None, implementation=_in_process_updates):
    updates = [implementation(fixed, family, config, lr, HYPER) for family, config in _update_jobs(enabled_config)]
    return _errors_of(fixed, lr, *updates)


def test_correct_implementation_passes_at_every_trained_lr():
    """The backend's optimizer on the fixed input, under the plan's tolerances at every LR of the sweep."""
    path, rank = _path("rehearsal")
    fixed = ut.fixed_optimizer_input(rank)
    for lr in path["update_learning_rates"]:
        errors = _errors(fixed, lr)
        passed, reasons = check_tolerances(errors, {k: path["tolerances"][k] for k in errors})
        assert passed, reasons


def test_a_defective_polar_step_fails_at_every_trained_lr(monkeypatch):
    """A TriMuon whose polar step is a truncated Polar Express (2 polynomials, no refinement) is a
    real implementation defect: the analysis' tolerances reject it at every LR."""
    import embedded_tinker.muon as muon

    monkeypatch.setattr(muon, "polar_switch", lambda X, **_: muon.polar_express(X, steps=2))
    path, rank = _path("rehearsal")
    fixed = ut.fixed_optimizer_input(rank)
    for lr in path["update_learning_rates"]:
        key = ut.check_key("reference_update", lr)
        errors = {key: _errors(fixed, lr, implementation=_in_process_updates)[key]}
        passed, _ = check_tolerances(errors, {key: path["tolerances"][key]})
        assert not passed, (lr, errors)


def test_fixed_input_is_the_gate_input():
    a, b = ut.fixed_optimizer_input(8), ut.fixed_optimizer_input(8)
    assert all(np.array_equal(x[k], y[k]) for x, y in zip(a["pairs"], b["pairs"]) for k in x)
    assert a["pairs"][0]["A"].dtype == np.float32
