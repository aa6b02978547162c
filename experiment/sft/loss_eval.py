"""Held-out loss evaluation (LOSS-1, LOSS-2).

Score every arm with forward(..., "cross_entropy") on the same examples and hand each output with
each example's loss weights to `LossEval.add_output`:

- a token counts iff its weight is > 0 (weights are only a mask: the NLL of a counted token is
  -logprob, never weight * -logprob);
- totals are kept per example (nll_sum, n_tokens), so how examples are batched cannot change
  the result; an example with no counted token is counted in `n_empty` and left out of both means;
- token_mean = sum of NLL over counted tokens / number of counted tokens;
  example_mean = mean over non-empty examples of (example NLL sum / example token count).

Never average per-batch `loss:mean` and never normalise weights per example to get a token mean.
`report(aggregation, {arm: evaluator})` gives the RESULT's `loss_eval`; `check(loss_eval)` applies
the exchange's consistency rules to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

AGGREGATIONS = ("token_mean", "example_mean")
REL_TOL = 1e-6
ABS_TOL = 1e-12


class LossEvalError(ValueError):
    """Inputs that do not fit the LOSS-1 and LOSS-2 rules."""


@dataclass
class ExampleTotal:
    nll_sum: float
    n_tokens: int


@dataclass
class LossEval:
    aggregation: str
    examples: list[ExampleTotal] = field(default_factory=list)
    example_ids: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.aggregation not in AGGREGATIONS:
            raise LossEvalError(f"aggregation must be one of {AGGREGATIONS} (got {self.aggregation!r})")

    def add_output(self, output: Any, weights_per_example: Sequence[Sequence[float]],
                   example_ids: Sequence[str] | None = None) -> None:
        """Add one forward(..., "cross_entropy") output: one entry of loss_fn_outputs per example."""
        outputs = output.loss_fn_outputs if hasattr(output, "loss_fn_outputs") else output
        if len(outputs) != len(weights_per_example):
            raise LossEvalError(f"{len(outputs)} outputs but {len(weights_per_example)} weight arrays")
        if example_ids is not None and len(example_ids) != len(outputs):
            raise LossEvalError(f"{len(outputs)} outputs but {len(example_ids)} example ids")
        for index, (datum_output, weights) in enumerate(zip(outputs, weights_per_example)):
            logprobs = _array(datum_output["logprobs"])
            weights = _array(weights)
            if logprobs.shape != weights.shape:
                raise LossEvalError(f"example {index}: {logprobs.size} logprobs but {weights.size} weights")
            counted = weights > 0
            nll = -logprobs[counted].astype(np.float64)
            if not np.all(np.isfinite(nll)):
                raise LossEvalError(f"example {index}: non-finite logprob on a counted token")
            self.examples.append(ExampleTotal(float(nll.sum()), int(counted.sum())))
            if example_ids is not None:
                self.example_ids.append(str(example_ids[index]))

    def summary(self) -> dict[str, Any]:
        return {"aggregation": self.aggregation, **summarize(self.examples, self.aggregation)}


def summarize(examples: Sequence[ExampleTotal], aggregation: str) -> dict[str, Any]:
    """The held-out NLL of per-example totals (the run's `LossEval.summary`, and the grader's recomputation
    from retained prediction rows): `value` is the example_mean for example_mean, else the token_mean; an
    example with no counted token is counted in `n_empty` and left out of both means (nan when none is left)."""
    non_empty = [e for e in examples if e.n_tokens > 0]
    nll_sum = math.fsum(e.nll_sum for e in non_empty)
    n_tokens = sum(e.n_tokens for e in non_empty)
    token_mean = nll_sum / n_tokens if n_tokens else math.nan
    example_mean = math.fsum(e.nll_sum / e.n_tokens for e in non_empty) / len(non_empty) if non_empty else math.nan
    return {
        "value": example_mean if aggregation == "example_mean" else token_mean,
        "token_mean": token_mean,
        "example_mean": example_mean,
        "nll_sum": nll_sum,
        "n_tokens": n_tokens,
        "n_examples": len(non_empty),
        "n_empty": len(examples) - len(non_empty),
    }


def _array(value: Any) -> np.ndarray:
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    elif hasattr(value, "tolist") and not isinstance(value, np.ndarray):
        value = value.tolist()
    return np.asarray(value, dtype=np.float64).reshape(-1)


def report(aggregation: str, evaluators: dict[str, LossEval]) -> dict[str, Any]:
    """The RESULT `loss_eval` record: one entry per arm, all in the same aggregation."""
    arms = {}
    for arm, evaluator in evaluators.items():
        if evaluator.aggregation != aggregation:
            raise LossEvalError(f"arm {arm!r} was scored with {evaluator.aggregation!r}, not {aggregation!r}")
        arms[arm] = evaluator.summary()
    return {"aggregation": aggregation, "arms": arms}


def report_by_arm(aggregation: str, runs: dict[str, dict[str, LossEval]], selected: dict[str, str]) -> dict[str, Any]:
    """`loss_eval` keyed by arm when an arm is several training runs (an LR grid): each arm's entry
    is its selected run's record (the plan's selection rule, fixed before training) and every run
    of the arm stays beneath it under `runs`, keyed by the run's label (its learning rate)."""
    arms = {}
    for arm, by_label in runs.items():
        per_run = report(aggregation, by_label)["arms"]
        entry: dict[str, Any] = {}
        if arm in selected:
            entry.update(per_run[selected[arm]])
            entry["selected_run"] = selected[arm]
        entry["runs"] = per_run
        arms[arm] = entry
    return {"aggregation": aggregation, "arms": arms}


def check(loss_eval: dict[str, Any]) -> list[str]:
    """Problems with a loss_eval record under LOSS-1 and LOSS-2 (empty list: consistent).

    Per-run records beneath an arm (`arms.<arm>.runs.<label>`) obey the same rules and must be on
    the same tokens and examples as every arm."""
    problems = []
    aggregation = loss_eval.get("aggregation")
    if aggregation not in AGGREGATIONS:
        return [f"aggregation {aggregation!r} is not one of {AGGREGATIONS}"]
    shapes = {}
    entries = []
    for arm, entry in (loss_eval.get("arms") or {}).items():
        entries.append((arm, entry))
        entries += [(f"{arm} run {label}", run) for label, run in (entry.get("runs") or {}).items()]
    for arm, entry in entries:
        if entry.get("aggregation") != aggregation:
            problems.append(f"{arm}: aggregation {entry.get('aggregation')!r} differs from {aggregation!r}")
        values = [entry.get(k) for k in ("value", "nll_sum", "n_tokens")]
        if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values) or entry["n_tokens"] <= 0:
            problems.append(f"{arm}: value, nll_sum and n_tokens must be finite with n_tokens > 0")
            continue
        expected = entry["nll_sum"] / entry["n_tokens"] if aggregation == "token_mean" else entry.get("example_mean")
        if expected is None or not math.isclose(entry["value"], expected, rel_tol=REL_TOL, abs_tol=ABS_TOL):
            problems.append(f"{arm}: value {entry['value']!r} does not recompute from its totals ({expected!r})")
        shapes[arm] = (entry["n_tokens"], entry.get("n_examples"))
    if len(set(shapes.values())) > 1:
        problems.append(f"arms were not scored on the same tokens and examples: {shapes}")
    if not shapes:
        problems.append("no arm has a loss_eval entry")
    return problems
