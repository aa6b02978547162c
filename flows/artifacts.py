"""What a run shows in the Prefect UI: artifacts built from the result store (the source of truth).

Every artifact is created inside the run (flow or task run context), keyed per run as
`<what>-<run>` (<run> = the run id's time stamp and hex tail, unique per run; the UI shows keys as
card titles, so what comes first), and readable in a browser with no access to the run's disk:

- `summary-<run>`: RESULT's verdict, effect against the margin in words, grades, the decision table
  and the run's pictures embedded as data URIs (no file:// address anywhere);
- `gates-<run>`, `arms-<run>`: gate verdicts and per-arm metrics as tables, and
  `evidence-<run>`: one index of every file of the run (relative paths, kinds, sha256), all three
  from the `publish-records` task run, so that the summary is alone, and first, on the flow run;
- `training-<arm>-<run>`, `evaluation-<arm>-<run>`: progress, created by each arm's own task run
  and updated at most every few seconds. The same callback prints a console line per step or chunk.
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Callable

from prefect import get_run_logger, task
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.exceptions import MissingContextError
from prefect.utilities.annotations import quote

from experiment.report.summary import arm_metric_rows, artifact_key, evidence_index_markdown, gate_table_rows, result_markdown
from experiment.run.store import RunStore
from experiment.contract.run_layout import GATES_TABLE

PROGRESS_MIN_INTERVAL_S = 2.0
RUN_ID_TAIL = 22  # "<yyyymmddTHHMMSS>-<6 hex>" of a run id


def run_key(run_id: str) -> str:
    """The per-run suffix of artifact keys (lowercase letters, digits, dashes)."""
    return artifact_key(run_id[-RUN_ID_TAIL:])


def keyed(what: str, run_id: str) -> str:
    return f"{artifact_key(what)}-{run_key(run_id)}"


def _logger():
    try:
        return get_run_logger()
    except MissingContextError:  # work outside a run (a plain thread in a test): still on the console
        return logging.getLogger("flows.progress")


CONSOLE_LINES = 10  # progress lines per loop on the console, whatever its length


def console_chunk(total: int) -> int:
    """Every how many steps or items a console line is printed: at most about CONSOLE_LINES per loop
    (a 10-step loop prints each step; a 48-item evaluation every 5th item and its last)."""
    return max(1, math.ceil(total / CONSOLE_LINES))


def progress_reporter(run_id: str) -> Callable[[str, int, int], None]:
    """A callback for gates: (key, done, total) -> a throttled progress artifact per key and a console line."""
    artifacts: dict[str, tuple[object, float]] = {}

    def report(key: str, done: int, total: int) -> None:
        percent = 100.0 * done / total if total else 100.0
        if done == total or done % console_chunk(total) == 0:
            _logger().info("%s: %d/%d (%.0f%%)", key, done, total, percent)
        now = time.monotonic()
        full_key = keyed(key, run_id)
        if full_key not in artifacts:
            artifact_id = create_progress_artifact(percent, key=full_key, description=f"{key}: {done}/{total}")
            artifacts[full_key] = (artifact_id, now)
            return
        artifact_id, last = artifacts[full_key]
        if done == total or now - last >= PROGRESS_MIN_INTERVAL_S:
            update_progress_artifact(artifact_id, percent, description=f"{key}: {done}/{total}")
            artifacts[full_key] = (artifact_id, now)

    return report


@task(name="publish-records", cache_policy=NO_CACHE)
def publish_records(store: RunStore) -> None:
    """Gate and arm tables and the evidence index, from a task run: the UI lists task-run artifacts in
    their own section, so the flow-run section holds the summary alone (its order is otherwise random)."""
    run_id = store.run_id
    result = store.read_result()
    gates = store.read_table(GATES_TABLE)
    if gates:
        create_table_artifact(gate_table_rows(gates), key=keyed("gates", run_id), description="gate verdicts")
    arm_rows = arm_metric_rows(result)
    if arm_rows:
        create_table_artifact(arm_rows, key=keyed("arms", run_id), description="per-arm metrics")
    create_markdown_artifact(evidence_index_markdown(store.run_dir), key=keyed("evidence", run_id),
                             description="every file of the run, once (paths relative to the run directory)")


def publish_run_artifacts(store: RunStore, plan_dict: dict) -> list[Path]:
    """The summary on the flow run (first on its Artifacts tab), the records from a task; returns the PNGs."""
    from experiment.report.plots import write_run_pictures  # matplotlib: imported when the run ends, not at start-up

    pictures = write_run_pictures(store.run_dir)
    publish_records(quote(store), return_state=True).result()
    create_markdown_artifact(result_markdown(store.read_result(), plan_dict, pictures), key=keyed("summary", store.run_id),
                             description=f"RESULT of {store.run_id}: verdict, effect, interval, margin, plots")
    return pictures
