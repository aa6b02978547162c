"""What intake knows a run cannot get past, refused before any service contact (issue 46, "refused before any
spending"). `check_before_spending(spec, plan)` runs at the end of the support check
(experiment.contract.support), so `--plan`, a run and a deployment run refuse the same specs, each with one
SpecError line (exit 2). Every rule here stands for a run that was accepted, spent the probe and the
preflights, and then stopped or decided nothing:

- correctness revisions still UNRESOLVED: the correctness preflight stops the run before any full run
  (the GS1 spec without its revision file stopped there after 350 s); the refusal names `--draft-revision`;
- a wall budget the static cost estimate shows cannot fit (experiment.contract.cost): the feasibility pilot
  stops the run after the preflights ("projected 84 s exceeds 6 s");
- decision bounds that are not the metric's range (accuracy is 0 or 1 per item: [0, 100] makes the interval a
  hundred times wider, and a margin of -3 "points" on it can never be met), and a margin outside the range of
  the effect (decided by the margin alone);
- a rollout whose max_tokens leaves no room for the prompt in max_seq_len.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from experiment.contract.cost import static_cost
from experiment.contract.errors import SpecError
from experiment.contract.rollout import rollout_settings

if TYPE_CHECKING:
    from experiment.contract.spec import Spec

# The per-item range of each metric a decision criterion may score (what experiment.stats.decision reads
# bounds as: range = sum |w| x (hi - lo)).
METRIC_RANGES = {"accuracy": (0.0, 1.0)}
DRAFT_HINT = "python -m flows.run SPEC --draft-revision writes the revision file that pins them (docs/new-spec.md)"


def check_before_spending(spec: Spec, plan: Any) -> None:
    _check_correctness_pins(spec, plan)
    _check_bounds(spec)
    _check_room_for_the_prompt(spec, plan)
    _check_budget(spec, plan)


def _check_correctness_pins(spec: Spec, plan: Any) -> None:
    """A correctness preflight that blocks with revisions pinned nowhere stops the run before any full run
    ("No full run happens while correctness_preflight is unresolved"): refused here instead."""
    gate = plan.gate("correctness_preflight")
    if not gate.blocks or not gate.details.get("revisions_unresolved"):
        return
    open_pins = [f"{path}.{key}" for path, entry in (gate.details.get("revision_pins") or {}).items()
                 for key, pin in entry.items() if pin.get("pinned") is None]
    revision = spec.source.revision if spec.source else None
    where = (f"its revision file {revision.path} does not pin them" if revision is not None
             else "the spec has no revision file")
    raise SpecError("correctness_preflight", f"revisions {', '.join(open_pins)} are UNRESOLVED and {where}: the run "
                                             "would stop at the correctness preflight before any full run; "
                                             f"{DRAFT_HINT}")


def _check_bounds(spec: Spec) -> None:
    rule = spec.decision_rule
    if rule is None:
        return
    for index, criterion in enumerate(rule.criteria):
        metric_range = METRIC_RANGES.get(criterion.metric)
        bounds = criterion.bounds
        where = f"decision_rule.criteria[{index}]"
        if metric_range is None or not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            continue  # a metric without a known range, or no bounds: the support check's to refuse
        lo, hi = metric_range
        if [float(b) for b in bounds] != [lo, hi]:
            shown = f"[{', '.join(f'{float(b):g}' for b in bounds)}]"
            raise SpecError(f"{where}.bounds", f"{shown} is not the range of {criterion.metric} ([{lo:g}, "
                                               f"{hi:g}] per item): the interval's width is sum |w| x (hi - lo), so "
                                               f"wider bounds make it {(float(bounds[1]) - float(bounds[0])) / (hi - lo):g} "
                                               f"times wider than the metric allows; state [{lo:g}, {hi:g}] (a "
                                               "margin of 3 points is 0.03)")
        weights = [float(w) for w in criterion.weights.values()]
        low = sum(w * (hi if w < 0 else lo) for w in weights)
        high = sum(w * (hi if w > 0 else lo) for w in weights)
        if not low < float(criterion.margin) < high:
            raise SpecError(f"{where}.margin", f"{criterion.margin:g} lies outside the effect's range ({low:g}, "
                                               f"{high:g}) for {criterion.metric} in [{lo:g}, {hi:g}]: the criterion "
                                               "would be decided by the margin alone; state the margin on the "
                                               "metric's scale (3 points of accuracy is 0.03)")


def _check_room_for_the_prompt(spec: Spec, plan: Any) -> None:
    """An RL rollout of max_tokens answer tokens must leave room for its prompt in max_seq_len."""
    max_seq_len = getattr(spec, "max_seq_len", None)
    if plan.training_type != "rl" or not isinstance(max_seq_len, int):
        return
    try:
        rollout = rollout_settings(spec)
    except (ValueError, TypeError, KeyError):
        return  # the support check names an unreadable rollout
    if rollout.max_tokens >= max_seq_len:
        raise SpecError("rollout", f"max_tokens {rollout.max_tokens} (from {rollout.source}) leaves no room for the "
                                   f"prompt in max_seq_len {max_seq_len}: a sequence is the prompt plus the answer; "
                                   "state a max_tokens below max_seq_len by at least the longest prompt")


def _check_budget(spec: Spec, plan: Any) -> None:
    """An enforced wall budget (feasibility_required) that even the floor of the static estimate exceeds."""
    cost = static_cost(spec)
    if cost is None or not cost.cannot_fit or not plan.gate("feasibility_pilot").enforced:
        return
    raise SpecError("budget.max_wall_minutes", f"{spec.budget.max_wall_minutes:g} min ({cost.budget_seconds:.0f} s) "
                                               f"cannot hold the run: even the floor of the static estimate is "
                                               f"{cost.floor_seconds:.0f} s ({cost.basis}); the feasibility pilot would "
                                               "stop it after the preflights; give a budget of at least "
                                               f"{cost.estimate_seconds / 60:.0f} min, or fewer steps")
