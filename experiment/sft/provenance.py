"""An SFT arm's initialization provenance (REST-1..REST-11): one entry per training run under the arm's `runs`
(each run's client is created and checked like an arm), the arm restating its runs' restores in plan order,
restore_count their sum (TRACE-3).

A run's restores after its creation are recorded in its own entry and restated by its arm (`record_run_restore`):

- checkpoint_restore's designed restore: the run continues at its midpoint step on a client restored from its own
  state saved there, with the optimizer state;
- a restart: a resumed sweep (or a retried run) starts an unfinished run over from the initialization state on a
  new client. The run's record then describes the attempt that trains it: the restarted attempt's restores replace
  the superseded attempt's, which stay in the entry under `superseded_attempts` (kept, not counted). A run resumed
  after a kill therefore records the restores a run that was never stopped records (issue 46: a resumed TriMuon
  sweep counted the crashed attempt's restores again, restore_count 6 where a fresh run has 3, and its arm's
  restores were no longer its runs' restores, TRACE-3). The attempt's number (`run_attempt`: 1, plus one per
  superseded attempt) marks every step row and training_step event it logs, so the superseded attempt's steps stay
  in the log, marked, and the run's last attempt holds every step once (EVID-11).
"""

from __future__ import annotations

from typing import Any

from experiment.rl import restoration as r
from experiment.run.store import utc_now
from experiment.sft.runs import SFTRun

SUPERSEDED_REASON = ("the run started over from the initialization state on a new client (a resumed sweep or a "
                     "retried run); these restores are of the superseded attempt's client, whose training was "
                     "discarded")


def provenance_by_arm(runs: list[SFTRun], entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The initialization_provenance record (REST-1), one entry per named arm. An arm with an LR grid is several
    clients, each created from the same initialization state: the arm's entry is its first run's, `runs` keeps
    every run's own entry (its creation check carries that run's learning rate), and the arm restates its runs'
    restores (`restate_runs`)."""
    arms: dict[str, Any] = {}
    for run in runs:
        entry = entries[run.name]
        if run.arm not in arms:
            arms[run.arm] = {**entry, "runs": {}, "optimizer_checks": [entry["optimizer_checks"][0]]}
        arms[run.arm]["runs"][run.label] = entry
    for arm, entry in arms.items():
        restate_runs(entry, run_names(runs, arm))
    return {"version": 1, "arms": arms}


def run_names(runs: list[SFTRun], arm: str) -> dict[str, str]:
    """label -> name of the arm's runs, in plan order."""
    return {run.label: run.name for run in runs if run.arm == arm}


def restate_runs(arm: dict[str, Any], names: dict[str, str]) -> None:
    """The arm's restores, in its runs' plan order, each run's restores in its own order, numbered 1..restore_count,
    each with the run's optimizer check after it (renumbered alike); the arm's creation check first."""
    restores: list[dict[str, Any]] = []
    checks = [check for check in arm.get("optimizer_checks") or [] if check.get("after_restore") == 0][:1]
    for label, name in names.items():
        run = arm["runs"].get(label)
        if run is None:
            continue
        after = {check.get("after_restore"): check for check in run.get("optimizer_checks") or []}
        for restore in run.get("restores") or []:
            number = len(restores) + 1
            restores.append({**restore, "restore": number, "run": name})
            checks.append({**after[restore["restore"]], "after_restore": number, "run": name})
    arm.update(restore_count=len(restores), restores=restores, optimizer_checks=checks)


def run_attempt(store: Any, run: SFTRun) -> int:
    """The number of the attempt now training `run`: 1, plus one per superseded attempt its entry keeps."""
    entry = store.read_result()["initialization_provenance"]["arms"][run.arm]["runs"][run.label]
    return 1 + len(entry.get("superseded_attempts") or [])


def record_run_restore(store: Any, run: SFTRun, names: dict[str, str], info: Any, restored_from: str,
                       with_optimizer: bool, restart: bool = False) -> dict[str, Any]:
    """Append one restore of `run`'s client to its entry (its optimizer check read from the service's response, a
    retained evidence file) and restate its arm, as ONE read-modify-write under the store's lock. `restart`: the
    run starts over on a new client, its earlier restores moved to `superseded_attempts`. Returns the check."""
    done: dict[str, Any] = {}
    at = utc_now()

    def edit(provenance: Any) -> dict[str, Any]:
        arm = provenance["arms"][run.arm]
        entry = arm["runs"][run.label]
        restores, checks = list(entry.get("restores") or []), list(entry.get("optimizer_checks") or [])
        if restart and restores:
            superseded = {"restores": restores, "optimizer_checks": [c for c in checks if c.get("after_restore")],
                          "reason": SUPERSEDED_REASON}
            entry["superseded_attempts"] = list(entry.get("superseded_attempts") or []) + [superseded]
            restores, checks = [], [c for c in checks if not c.get("after_restore")]
        number = len(restores) + 1
        loads = number + sum(len(a["restores"]) for a in entry.get("superseded_attempts") or [])
        restore, check = r.new_restore(store, f"restoration-{run.slug}-load-{loads}.json", number, run.arm, info,
                                       run.requested, restored_from, with_optimizer, at, run=run.name)
        entry.update(restore_count=number, restores=restores + [restore], optimizer_checks=checks + [check])
        restate_runs(arm, names)
        done["check"] = check
        return provenance

    store.edit_result("initialization_provenance", edit)
    return done["check"]
