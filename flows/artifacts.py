"""What a run shows in the Prefect UI: artifacts built from the result store (the source of truth).

- a markdown artifact with the RESULT summary and the decision table,
- table artifacts for the gates (verdict, measured values, duration) and per-arm metrics,
- progress artifacts for training and evaluation, updated at most every few seconds,
- the run's pictures (PNG in <run_dir>/plots/) as image artifacts and links to its files.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from prefect.artifacts import (
    create_image_artifact,
    create_link_artifact,
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from experiment.plots import write_run_pictures
from experiment.report import arm_metric_rows, gate_table_rows, result_markdown, run_file_links
from experiment.store import RunStore

PROGRESS_MIN_INTERVAL_S = 2.0


def progress_reporter() -> Callable[[str, int, int], None]:
    """A callback for gates: (key, done, total) -> a throttled Prefect progress artifact per key."""
    artifacts: dict[str, tuple[object, float]] = {}

    def report(key: str, done: int, total: int) -> None:
        percent = 100.0 * done / total if total else 100.0
        now = time.monotonic()
        if key not in artifacts:
            artifact_id = create_progress_artifact(percent, key=key, description=f"{key}: {done}/{total}")
            artifacts[key] = (artifact_id, now)
            return
        artifact_id, last = artifacts[key]
        if done == total or now - last >= PROGRESS_MIN_INTERVAL_S:
            update_progress_artifact(artifact_id, percent, description=f"{key}: {done}/{total}")
            artifacts[key] = (artifact_id, now)

    return report


def publish_run_artifacts(store: RunStore, plan_dict: dict) -> list[Path]:
    """Summary, tables, pictures and file links of a finished (or stopped) run; returns the PNGs."""
    result = store.read_result()
    create_markdown_artifact(result_markdown(result, plan_dict), key="run-result",
                             description=f"RESULT of {store.run_id}")
    gates = store.read_table("gates")
    for row in gates:
        row["reasons"] = json.loads(row["reasons"]) if isinstance(row.get("reasons"), str) else row.get("reasons")
    if gates:
        create_table_artifact(gate_table_rows(gates), key="run-gates", description="gate verdicts")
    arm_rows = arm_metric_rows(result)
    if arm_rows:
        create_table_artifact(arm_rows, key="run-arm-metrics", description="per-arm metrics")
    pictures = write_run_pictures(store.run_dir)
    for picture in pictures:
        create_image_artifact(picture.resolve().as_uri(), key=f"plot-{picture.stem}", description=picture.name)
    for key, path, description in run_file_links(store.run_dir):
        create_link_artifact(path.as_uri(), link_text=path.name, key=key, description=description)
    return pictures
