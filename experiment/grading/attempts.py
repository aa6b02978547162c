"""A resumed (or retried) SFT training run's superseded attempts in its step log (EVID-11).

A resumed sweep starts an unfinished training run over from the initialization state on a new client (a retried run
does the same); the stopped attempt's steps stay in sft-steps.jsonl and events.jsonl, nothing deleted, each row and
`training_step` event marked with the `attempt` that logged it (1, then one more per superseded attempt). The run's
steps are its last attempt's: those must hold every planned step once (EVID-11), and the run's median optimizer step
is theirs (the decision's recomputation, DEC-3), as the run's metrics are. The rows of an earlier attempt are set aside
only where the run's entry in the initialization provenance keeps that many superseded attempts (`runs.<label>.
superseded_attempts`, the restores of their clients), each earlier attempt logs a step at most once, and (rows that
name their client) on a client one of those superseded restores made. Otherwise the run's rows are counted together,
as before (a step logged by two attempts the record does not account for is a step logged twice), and the marks the
record does not account for are named.
"""

from __future__ import annotations

from typing import Any

from experiment.grading.common import GradeContext, as_dict, as_list, is_integer, run_label


def last_attempts(ctx: GradeContext, logged: list[dict[str, Any]],
                  key: str = "run") -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of `logged` (sft-steps.jsonl rows or training_step events) that are their runs' own: each run's last
    attempt's where the record accounts for the earlier attempts (module docstring), else every row; and the runs
    whose rows carry attempt marks the record does not account for (a mark is then unverified evidence)."""
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in logged:
        by_run.setdefault(str(row.get(key)), []).append(row)
    superseded = _superseded_attempts(ctx)
    kept, unaccounted = [], []
    for run, rows in by_run.items():
        marks = [row.get("attempt", 1) for row in rows]
        last = max(marks) if all(is_integer(m) and m >= 1 for m in marks) else None
        if last is None or (last > 1 and not _accounted(rows, last, superseded.get(run))):
            unaccounted.append(f"{run} (attempt marks {', '.join(sorted(set(map(str, marks))))}, "
                               f"{len(superseded.get(run) or [])} superseded attempt(s) kept)")
        elif last > 1:
            rows = [row for row in rows if row.get("attempt", 1) == last]
        kept += rows
    return kept, unaccounted


def _accounted(rows: list[dict[str, Any]], last: int, attempts: list[Any] | None) -> bool:
    """The run's entry keeps the `last - 1` attempts before its last one (no more: a further superseded attempt would
    make the logged last attempt a superseded one, its rows not the run's), and each earlier attempt's rows are its own:
    every step once, on a client one of the superseded attempts' restores made (where the row names its client)."""
    if attempts is None or len(attempts) != last - 1:
        return False
    clients = {as_dict(restore).get("client") for attempt in attempts
               for restore in as_list(as_dict(attempt).get("restores"))}
    for number in range(1, last):
        steps = [row.get("step") for row in rows if row.get("attempt", 1) == number]
        if len(steps) != len(set(map(str, steps))):
            return False
        if any("model_id" in row and row["model_id"] not in clients for row in rows if row.get("attempt", 1) == number):
            return False
    return True


def _superseded_attempts(ctx: GradeContext) -> dict[str, list[Any]]:
    """Planned run name -> the superseded attempts its provenance entry keeps (a run without any is absent)."""
    arms = as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms"))
    out: dict[str, list[Any]] = {}
    if not arms:
        return out
    for run in getattr(ctx.plan, "training_runs", None) or []:
        entry = as_dict(as_dict(as_dict(arms.get(run.arm)).get("runs")).get(run_label(run)))
        if isinstance(entry.get("superseded_attempts"), list):
            out[run.name] = entry["superseded_attempts"]
    return out
