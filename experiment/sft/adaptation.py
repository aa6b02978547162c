"""Paired batch order (ADAPT-1): adaptation manifests.

Each training run reports the ids of the batches its loop actually consumed, in order, with
`adaptation_batch_hash = sha256(json.dumps(adaptation_batch_ids))` (default separators). Runs of
one pair must report the same hash; the check runs before any verdict is set.
"""

from __future__ import annotations

from typing import Any

from experiment.contract.result import adaptation_batch_hash  # noqa: F401  (one home; re-exported)


def adaptation_manifest(arm: str, pair: str, consumed_batch_ids: list[str], warmup_batches: int = 0) -> dict[str, Any]:
    ids = list(consumed_batch_ids)
    return {
        "arm": arm,
        "pair": pair,
        "warmup_batches": int(warmup_batches),
        "adaptation_batch_ids": ids,
        "adaptation_batch_hash": adaptation_batch_hash(ids),
    }


def pair_mismatches(manifests: list[dict[str, Any]]) -> list[str]:
    """One line per pair whose arms consumed different batches (empty: every pair matches)."""
    by_pair: dict[str, dict[str, str]] = {}
    for manifest in manifests:
        by_pair.setdefault(manifest["pair"], {})[manifest["arm"]] = adaptation_batch_hash(manifest["adaptation_batch_ids"])
    return [
        f"pair {pair}: arms consumed different batches ({', '.join(f'{arm} {h[:12]}' for arm, h in sorted(hashes.items()))})"
        for pair, hashes in by_pair.items()
        if len(set(hashes.values())) > 1
    ]
