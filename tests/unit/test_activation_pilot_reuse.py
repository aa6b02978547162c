"""A kept activation-pilot log is what a resumed activation_gate reuses (experiment.rl.pilot.kept_pilot), on a real
result store, without a service (tests/integration/test_activation_gate_resume.py drives the GS1 gate itself).

The pilot run again kept other bytes under the same evidence name (its step timings), which the store refuses:
evidence names are immutable. Both activation steps (GS1 and self-generated tasks) keep their pilots with
keep_pilot_log; reused steps are written back byte for byte, so keeping the reused pilot again is the store's
no-op, and the activation values computed from the reused steps are those of the measured ones.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from suite import GS1_SPEC

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.rl.loop import StepRecord
from experiment.rl.pilot import keep_pilot_log, kept_pilot, pilot_log_name
from experiment.run.store import RunStore, StoreError
from experiment.stats.activation import gs1_activation_values, selfgen_activation_values


def _step(arm: str, step: int, seconds: float) -> StepRecord:
    items = [f"{arm}-item-{step}-{k}" for k in range(3)]
    return StepRecord(arm=arm, step=step, item_ids=items, rewards=[1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
                      advantages=[0.5, -0.5, 0.25, 0.25, -0.1, -0.4], executed_group_size=2.0, mean_reward=0.5,
                      loss_sum=-0.125, n_datums=6, n_action_tokens=48, optim_seconds=seconds, step_seconds=3 * seconds,
                      baseline_values=[0.4, 0.6, 0.5], effective_neighbors=[12.5, 30.25, 7.0], kernel_fallbacks=0,
                      prompt_features=[(1.5, -0.25), (2.0, -0.5), (1.25, -0.75)])


@pytest.fixture
def ctx(tmp_path):
    spec = load_spec(GS1_SPEC, rehearse=True, rehearsal_scale="wiring")
    plan = build_plan(spec)
    store = RunStore.create(tmp_path / "runs", spec, plan)
    yield SimpleNamespace(store=store)
    store.release()


def _measured(seconds: float):
    return [_step("treat", 0, seconds), _step("treat", 1, seconds)], [_step("base", 0, seconds)]


@pytest.mark.parametrize("bandwidth", [0.5, "selfgen"], ids=["gs1", "selfgen"])
def test_a_pilot_run_again_keeps_other_bytes_which_the_store_refuses(ctx, bandwidth):
    treatment, baseline = _measured(0.01)
    keep_pilot_log(ctx, bandwidth, treatment + baseline, {"treat-item-0-0": 0.5})
    again_treatment, again_baseline = _measured(0.02)  # the same pilot, timed again
    with pytest.raises(StoreError, match="evidence names are immutable"):
        keep_pilot_log(ctx, bandwidth, again_treatment + again_baseline, {"treat-item-0-0": 0.5})


@pytest.mark.parametrize("bandwidth", [0.5, "selfgen"], ids=["gs1", "selfgen"])
def test_a_kept_pilot_is_reused_with_its_values_and_kept_again_unchanged(ctx, bandwidth):
    assert kept_pilot(ctx, bandwidth, ("treat", "base")) is None  # nothing kept: the gate runs its pilot
    treatment, baseline = _measured(0.01)
    heldout = {"treat-item-0-0": 0.5, "treat-item-0-1": 0.125, "treat-item-0-2": 0.75}
    keep_pilot_log(ctx, bandwidth, treatment + baseline, heldout)
    log = (ctx.store.run_dir / "evidence" / pilot_log_name(bandwidth)).read_bytes()

    kept = kept_pilot(ctx, bandwidth, ("treat", "base"))
    reused_treatment, reused_baseline = kept["steps"]["treat"], kept["steps"]["base"]
    assert kept["heldout"] == heldout and [s.step for s in reused_treatment] == [0, 1]
    assert gs1_activation_values(reused_treatment, reused_baseline, kept["heldout"], reused_treatment[0]) == \
        gs1_activation_values(treatment, baseline, heldout, treatment[0])
    ids = {i for s in treatment for i in s.item_ids}
    assert selfgen_activation_values(reused_treatment, reused_baseline, ids, set(), 0) == \
        selfgen_activation_values(treatment, baseline, ids, set(), 0)

    keep_pilot_log(ctx, bandwidth, reused_treatment + reused_baseline, kept["heldout"])  # the store's no-op
    assert (ctx.store.run_dir / "evidence" / pilot_log_name(bandwidth)).read_bytes() == log
    assert [e["evidence"] for e in ctx.store.read_events() if e["event"] == "activation_pilot_reused"] == [
        pilot_log_name(bandwidth)]


def test_a_further_candidate_keeps_the_first_pilots_baseline_steps_as_they_were_logged(ctx):
    """GS1's calibration: the second bandwidth's log carries the first pilot's baseline steps; reused, they are
    written back as logged (their measured timings, not new ones)."""
    treatment, baseline = _measured(0.01)
    keep_pilot_log(ctx, 0.5, treatment + baseline, {})
    reused_baseline = kept_pilot(ctx, 0.5, ("treat", "base"))["steps"]["base"]
    keep_pilot_log(ctx, 1.0, _measured(0.03)[0] + reused_baseline, {})
    rows = (ctx.store.run_dir / "evidence" / pilot_log_name(1.0)).read_text().splitlines()
    assert '"optim_seconds": 0.01' in rows[2] and '"optim_seconds": 0.03' in rows[0]
