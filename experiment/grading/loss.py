"""The held-out loss rules re-derived by the grader (LOSS-2, LOSS-3), from the contract's text, not the pipeline's code.

The grader imports no code of experiment.sft: the run's loss evaluator (experiment/sft/loss_eval.py) would
otherwise pass its own check. Exchange contract §8 and contract-details A-8.3:

- a token counts when its weight is > 0; totals are kept per example, an example with no counted token is
  `n_empty` and left out of both means;
- token_mean = sum of NLL over counted tokens / number of counted tokens; example_mean = mean over the non-empty
  examples of each one's mean; `value` is the aggregation's;
- each entry (an arm, or a run of an LR grid under `runs`) has the record's aggregation, finite `value`, `nll_sum`
  and `n_tokens` with n_tokens > 0, `value` equal to nll_sum / n_tokens for token_mean (to `example_mean` for
  example_mean) within rel 1e-6, abs 1e-12, and every entry the same (n_tokens, n_examples).
"""

from __future__ import annotations

import math
from typing import Any

AGGREGATIONS = ("token_mean", "example_mean")
REL_TOL, ABS_TOL = 1e-6, 1e-12


def held_out_loss(totals: list[tuple[float, int]], aggregation: str) -> dict[str, Any]:
    """The loss_eval entry's numbers of per-example (nll_sum, n_tokens) totals."""
    counted = [(nll, tokens) for nll, tokens in totals if tokens > 0]
    nll_sum = math.fsum(nll for nll, _ in counted)
    n_tokens = sum(tokens for _, tokens in counted)
    token_mean = nll_sum / n_tokens if n_tokens else math.nan
    example_mean = math.fsum(nll / tokens for nll, tokens in counted) / len(counted) if counted else math.nan
    return {"value": example_mean if aggregation == "example_mean" else token_mean, "token_mean": token_mean,
            "example_mean": example_mean, "nll_sum": nll_sum, "n_tokens": n_tokens, "n_examples": len(counted),
            "n_empty": len(totals) - len(counted)}


def record_problems(loss_eval: dict[str, Any]) -> list[str]:
    """Why a loss_eval record breaks the contract's consistency rules ([] when it keeps them)."""
    aggregation = loss_eval.get("aggregation")
    if aggregation not in AGGREGATIONS:
        return [f"aggregation {aggregation!r} is not one of {AGGREGATIONS}"]
    entries = []
    for arm, entry in (loss_eval.get("arms") or {}).items():
        entries.append((arm, entry))
        entries += [(f"{arm} run {label}", run) for label, run in (entry.get("runs") or {}).items()]
    problems, shapes = [], {}
    for name, entry in entries:
        if entry.get("aggregation") != aggregation:
            problems.append(f"{name}: aggregation {entry.get('aggregation')!r} differs from {aggregation!r}")
        numbers = [entry.get(key) for key in ("value", "nll_sum", "n_tokens")]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers) \
                or entry["n_tokens"] <= 0:
            problems.append(f"{name}: value, nll_sum and n_tokens must be finite with n_tokens > 0")
            continue
        expected = entry["nll_sum"] / entry["n_tokens"] if aggregation == "token_mean" else entry.get("example_mean")
        if not isinstance(expected, (int, float)) or isinstance(expected, bool) or not math.isclose(
                entry["value"], expected, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            problems.append(f"{name}: value {entry['value']!r} does not recompute from its totals ({expected!r})")
        shapes[name] = (entry["n_tokens"], entry.get("n_examples"))
    if len(set(shapes.values())) > 1:
        problems.append(f"arms were not scored on the same tokens and examples: {shapes}")
    if not shapes:
        problems.append("no arm has a loss_eval entry")
    return problems
