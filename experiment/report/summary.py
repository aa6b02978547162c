"""Pure builders for what people read: Prefect artifacts and the CLI summary (no Prefect import).

- `result_markdown(result, plan)`: RESULT summary, status, verdict and confidence (or outcome
  reason), and the decision table per criterion (effect, lower, upper, margin, outcome).
- `gate_table_rows(gate_verdicts)`: one row per gate: gate, status, measured values, reasons, duration.
- `arm_metric_rows(result)`: one row per arm with its metrics from `metrics.arms`.
- `arm_score_points(result)`: evaluation scores with the item count, the input of `plots.arm_scores_png`.
- `evidence_index_rows(run_dir)` / `evidence_index_markdown(run_dir)`: every file of a run, once.
- `gate_line`, `plan_lines`, `closing_lines`, `effect_line`: what the console prints.
"""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path
from typing import Any

from experiment.report.levels import level
from experiment.contract.run_layout import (EVENTS_FILE, EVIDENCE_DIR, RESULT_FILE, RUN_META, TABLE_SUFFIX, TABLES_DIR,
                                             evidence_path, manifest_path, plots_dir, result_path)

OUTCOME_BY_STATUS = {
    "passes": "shown (lower bound above the margin)",
    "fails": "ruled out (upper bound below the margin)",
    "unsettled": "not shown (interval straddles the margin)",
}
MEASURED_TEXT_LIMIT = 120
GATE_LINE_LIMIT = 110  # + Prefect's "HH:MM:SS.mmm | INFO    | Flow run 'name' - " prefix: ~160 columns
RESULT_MARKER = "RESULT in "
MINUS, ELLIPSIS, ARROW = "\u2212", "\u2026", " \u2192 "


def signed(value: float, digits: int = 3) -> str:
    """-0.1234 -> '−0.123' (a real minus sign), 0.05 -> '+0.050'."""
    text = f"{value:+.{digits}f}"
    return text.replace("-", MINUS)


def plain(value: float) -> str:
    """A margin as written (-0.03 -> '−0.03')."""
    return f"{value:g}".replace("-", MINUS)


def subtraction(criterion: dict[str, Any]) -> str:
    """What the effect subtracts, from the criterion's arm weights: 'gs1_kernel − grpo_gs8'."""
    weights = criterion.get("arm_weights") or criterion.get("weights") or {}
    terms = []
    for arm, weight in sorted(weights.items(), key=lambda item: -float(item[1])):
        size = abs(float(weight))
        name = arm if size == 1 else f"{size:g}\u00b7{arm}"
        if not terms:
            terms.append(name if weight > 0 else f"{MINUS}{name}")
        else:
            terms.append(f"{'+' if weight > 0 else MINUS} {name}")
    return " ".join(terms) or str(criterion.get("id", "effect"))


def claim_name(margin: float) -> str:
    if margin < 0:
        return "non-inferiority"
    if margin == 0:
        return "superiority"
    return f"an improvement above {plain(margin)}"


def effect_in_words(criterion: dict[str, Any]) -> str:
    """'non-inferiority not shown: lower bound −0.123 is below the margin −0.03' (one-sided rule)."""
    lower, upper, margin = (criterion.get(key) for key in ("lower", "upper", "margin"))
    if not all(isinstance(v, (int, float)) for v in (lower, upper, margin)):
        return "no interval"
    claim = claim_name(margin)
    if lower > margin:
        return f"{claim} shown: lower bound {signed(lower)} is above the margin {plain(margin)}"
    if upper < margin:
        return f"{claim} ruled out: upper bound {signed(upper)} is below the margin {plain(margin)}"
    return (f"{claim} not shown: lower bound {signed(lower)} is below the margin {plain(margin)} "
            f"(upper bound {signed(upper)} is above it, so it is not ruled out either)")


def effect_line(criterion: dict[str, Any]) -> str:
    """'gs1_kernel − grpo_gs8 = −0.046, interval [−0.123, +0.031]; non-inferiority not shown: ...'."""
    effect = criterion.get("effect")
    head = f"{subtraction(criterion)} = {signed(effect)}" if isinstance(effect, (int, float)) else subtraction(criterion)
    if isinstance(criterion.get("lower"), (int, float)) and isinstance(criterion.get("upper"), (int, float)):
        head += f", interval [{signed(criterion['lower'])}, {signed(criterion['upper'])}]"
    return f"{head}; {effect_in_words(criterion)}"


def grade_lines(result: dict[str, Any]) -> list[str]:
    """'category: grade' per category of RESULT.grade, when a grader wrote one (else nothing)."""
    grade = result.get("grade")
    if not grade:
        return []
    if not isinstance(grade, dict):
        return [_fmt(grade)]
    categories = grade.get("categories") if isinstance(grade.get("categories"), (dict, list)) else grade
    if isinstance(categories, list):
        categories = {str(c.get("category") or c.get("name") or i): c for i, c in enumerate(categories)
                      if isinstance(c, dict)}
    lines = []
    for category, value in categories.items():
        if isinstance(value, dict):
            value = value.get("grade", value.get("score", value.get("status", _fmt(value))))
        lines.append(f"{category}: {_fmt(value)}")
    return lines


def gate_line(verdict: Any, limit: int = GATE_LINE_LIMIT) -> str:
    """'gate <name>: <status> (<reasons>)' cut to about `limit` characters; details are in RESULT."""
    data = verdict.to_dict() if hasattr(verdict, "to_dict") else dict(verdict)
    reasons = "; ".join(map(str, _decoded(data.get("reasons"), [])))
    duration = data.get("duration_s")
    line = f"gate {data.get('gate')}: {data.get('status')}"
    if isinstance(duration, (int, float)) and duration >= 0.05:
        line += f" in {duration:.1f} s"
    if reasons:
        room = limit - len(line) - 3
        line += f" ({reasons if len(reasons) <= room else reasons[: max(0, room - 1)] + ELLIPSIS})"
    return line


def plan_lines(plan: dict[str, Any], reused: list[str] = (), projected_seconds: float | None = None) -> list[str]:
    """What the run is about to do: the gates to run, those skipped, and a time estimate."""
    gates = plan.get("gates") or []
    to_run = [g["name"] for g in gates if g.get("blocks") and g["name"] not in reused]
    skipped = [g["name"] for g in gates if not g.get("blocks")]
    lines = [f"gates to run ({len(to_run)}): {ARROW.join(to_run) or 'none'}"]
    if reused:
        lines.append(f"reused from the unfinished run: {', '.join(reused)}")
    if skipped:
        lines.append(f"not applicable: {', '.join(skipped)}")
    budget = (plan.get("budget") or {}).get("max_wall_minutes")
    budget_text = f"budget {float(budget):g} min" if budget else "no wall budget"
    if projected_seconds is not None:
        lines.append(f"time estimate: {_duration_text(projected_seconds)} (feasibility projection; {budget_text})")
    elif "feasibility_pilot" in to_run:
        lines.append(f"time estimate: measured by feasibility_pilot ({budget_text})")
    else:
        lines.append(f"time estimate: none measured ({budget_text})")
    return lines


def _duration_text(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def finished_message(run_id: str, result_path: Path, result: dict[str, Any]) -> str:
    """One line naming a finished run's outcome (the CLI and the flow answer a re-run with it)."""
    verdict = result.get("verdict") or "no verdict"
    return (f"run {run_id} of this spec already finished ({result.get('status')}, {verdict}); "
            f"returning its result {result_path} without contacting any service "
            "(--fresh starts a new replicate)")


def closing_lines(result: dict[str, Any], run_dir: str | Path, pictures: list[Path] | None = None) -> list[str]:
    """The console's last lines: verdict and confidence (a rehearsal's first line starts with REHEARSAL), the effect against the margin in plain words,
    grades per category when present, and where RESULT and the plots are."""
    run_dir = Path(run_dir)
    lines = []
    if result.get("verdict") is not None:
        verdict = f"verdict: {result['verdict']}"
        if result.get("confidence"):
            verdict += f" ({result['confidence']} confidence)"
        if result.get("outcome_reason"):
            verdict += f", {result['outcome_reason']}"
        lines.append(verdict)
    else:
        lines.append(f"no verdict: run {result.get('status', 'unknown')}"
                     + (f" ({result['outcome_reason']})" if result.get("outcome_reason") else ""))
    for criterion in (result.get("decision") or {}).get("criteria") or []:
        lines.append(f"effect {criterion.get('id')}: {effect_line(criterion)}")
    rehearsal = result.get("rehearsal")
    if isinstance(rehearsal, dict):  # the first line a reader sees says it is no result to submit
        lines[0] = f"REHEARSAL ({rehearsal.get('scale', 'standard')} scale, not a result to submit): {lines[0]}"
    grades = grade_lines(result)
    if grades:
        lines.append("grade: " + "; ".join(grades))
    lines.append(f"{RESULT_MARKER}{result_path(run_dir)}")
    if pictures is None:
        pictures = sorted(plots_dir(run_dir).glob("*.png"))
    if pictures:
        lines.append("plots: " + ", ".join(str(p) for p in pictures))
    return lines


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


def _selection_lines(selection: Any) -> list[str]:
    """Adaptive selection: what was chosen, between which candidates, on how many items (DEC-13)."""
    if not isinstance(selection, dict) or not isinstance(selection.get("split"), dict):
        return []
    split = selection["split"]
    effects = ", ".join(f"{_md_cell(arm)} {_fmt(effect)}" for arm, effect in (selection.get("effects") or {}).items())
    return ["", f"**Adaptive selection:** {_md_cell(selection.get('selected'))} chosen as "
                f"{_md_cell(selection.get('role'))} on {len(split.get('selection_ids') or [])} selection items "
                f"(effects {effects}), frozen before confirmation "
                f"({'yes' if selection.get('frozen_before_confirmation') is True else 'NO'}); the decision uses the "
                f"{len(split.get('confirmation_ids') or [])} confirmation items only."]


def _criterion_outcome(criterion: dict[str, Any]) -> str:
    status = criterion.get("status")
    if status in OUTCOME_BY_STATUS:
        return OUTCOME_BY_STATUS[status]
    lower, upper, margin = criterion.get("lower"), criterion.get("upper"), criterion.get("margin")
    if all(isinstance(v, (int, float)) for v in (lower, upper, margin)):
        return OUTCOME_BY_STATUS["passes" if lower > margin else "fails" if upper < margin else "unsettled"]
    return "unknown"


def result_markdown(result: dict[str, Any], plan: dict[str, Any] | None, pictures: list[Path] = ()) -> str:
    """A markdown summary of RESULT: verdict, effect against the margin in words, grades, the decision
    table per criterion, and the run's pictures embedded as data URIs (viewable with no file access).

    Long because: one page, built top to bottom in reading order; each block is a few appended lines.
    """
    plan = plan or {}
    title = plan.get("spec_title") or "Experiment run"
    lines = [f"# {title}", ""]
    rehearsal = result.get("rehearsal")
    if isinstance(rehearsal, dict):  # the first thing a reader sees, above the verdict and the pictures
        lines += [f"> **REHEARSAL ({_md_cell(rehearsal.get('scale', 'standard'))} scale): not a result to submit.** "
                  f"Tested instead: {_md_cell(result.get('tested_instead') or 'see deviations')}", ""]
    lines.append(f"**Status:** {result.get('status', 'unknown')}")
    if "verdict" in result:
        verdict = f"**Verdict:** {result['verdict']}"
        if result.get("confidence"):
            verdict += f" ({result['confidence']} confidence)"
        lines.append(verdict)
        if result["verdict"] is not None and not result.get("decision"):
            lines.append(f"**How it was decided:** {_md_cell(decided_without_decision_rule(result, plan))}")
    if result.get("outcome_reason"):
        lines.append(f"**Outcome reason:** {result['outcome_reason']}")
    if isinstance(result.get("effect"), (int, float)):
        effect = f"**Effect:** {_fmt(result['effect'])}"
        ci = result.get("ci")
        if isinstance(ci, list) and len(ci) == 2:
            effect += f" (interval [{_fmt(ci[0])}, {_fmt(ci[1])}]"
            effect += f", margin {_fmt(result['margin'])})" if "margin" in result else ")"
        lines.append(effect)
    for criterion in (result.get("decision") or {}).get("criteria") or []:
        lines.append(f"**{_md_cell(criterion.get('id'))}:** {_md_cell(effect_line(criterion))}")
    grades = grade_lines(result)
    if grades:
        lines.append("**Grade:** " + "; ".join(_md_cell(grade) for grade in grades))
    if isinstance(result.get("grade"), dict):
        lines += [f"**Grade level:** {_md_cell(line.strip())}" if i == 0 else f"- {_md_cell(line.strip())}"
                  for i, line in enumerate(level(result["grade"]).lines())]
    for picture in pictures:
        lines += ["", f"![{Path(picture).stem}]({png_data_uri(picture)})"]
    lines += ["", result.get("summary") or "(no summary)"]
    if result.get("reasoning"):
        lines += ["", f"_Reasoning:_ {result['reasoning']}"]
    criteria = (result.get("decision") or {}).get("criteria") or []
    if criteria:
        lines += [
            "",
            "## Decision",
            "",
            "| criterion | effect | lower | upper | margin | claim |",
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
        lines += _selection_lines(result["decision"].get("selection"))
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
    grade = result.get("grade")
    if isinstance(grade, dict) and isinstance(grade.get("categories"), dict):
        lines += ["", "## Grade", "", "| category | status |", "|---|---|"]
        lines += [f"| {name} | {_md_cell(entry.get('status'))} |" for name, entry in grade["categories"].items()
                  if isinstance(entry, dict)]
    completed = result.get("completed_arms") or []
    lines += ["", f"Completed arms: {', '.join(completed) if completed else 'none'}"]
    return "\n".join(lines) + "\n"


def decided_without_decision_rule(result: dict[str, Any], plan: dict[str, Any]) -> str:
    """Why a verdict stands beside no decision object (decision: not_applicable), and how it was reached.

    The exchange's spec has no decision_rule (TriMuon): the verdict comes from the recorded revision file's
    verdict_rule, each criterion's effect against its margin, a point estimate with no interval."""
    supplied = (plan.get("spec_revision") or {}).get("supplied") or []
    source = "the recorded revision file's verdict_rule" if "verdict_rule" in supplied else "the spec's verdict rule"
    effect, margin = result.get("effect"), result.get("margin")
    against = (f" (effect {_fmt(effect)} against margin {_fmt(margin)})"
               if isinstance(effect, (int, float)) and isinstance(margin, (int, float)) else "")
    return (f"the spec has no decision_rule, so there is no decision object and the decision category is "
            f"not_applicable; the verdict follows {source}: every criterion's effect at the best learning rate "
            f"against its margin{against}, a point estimate with no interval, hence weak confidence")


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


def artifact_key(text: str) -> str:
    """Prefect artifact keys: lowercase letters, digits and dashes."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def png_data_uri(path: str | Path) -> str:
    """A PNG as a data URI, so a page served over http shows it without reaching the run's disk."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def evidence_index_rows(run_dir: str | Path) -> list[dict[str, Any]]:
    """One row per file of a run directory, each once: RESULT, events, tables, evidence, pictures.

    Paths are relative to the run directory (never file:// addresses); evidence rows carry the
    manifest's kind and sha256, the others the file's size."""
    run_dir = Path(run_dir).resolve()
    rows: list[dict[str, Any]] = []
    seen: set[Path] = set()

    def add(path: Path, kind: str, sha256: str | None = None) -> None:
        if path in seen or not path.is_file():
            return
        seen.add(path)
        rows.append({"file": str(path.relative_to(run_dir)), "kind": kind, "bytes": path.stat().st_size,
                     "sha256": (sha256 or "")[:12]})

    for name, kind in ((RESULT_FILE, "RESULT"), (EVENTS_FILE, "events"), (RUN_META, "run")):
        add(run_dir / name, kind)
    for path in sorted((run_dir / TABLES_DIR).glob("*" + TABLE_SUFFIX)):
        add(path, "table")
    manifest = manifest_path(run_dir)
    try:
        entries = json.loads(manifest.read_text()).get("files", []) if manifest.is_file() else []
    except (json.JSONDecodeError, AttributeError):
        entries = []
    add(manifest, "manifest")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name"):
            add(evidence_path(run_dir, str(entry["name"])), str(entry.get("kind", "evidence")), entry.get("sha256"))
    for path in sorted((run_dir / EVIDENCE_DIR).glob("*")):
        add(path, "evidence")
    for path in sorted(run_dir.rglob("*.png")):
        add(path, "picture")
    return rows


def evidence_index_markdown(run_dir: str | Path) -> str:
    """The evidence index as one markdown table (one card in the UI instead of one per file)."""
    run_dir = Path(run_dir).resolve()
    rows = evidence_index_rows(run_dir)
    lines = [f"# Evidence of {run_dir.name}", "", f"{len(rows)} files under `{run_dir}`", "",
             "| file | kind | bytes | sha256 |", "|---|---|---|---|"]
    lines += [f"| `{_md_cell(r['file'])}` | {_md_cell(r['kind'])} | {r['bytes']} | {_md_cell(r['sha256'])} |"
              for r in rows]
    return "\n".join(lines) + "\n"
