"""Pure builders for what people read: Prefect artifacts and the CLI summary (no Prefect import).

- `result_markdown(result, plan)`: RESULT summary, status, verdict and confidence (or outcome
  reason), and the decision table per criterion (effect, lower, upper, margin, outcome).
- `gate_table_rows(gate_verdicts)`: one row per gate: gate, status, measured values, reasons, duration.
- `arm_metric_rows(result)`: one row per arm with its metrics from `metrics.arms`.
- `arm_score_points(result)`: evaluation scores with the item count, the input of `plots.arm_scores_png`.
- `run_file_links(run_dir)`: (artifact key, path, description) for the run directory's files.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

OUTCOME_BY_STATUS = {
    "passes": "passes (lower bound above the margin)",
    "fails": "fails (upper bound below the margin)",
    "unsettled": "unsettled (interval straddles the margin)",
}
MEASURED_TEXT_LIMIT = 120


def _fmt(value: Any) -> str:
    """Numbers to 4 significant digits, everything else as short text."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    if isinstance(value, (int, str)):
        return str(value)
    return json.dumps(value, sort_keys=True, default=str)


def _md_cell(value: Any) -> str:
    return _fmt(value).replace("|", "\\|").replace("\n", " ")


def _criterion_outcome(criterion: dict[str, Any]) -> str:
    status = criterion.get("status")
    if status in OUTCOME_BY_STATUS:
        return OUTCOME_BY_STATUS[status]
    lower, upper, margin = criterion.get("lower"), criterion.get("upper"), criterion.get("margin")
    if all(isinstance(v, (int, float)) for v in (lower, upper, margin)):
        return OUTCOME_BY_STATUS["passes" if lower > margin else "fails" if upper < margin else "unsettled"]
    return "unknown"


def result_markdown(result: dict[str, Any], plan: dict[str, Any] | None) -> str:
    """A markdown summary of RESULT with the decision table per criterion."""
    plan = plan or {}
    title = plan.get("spec_title") or "Experiment run"
    lines = [f"# {title}", "", f"**Status:** {result.get('status', 'unknown')}"]
    if "verdict" in result:
        verdict = f"**Verdict:** {result['verdict']}"
        if result.get("confidence"):
            verdict += f" ({result['confidence']} confidence)"
        lines.append(verdict)
    if result.get("outcome_reason"):
        lines.append(f"**Outcome reason:** {result['outcome_reason']}")
    if isinstance(result.get("effect"), (int, float)):
        effect = f"**Effect:** {_fmt(result['effect'])}"
        ci = result.get("ci")
        if isinstance(ci, list) and len(ci) == 2:
            effect += f" (interval [{_fmt(ci[0])}, {_fmt(ci[1])}]"
            effect += f", margin {_fmt(result['margin'])})" if "margin" in result else ")"
        lines.append(effect)
    lines += ["", result.get("summary") or "(no summary)"]
    if result.get("reasoning"):
        lines += ["", f"_Reasoning:_ {result['reasoning']}"]
    criteria = (result.get("decision") or {}).get("criteria") or []
    if criteria:
        lines += [
            "",
            "## Decision",
            "",
            "| criterion | effect | lower | upper | margin | outcome |",
            "|---|---|---|---|---|---|",
        ]
        for criterion in criteria:
            cells = [
                criterion.get("id"),
                criterion.get("effect"),
                criterion.get("lower"),
                criterion.get("upper"),
                criterion.get("margin"),
                _criterion_outcome(criterion),
            ]
            lines.append("| " + " | ".join(_md_cell(cell) for cell in cells) + " |")
        adjustment = result["decision"].get("adjustment")
        if adjustment and adjustment != "none":
            lines += ["", f"Intervals use the {adjustment} adjustment over {len(criteria)} criteria."]
    deviations = result.get("deviations") or []
    if deviations:
        lines += ["", "## Deviations", ""]
        lines += [
            f"- {d.get('field')}: {d.get('original')} -> {d.get('effective')} ({d.get('reason')})"
            for d in deviations
            if isinstance(d, dict)
        ]
    validation = result.get("validation")
    if isinstance(validation, dict) and validation.get("failed_checks"):
        lines += ["", f"**Validation failed:** {', '.join(validation['failed_checks'])}"]
    completed = result.get("completed_arms") or []
    lines += ["", f"Completed arms: {', '.join(completed) if completed else 'none'}"]
    return "\n".join(lines) + "\n"


def _decoded(value: Any, empty: Any) -> Any:
    """gates.parquet stores reasons/measured as JSON text; events store them as values."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return empty if value is None else value


def _measured_text(measured: Any) -> str:
    if not isinstance(measured, dict):
        return _fmt(measured)
    parts = [f"{key}={_fmt(value)}" for key, value in measured.items() if not isinstance(value, (dict, list))]
    nested = [key for key, value in measured.items() if isinstance(value, (dict, list))]
    if nested:
        parts.append(f"(+ {', '.join(nested)})")
    text = ", ".join(parts)
    return text if len(text) <= MEASURED_TEXT_LIMIT else text[: MEASURED_TEXT_LIMIT - 3] + "..."


def gate_table_rows(gate_verdicts: list[Any]) -> list[dict[str, Any]]:
    """Rows for a table artifact: gate, status, measured (short text), reasons, duration.

    Accepts GateVerdict objects, `gate` events or gates.parquet rows."""
    rows = []
    for verdict in gate_verdicts:
        data = verdict.to_dict() if hasattr(verdict, "to_dict") else dict(verdict)
        reasons = _decoded(data.get("reasons"), [])
        duration = data.get("duration_s")
        rows.append(
            {
                "gate": data.get("gate"),
                "status": data.get("status"),
                "measured": _measured_text(_decoded(data.get("measured"), {})),
                "reasons": "; ".join(map(str, reasons)) if isinstance(reasons, list) else str(reasons),
                "duration": f"{duration:.1f} s"
                if isinstance(duration, (int, float)) and math.isfinite(duration)
                else "",
            }
        )
    return rows


def arm_metric_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per arm: {"arm", "completed", <metric>: value, ...} (nested values as short text)."""
    arms = (result.get("metrics") or {}).get("arms") or {}
    completed = set(result.get("completed_arms") or [])
    rows = []
    for arm in sorted(arms):
        metrics = arms[arm] if isinstance(arms[arm], dict) else {"value": arms[arm]}
        row: dict[str, Any] = {"arm": arm, "completed": arm in completed}
        for key, value in metrics.items():
            row[key] = value if isinstance(value, (int, float, str, bool)) or value is None else _fmt(value)
        rows.append(row)
    return rows


def arm_score_points(result: dict[str, Any], metric: str = "accuracy") -> list[dict[str, Any]]:
    """[{"arm", "seed", "value", "n"}] for each evaluation score of `metric`; n = the evaluator's item count."""
    evaluation = result.get("evaluation") or {}
    evaluators = evaluation.get("evaluators") or {}
    points = []
    for score in evaluation.get("scores") or []:
        if score.get("metric") != metric:
            continue
        ids = ((evaluators.get(score.get("evaluator_id")) or {}).get("items") or {}).get("ids")
        points.append(
            {
                "arm": score.get("arm"),
                "seed": score.get("seed"),
                "value": score.get("value"),
                "n": len(ids) if isinstance(ids, list) else None,
            }
        )
    return points


def _artifact_key(text: str) -> str:
    """Prefect artifact keys: lowercase letters, digits and dashes."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def run_file_links(run_dir: str | Path) -> list[tuple[str, Path, str]]:
    """(artifact key, absolute path, description) for every readable file of a run directory."""
    run_dir = Path(run_dir).resolve()
    links: list[tuple[str, Path, str]] = []
    fixed = [
        ("result.json", "RESULT object"),
        ("events.jsonl", "gate and progress events, in order"),
        ("run.json", "run id, spec title and hash, start time"),
    ]
    for name, description in fixed:
        if (run_dir / name).is_file():
            links.append((_artifact_key(f"run-{name}"), run_dir / name, description))
    for path in sorted((run_dir / "tables").glob("*.parquet")):
        links.append((_artifact_key(f"table-{path.stem}"), path, f"table {path.stem}"))
    manifest_path = run_dir / "evidence" / "manifest.json"
    if manifest_path.is_file():
        links.append(("evidence-manifest", manifest_path, "evidence manifest (names, kinds, sha256)"))
        try:
            entries = json.loads(manifest_path.read_text()).get("files", [])
        except (json.JSONDecodeError, AttributeError):
            entries = []
        for entry in entries:
            path = run_dir / "evidence" / str(entry.get("name"))
            if path.is_file():
                links.append(
                    (_artifact_key(f"evidence-{entry['name']}"), path, f"evidence ({entry.get('kind', 'file')})")
                )
    for path in sorted(run_dir.rglob("*.png")):
        links.append((_artifact_key(f"picture-{path.stem}"), path, f"picture {path.stem}"))
    return links
