"""What the restoration rules (experiment.grading.restoration) read from the restoration evidence: every
evidence_ref a provenance entry names, the retained create-save-restore update check (REST-10: its keys, its
tolerance, its file name, the step settings it compares) and the times restores happened. Helpers only: the
findings are restoration's."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from experiment.grading.common import as_dict, as_list, is_number


def evidence_refs(value: Any) -> set[str]:
    """Every evidence_ref named anywhere in a provenance entry."""
    if isinstance(value, dict):
        return set().union(*(({inner} if key == "evidence_ref" and isinstance(inner, str) else evidence_refs(inner))
                             for key, inner in value.items()))
    if isinstance(value, list):
        return set().union(*(evidence_refs(inner) for inner in value))
    return set()


RESTORE_METHODS = ("create_training_client_from_state", "create_training_client_from_state_with_optimizer", "load_state")
# Fixed before measuring (experiment.rl.restoration.RESTORE_UPDATE_ATOL): how closely a restored client must
# reproduce the uninterrupted client's second update.
REST10_ATOL = 1e-6
REST10_EVIDENCE = "restoration-update-check.json"
# What a create-save-restore check holds (experiment.rl.restoration.restore_update_check); `config_unverified` is
# the run's own summary (docs/ungraded-fields.md).
UPDATE_CHECK_KEYS = ("label", "checkpoint_uri", "restored_from", "steps_before_save", "optimizer_state_restored",
                     "clients", "restore", "batch_sha256", "update", "optimizer_check_after_restore",
                     "max_abs_difference", "atol", "problems", "output_sha256", "logprobs_after_second_step", "passed")
# The settings an optimizer step's params carry (tinker's AdamParams, the Muon families' params); a requested setting
# of the client's optimizer config that is none of them (a Muon polar_step) is not part of the step.
STEP_SETTINGS = ("learning_rate", "beta1", "beta2", "eps", "weight_decay", "grad_clip_norm")


def is_time(value: Any) -> bool:
    """An ISO 8601 date and time (when a restore happened)."""
    try:
        datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in str(value)


def update_checks(data: Any) -> dict[str, dict[str, Any]]:
    """label -> check of the retained REST-10 evidence (one check, or one per arm)."""
    data = as_dict(data)
    if "max_abs_difference" in data:
        return {str(data.get("label")): data}
    return {str(label): as_dict(check) for label, check in data.items()}


def max_difference(a: Any, b: Any) -> float | None:
    rows_a, rows_b = as_list(a), as_list(b)
    if not rows_a or len(rows_a) != len(rows_b):
        return None
    worst = 0.0
    for x, y in zip(rows_a, rows_b):
        x, y = as_list(x), as_list(y)
        if len(x) != len(y) or not all(is_number(v) for v in x + y):
            return None
        worst = max([worst] + [abs(float(u) - float(v)) for u, v in zip(x, y)])
    return worst
