"""Predict each category's grade before spending (`python -m flows.run SPEC --plan`).

`predict_grades(plan, exposure)` says, from the execution plan and what the service exposes, which
status the exchange will give each category and why. Exposures:
- `embedded`: the embedded backend reports the adapter hash and the optimizer family and config in
  `get_info`, so restoration can be verified;
- `production`: the production service reports only the optimizer family in `get_info`
  (`{"type": family}`) and no adapter hash (`save_weights_external` is absent), so initialization
  is proven with the immutable full-initialization checkpoint and the optimizer config stays
  unverified (REST-6); it trains every model with AdamW, so an arm of another optimizer family is
  refused by the preflight probe and the run stops there.
Where the run is predicted to stop at a gate (`predicted_stop`), every category that gate comes before is graded
as the grader grades a run stopped there: unknown (no record), a required correctness check unverified (a missing
check blocks like a failed one), and an opted-out category stays not_applicable.
Imports nothing heavy: it runs where `--plan` runs, without a service.
"""

from __future__ import annotations

from typing import Any

from experiment.contract.readback import (NOT_EXPOSED_IN_PRODUCTION, NOT_SERVED_IN_PRODUCTION,
                                          PRODUCTION_OPTIMIZER_FAMILY, SAME_CODE_ON_EMBEDDED)
from experiment.contract.spec import OPTIMIZER_FAMILY_ALIASES
from experiment.contract.verdict import GATE_ORDER
from experiment.grading.decision import pinned_decision_values

EXPOSURES = ("embedded", "production")
# The gate each category's record comes from (a run stopped before it has none).
CATEGORY_GATES = {"evaluator": "evaluation", "decision": "decision", "restoration": "restoration_preflight",
                  "correctness": "correctness_preflight", "feasibility": "feasibility_pilot",
                  "generation_audit": "generation_audit"}


def _entry(grade: str, reason: str) -> dict[str, str]:
    return {"grade": grade, "reason": reason}


def predict_grades(plan: Any, exposure: str = "embedded") -> dict[str, dict[str, str]]:
    """Long because: one prediction per category in the exchange's category order; each is a few lines that say why.
    """
    if exposure not in EXPOSURES:
        raise ValueError(f"exposure must be one of {', '.join(EXPOSURES)}, got {exposure!r}")
    supplied = set((plan.spec_revision or {}).get("supplied") or [])
    pinned = pinned_decision_values((plan.spec_revision or {}).get("resolved"))
    grades: dict[str, dict[str, str]] = {}

    grades["evaluator"] = _entry("verified", "the evaluator is frozen with explicit item ids before the first score "
                                             "and its predictions are retained inline")
    if plan.decision is None:
        grades["decision"] = _entry("not_applicable", "the spec has no decision_rule")
    elif ("decision_rule" in supplied and not pinned) or "verdict_rule" in supplied:
        grades["decision"] = _entry("not_applicable", "the exchange's spec has no decision_rule (only the recorded "
                                                      f"revision does): no decision object; the project recomputes "
                                                      f"{plan.decision['method']} from loss_eval and metrics")
    elif plan.gate("correctness_preflight").details.get("revisions_unresolved") and "correctness_pins" not in supplied:
        grades["decision"] = _entry("unknown", "the run stops before the full run while the correctness revisions are "
                                               "UNRESOLVED, so no decision is measured")
    elif pinned:
        grades["decision"] = _entry("unverified", f"{', '.join(pinned)}: UNRESOLVED in the spec and pinned by the "
                                                  "recorded revision only; the run posts a decision object (the spec "
                                                  "has a decision_rule), which the exchange grades against its own "
                                                  "spec (DEC-15)")
    elif getattr(plan, "selection", None):
        split = plan.selection["split"]
        grades["decision"] = _entry(
            "verified", f"adaptive selection: {plan.selection['role']} chosen among "
                        f"{', '.join(plan.selection['candidates'])} on {split['selection_items']} selection items, "
                        f"frozen before confirmation; {plan.decision['method']} on the {split['confirmation_items']} "
                        "disjoint confirmation items; the grader recomputes the split, the choice and the decision "
                        "from the retained predictions")
    else:
        grades["decision"] = _entry("verified", f"{plan.decision['method']} is recomputed from the retained "
                                                "observations")

    restoration = plan.gate("restoration_preflight")
    if restoration.applicable is False:
        grades["restoration"] = _entry("not_applicable", restoration.reason)
    elif restoration.applicable is not True:
        grades["restoration"] = _entry("unknown", restoration.reason)
    elif exposure == "production":
        grades["restoration"] = _entry(
            "unverified", "unverified on this service, which does not expose the optimizer config (get_info reports "
                          "only the optimizer family) and returns no adapter hash; initialization is proven by the "
                          "immutable full-initialization checkpoint")
    else:
        grades["restoration"] = _entry("verified", "the embedded backend reports the adapter hash and the optimizer "
                                                   "family and config after creation and every restore")

    correctness = plan.gate("correctness_preflight")
    unresolved = bool(correctness.details.get("revisions_unresolved"))
    if correctness.applicable is False:
        grades["correctness"] = _entry("not_applicable", correctness.reason)
    elif correctness.applicable is not True:
        grades["correctness"] = _entry("unknown", correctness.reason)
    elif "correctness_preflight" in supplied or ("correctness_pins" in supplied and unresolved):
        grades["correctness"] = _entry(
            "unverified", "the correctness plan (revisions, tolerances) comes from the recorded spec revision: the "
                          "exchange grades correctness unverified until its own spec carries the pins, and so does "
                          "this project's grader (CORR-6), however the checks come out")
    elif unresolved:
        grades["correctness"] = _entry("unverified", "the spec's correctness revisions are UNRESOLVED: the run stops "
                                                     "before any full run and requests a spec revision")
    elif not correctness.details.get("paths"):
        grades["correctness"] = _entry("unverified", "a custom or forked path with no accepted correctness plan in the "
                                                     "spec: reported required/unverified with a spec revision requested")
    else:
        grades["correctness"] = _entry("verified", "every check of the spec's plan is measured against its tolerances")

    grades["correctness"] = _weight_readback(grades["correctness"], correctness, exposure)

    grades["feasibility"] = _feasibility(plan)
    _budget_outlook(plan, grades)
    audit = plan.gate("generation_audit")
    if audit.applicable is False:
        grades["generation_audit"] = _entry("not_applicable", audit.reason)
    elif audit.applicable is not True:
        grades["generation_audit"] = _entry("unknown", audit.reason)
    elif audit.details.get("resolver_not_independent_of"):
        grades["generation_audit"] = _entry(
            "unknown", f"the re-solver is the {' and the '.join(audit.details['resolver_not_independent_of'])}: the "
                       "audit refuses it before generating, so no audit record is written")
    else:
        grades["generation_audit"] = _entry("verified", "candidates and the evaluation set are retained inline and "
                                                        "the audit passes before any optimizer update")
    stop = predicted_stop(plan, exposure)
    return _stopped(grades, plan, *stop) if stop else grades


def predicted_stop(plan: Any, exposure: str = "embedded") -> tuple[str, str] | None:
    """(gate, why) where the run is predicted to stop before its comparison, from the plan and the exposure;
    None where it is predicted to run every gate."""
    if exposure == "production":
        refused = [arm for arm in plan.trained_arms if OPTIMIZER_FAMILY_ALIASES.get(
            str(arm.optimizer.get("family")), str(arm.optimizer.get("family"))) != PRODUCTION_OPTIMIZER_FAMILY]
        if refused:
            return "preflight_probe", NOT_SERVED_IN_PRODUCTION.format(
                arms=", ".join(arm.name for arm in refused),
                families=", ".join(sorted({str(arm.optimizer.get("family")) for arm in refused})))
    return None


def _stopped(grades: dict[str, dict[str, str]], plan: Any, gate: str, why: str) -> dict[str, dict[str, str]]:
    """The grades of a run stopped at `gate`: a category whose gate comes after it has no record. A decision
    rule, the spec's or its revision's verdict rule, leaves the decision unknown (no verdict), not opted out."""
    supplied = set((plan.spec_revision or {}).get("supplied") or [])
    decides = plan.decision is not None or bool({"decision_rule", "verdict_rule"} & supplied)
    stopped = {}
    for name, entry in grades.items():
        later = GATE_ORDER.index(CATEGORY_GATES[name]) > GATE_ORDER.index(gate)
        if not later or entry["grade"] == "not_applicable" and (name != "decision" or not decides):
            stopped[name] = entry
        elif name == "correctness":  # a required check never made blocks like a failed one (CORR-1)
            stopped[name] = _entry("unverified", f"the run stops at {gate} before the correctness preflight: {why}. "
                                                 f"Past it, the check would grade {entry['grade']}: {entry['reason']}")
        else:
            stopped[name] = _entry("unknown", f"the run stops at {gate}, so it makes no {name} record: {why}")
    return stopped


def _feasibility(plan: Any) -> dict[str, str]:
    """A pilot size the spec states is held to (FEAS-10): a spec (or rehearsal) too small for it measures less."""
    stated = plan.gate("feasibility_pilot").details.get("stated_pilot")
    steps = min((run.steps for run in plan.training_runs if run.steps), default=0) if stated else 0
    if stated and (stated["eval_items"] > plan.eval["n_examples"] or stated["steps_per_arm"] > steps):
        return _entry("unknown", f"the spec states its pilot ({stated['source']}), but this spec has "
                                 f"{plan.eval['n_examples']} eval items and {steps} steps per arm, so the pilot "
                                 "measures less than stated")
    return _entry("verified", "a measured pilot with config and effective_config recorded identically and the "
                              "pilot's size in measurements")


# A rehearsal is budgeted this much room on a shared, loaded 2-core machine (experiment.contract.rehearsal's
# REHEARSAL_BUDGET, stated here since the grader does not import the rehearsal rules' module for one number).
REHEARSAL_ROOM_MINUTES = 60


def _budget_outlook(plan: Any, grades: dict[str, dict[str, Any]]) -> None:
    """A budget that may not hold the run: the static estimate on the production service's rates exceeds it
    (experiment.contract.cost), or a rehearsal's budget is below the room a rehearsal is given. An enforced budget
    may stop the run at the feasibility pilot: the categories measured after it would grade unknown
    (`if_stopped_at_feasibility`); one not enforced may be overrun, which the record says (RESULT.budget_use)."""
    gate = plan.gate("feasibility_pilot")
    cost = (gate.details or {}).get("static_estimate")
    budget = float((getattr(plan, "budget", None) or {}).get("max_wall_minutes") or 0)
    if cost and cost.get("may_not_fit"):
        why = (f"the static estimate on the production service's rates is {cost['estimate_seconds']:.0f} s against "
               f"the {cost['budget_seconds']:.0f} s budget")
    elif getattr(plan, "rehearsal", None) and 0 < budget < REHEARSAL_ROOM_MINUTES:
        why = (f"a rehearsal is given {REHEARSAL_ROOM_MINUTES} min on a loaded 2-core machine and this one's budget "
               f"is {budget:g} min")
    else:
        return
    if not getattr(gate, "enforced", True):
        grades["feasibility"]["reason"] += (f"; the budget may be overrun ({why}); it is not enforced "
                                            "(feasibility_required is not true), so the run goes on and its record "
                                            "says so (budget_use)")
        return
    grades["feasibility"]["reason"] += f"; may stop at feasibility: {why}"
    grades["feasibility"]["may_stop_at_feasibility"] = True
    for category in ("evaluator", "decision"):
        if grades[category]["grade"] != "not_applicable":
            grades[category]["if_stopped_at_feasibility"] = "unknown"


def _weight_readback(entry: dict[str, str], correctness: Any, exposure: str) -> dict[str, str]:
    """An optimizer path is measured through the service: its weights must be readable, and its baseline
    check measures a parity only where the two sides are distinct code (experiment/contract/readback.py)."""
    paths = [p for p in correctness.details.get("paths") or [] if isinstance(p, dict) and p.get("kind") == "optimizer"]
    if correctness.applicable is not True or not paths:
        return entry
    if exposure == "production":
        return _entry("unverified", NOT_EXPOSED_IN_PRODUCTION)
    if any(str(key).startswith("baseline_update") for p in paths for key in (p.get("tolerances") or {})):
        reason = SAME_CODE_ON_EMBEDDED if entry["grade"] != "unverified" else f"{entry['reason']}; {SAME_CODE_ON_EMBEDDED}"
        return _entry("unverified", reason)
    return entry
