"""What `--draft-revision` reads from a spec's prose (experiment/contract/spec_prose.py): the arms the method and
baseline texts describe, their optimizers and settings, LR grids, and the success criterion's margin.

Before (issue 46, onboarding): two generic arms whatever the text described, the baseline's optimizer UNRESOLVED
when the text named it, a stated AdamW grid ignored (every arm got optimizer.lr x {0.5, 1, 2})."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiment.contract.spec_prose import arms_from_text, margin_from_text, sdk_defaults

SPECS = Path(__file__).resolve().parents[2] / "specs"


def _spec(method: str, baseline: str, optimizer: str | None = "dimuon") -> dict:
    return {"method": method, "baseline": baseline, "dataset": {"name": "no_robots"},
            **({"optimizer": {"name": optimizer, "lr": 1e-4}} if optimizer else {})}


def _summary(arms: list[dict]) -> list[tuple]:
    """(name, role, family, the settings the text states over the SDK's step defaults, grid) of each arm."""
    return [(a["name"], a["role"] if not a["role"].startswith("UNRESOLVED") else "open", a["optimizer"]["family"],
             {k: v for k, v in a["optimizer"]["config"].items() if sdk_defaults(a["optimizer"]["family"]).get(k, "-") != v},
             a.get("lr_grid")) for a in arms]


def test_every_step_setting_of_a_family_the_sdk_defines_is_stated():
    """The restoration check compares the update an arm took with the requested config (REST-10): a setting the
    request leaves out but the step takes (AdamW's eps) would not be the requested optimizer's."""
    arms = arms_from_text(_spec("Treatment dimuon-lite.", "AdamW (beta1 0.8)"))
    assert arms[1]["optimizer"]["config"] == {**sdk_defaults("adamw"), "beta1": 0.8}
    assert set(sdk_defaults("adamw")) >= {"beta1", "beta2", "eps", "weight_decay", "grad_clip_norm"}
    assert arms[0]["optimizer"]["config"] == sdk_defaults("dimuon")


def test_a_stated_adamw_grid_is_the_baseline_arms_and_the_treatment_takes_the_common_one():
    spec = _spec("Treatment dimuon-lite; each arm sweeps LR over {5e-5, 1e-4, 2e-4}.",
                 "AdamW (beta1 0.8, beta2 0.99) swept over LR [1e-4, 3e-4, 1e-3]. Same model and data order.")
    assert _summary(arms_from_text(spec)) == [
        ("dimuon_lite", "treatment", "dimuon", {}, [5e-5, 1e-4, 2e-4]),
        ("adamw", "baseline", "adamw", {"beta1": 0.8, "beta2": 0.99}, [1e-4, 3e-4, 1e-3])]


def test_the_baseline_text_names_the_baseline_optimizer_and_same_lr_grid_shares_the_treatments():
    spec = _spec("The treatment arm runs muon with LR grid {1e-4, 2e-4}.",
                 "AdamW with weight_decay=0.01; same steps and LR grid.", optimizer=None)
    assert _summary(arms_from_text(spec)) == [
        ("muon", "treatment", "muon", {}, [1e-4, 2e-4]),
        ("adamw", "baseline", "adamw", {"weight_decay": 0.01}, [1e-4, 2e-4])]


def test_a_third_optimizer_the_method_runs_as_an_arm_is_drafted_with_its_role_open_and_a_deferred_one_is_not():
    three = _spec("Three arms: TriMuon, DiMuon and AdamW, each arm over {5e-5, 1e-4}.", "dimuon-lite", "trimuon")
    assert _summary(arms_from_text(three)) == [
        ("trimuon", "treatment", "trimuon", {}, [5e-5, 1e-4]), ("dimuon_lite", "baseline", "dimuon", {}, [5e-5, 1e-4]),
        ("adamw", "open", "adamw", {}, [5e-5, 1e-4])]
    deferred = _spec("TriMuon against dimuon-lite. Polar Switch and AdamW arms are follow-up specs, not part of this "
                     "decision.", "dimuon-lite", "trimuon")
    assert [arm["name"] for arm in arms_from_text(deferred)] == ["trimuon", "dimuon_lite"]


def test_the_trimuon_texts_give_the_recorded_revisions_arms():
    spec = json.loads((SPECS / "trimuon_vs_dimuon_no_robots.json").read_text())
    recorded = json.loads((SPECS / "trimuon_vs_dimuon_no_robots.plan.json").read_text())["arms"]
    keys = ("name", "role", "optimizer", "lr_grid", "service")
    assert [{k: a[k] for k in keys} for a in arms_from_text(spec)] == [{k: a[k] for k in keys} for a in recorded]


def test_texts_that_name_no_optimizer_leave_it_open():
    arms = arms_from_text(_spec("Train two arms.", "the usual setup", optimizer=None))
    assert [arm["optimizer"].startswith("UNRESOLVED") for arm in arms] == [True, True]


@pytest.mark.parametrize("text, metric, margin", [
    ("Validated if best-LR TriMuon eval NLL is at least 0.01 nats below best-LR dimuon-lite eval NLL", "nll", 0.01),
    ("must exceed -0.03 (noninferiority margin of 3 points)", "accuracy", -0.03),
    ("accuracy at least 3 points higher than GRPO", "accuracy", 0.03),
    ("accuracy no more than 2 points lower than the baseline", "accuracy", -0.02),
    ("at least 0.01 nats below", "accuracy", None),
    ("better than the baseline", "nll", None),
])
def test_the_margin_is_read_where_the_success_criterion_states_it(text, metric, margin):
    assert margin_from_text(text, metric) == margin
