"""Adaptive selection (DEC-13): choose on selection items, confirm on the other items.

`experiment_features.adaptive_selection: true` in the RL paired family: several arms hold the role the
primary criterion weights (the candidates, e.g. two treatment configurations); which of them goes forward
is chosen on *selection items* only, and the decision is computed on *confirmation items* only, disjoint
from them.

- The split is a pure function of the evaluator's item ids (`split_items`): items ordered by
  sha256("adaptive-selection:" + id), the first floor(n * SELECTION_FRACTION) are selection items, the
  rest confirmation items; both lists and their sha256 (of the JSON list) are recorded. It depends on
  no score, so anyone recomputes it from `evaluation.evaluators[id].items.ids`.
- The choice (`choose`): for each candidate, the primary criterion's effect on the selection items (the
  role's weight given to that candidate, every other weight as mapped; values averaged over the
  scheduled seeds); the largest effect goes forward, ties to the first candidate in name order.
- `selection_record` is what `decision.selection` holds, with `frozen_before_confirmation: true`; it is
  retained as its own evidence file (SELECTION_FILE_NAME) before the observations file exists, and
  `record_sha256` is the sha256 of the record's canonical JSON (every key but itself).
- `selection_problems` re-checks a recorded selection against a recomputation (the grader and the
  project's validator both call it).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from experiment.stats.decision import DecisionError, Observation, paired_hoeffding

SELECTION_FILE_NAME = "adaptive-selection.json"
SELECTION_FRACTION = 0.5
SPLIT_SALT = "adaptive-selection:"
SPLIT_RULE = (f"items ordered by sha256('{SPLIT_SALT}' + item_id); the first floor(n * {SELECTION_FRACTION:g}) are "
              "selection items, the rest confirmation items")
CHOICE_RULE = ("the candidate with the largest effect of the primary criterion on the selection items (values "
               "averaged over the scheduled seeds; ties: the first candidate by name)")


@dataclass(frozen=True)
class ItemSplit:
    selection_ids: list[str]
    confirmation_ids: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"rule": SPLIT_RULE, "fraction": SELECTION_FRACTION,
                "selection_ids": list(self.selection_ids), "confirmation_ids": list(self.confirmation_ids),
                "selection_ids_sha256": ids_sha256(self.selection_ids),
                "confirmation_ids_sha256": ids_sha256(self.confirmation_ids)}


def ids_sha256(ids: list[str]) -> str:
    return hashlib.sha256(json.dumps(list(ids)).encode()).hexdigest()


def split_sizes(n_items: int) -> tuple[int, int]:
    """(selection, confirmation) item counts for n evaluated items."""
    selection = math.floor(n_items * SELECTION_FRACTION)
    return selection, n_items - selection


def split_items(item_ids: list[str]) -> ItemSplit:
    """The deterministic split of the evaluator's items (see the module docstring); each order kept as ranked."""
    if len(set(item_ids)) != len(item_ids):
        raise DecisionError("adaptive selection: the evaluator's item ids repeat")
    ranked = sorted(item_ids, key=lambda item: (hashlib.sha256((SPLIT_SALT + item).encode()).hexdigest(), item))
    n_selection, n_confirmation = split_sizes(len(ranked))
    if n_selection < 1 or n_confirmation < 1:
        raise DecisionError(f"adaptive selection needs at least 2 evaluated items (got {len(ranked)})")
    return ItemSplit(sorted(ranked[:n_selection]), sorted(ranked[n_selection:]))


def choose(observations: list[Observation], criterion: dict[str, Any], role: str, candidates: list[str],
           role_to_arm: dict[str, str], seeds: list[int], selection_ids: list[str]) -> tuple[str, dict[str, float]]:
    """(the chosen candidate, each candidate's effect on the selection items); observations of other items
    are dropped first, so nothing outside the selection items can sway the choice."""
    on_selection = [o for o in observations if o.item_id in set(selection_ids)]
    effects: dict[str, float] = {}
    for candidate in sorted(candidates):
        result = paired_hoeffding(on_selection, [criterion], 0.5, role_to_arm={**role_to_arm, role: candidate},
                                  seeds=seeds, item_ids=list(selection_ids))
        effects[candidate] = result.criteria[0].effect
    best = max(effects.values())
    return next(c for c in sorted(candidates) if effects[c] == best), effects


def selection_record(split: ItemSplit, evaluator_id: str, role: str, candidates: list[str], criterion_id: str,
                     selected: str, effects: dict[str, float]) -> dict[str, Any]:
    """`decision.selection` (and the frozen evidence file's content): what was chosen, on which items, how."""
    record = {
        "version": 1,
        "frozen_before_confirmation": True,
        "role": role,
        "candidates": sorted(candidates),
        "criterion": criterion_id,
        "rule": CHOICE_RULE,
        "effects": {c: effects[c] for c in sorted(effects)},
        "selected": selected,
        "evaluator_id": evaluator_id,
        "split": split.as_dict(),
    }
    return {**record, "record_sha256": record_sha256(record)}


def record_sha256(record: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a selection record without its own `record_sha256` (or file ref)."""
    body = {key: value for key, value in record.items() if key not in ("record_sha256", "file")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def selection_file_bytes(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, sort_keys=True, indent=1) + "\n").encode()


def _close(a: Any, b: float) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def selection_problems(recorded: Any, item_ids: list[str] | None, expected: dict[str, Any] | None) -> list[str]:
    """What is wrong with a recorded `decision.selection`: the frozen flag, the split (recomputed from the
    evaluator's `item_ids`; disjoint, covering, hashed), the record's own digest, and the choice against
    `expected` (a `selection_record` recomputed from the retained predictions; None when it cannot be)."""
    if not isinstance(recorded, dict):
        return ["adaptive selection needs decision.selection (the record has none)"]
    problems = []
    if recorded.get("frozen_before_confirmation") is not True:
        problems.append("decision.selection.frozen_before_confirmation is not true")
    split = recorded.get("split") if isinstance(recorded.get("split"), dict) else {}
    selection, confirmation = split.get("selection_ids"), split.get("confirmation_ids")
    if not (isinstance(selection, list) and isinstance(confirmation, list)):
        return problems + ["decision.selection.split lacks selection_ids or confirmation_ids"]
    overlap = sorted(set(map(str, selection)) & set(map(str, confirmation)))
    if overlap:
        problems.append(f"selection and confirmation items overlap ({len(overlap)}, first {overlap[0]!r})")
    for key, ids in (("selection_ids_sha256", selection), ("confirmation_ids_sha256", confirmation)):
        if split.get(key) != ids_sha256(ids):
            problems.append(f"decision.selection.split.{key} is not the sha256 of its id list")
    if item_ids is not None:
        try:
            mine = split_items(item_ids)
        except DecisionError as err:
            return problems + [str(err)]
        if list(selection) != mine.selection_ids or list(confirmation) != mine.confirmation_ids:
            problems.append("the split is not the one recomputed from the evaluator's items (" + SPLIT_RULE + ")")
    if recorded.get("record_sha256") != record_sha256(recorded):
        problems.append("decision.selection.record_sha256 is not the sha256 of the selection record")
    if expected is not None:
        if recorded.get("selected") != expected["selected"]:
            problems.append(f"selected {recorded.get('selected')!r} is not the recomputed choice {expected['selected']!r}")
        effects = recorded.get("effects") if isinstance(recorded.get("effects"), dict) else {}
        if set(effects) != set(expected["effects"]) or not all(_close(effects[c], v)
                                                                for c, v in expected["effects"].items()):
            problems.append("the candidates' selection effects are not the ones recomputed from the selection items")
        for key in ("role", "candidates", "criterion", "rule", "evaluator_id"):
            if recorded.get(key) != expected[key]:
                problems.append(f"decision.selection.{key} {recorded.get(key)!r} is not {expected[key]!r}")
    return problems


def confirmation_only_problems(observations: list[Observation], recorded: Any) -> list[str]:
    """Observations must come from confirmation items only (never a selection item, never an unlisted one)."""
    split = recorded.get("split") if isinstance(recorded, dict) and isinstance(recorded.get("split"), dict) else {}
    selection = set(map(str, split.get("selection_ids") or []))
    confirmation = set(map(str, split.get("confirmation_ids") or []))
    on_selection = sorted({o.item_id for o in observations if o.item_id in selection})
    if on_selection:
        return [f"{len(on_selection)} observed item(s) are selection items (first {on_selection[0]!r}); observations "
                "must use confirmation items only"]
    outside = sorted({o.item_id for o in observations if o.item_id not in confirmation})
    if outside:
        return [f"{len(outside)} observed item(s) are not confirmation items (first {outside[0]!r})"]
    return []
