"""PNG pictures of a run, for the run directory and Prefect artifacts (matplotlib, Agg, no Prefect).

Every figure has the same fixed size: FIGURE_SIZE_INCHES at DPI, i.e. PIXEL_SIZE = (800, 500)
(width, height). Each function writes one PNG and returns its path.

- `training_curves_png(rows, path, metric)`: per-step curves, one per arm (or arm and LR).
- `paired_effect_png(criteria, path)`: each criterion's effect with its interval against its margin.
- `arm_scores_png(scores, path)`: per-arm accuracy with 95% Wilson intervals (or NLL / recorded intervals).
- `heldout_nll_by_lr_png(points, path)`: SFT: held-out NLL per token of each arm at each LR of its grid.
- `step_time_png(rows, path)`: SFT: optimizer step time per training run (arm and LR).
- `generation_audit_png(rounds, path)`: self-generated tasks: the audit's counts per generation round.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist, median
from typing import Any

import matplotlib
from experiment.contract.run_layout import plots_dir, result_path, table_path

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from experiment.report.summary import arm_score_points, effect_in_words, signed, subtraction

FIGURE_SIZE_INCHES = (8.0, 5.0)
DPI = 100
PIXEL_SIZE = (int(FIGURE_SIZE_INCHES[0] * DPI), int(FIGURE_SIZE_INCHES[1] * DPI))


class PlotError(ValueError):
    """Input a picture cannot be drawn from (one line)."""


def _new_figure():
    return plt.subplots(figsize=FIGURE_SIZE_INCHES, dpi=DPI)


def _save(figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI, format="png")  # no bbox_inches="tight": the pixel size stays fixed
    plt.close(figure)
    return path


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PlotError(f"{what} must be a finite number (got {value!r})")
    return float(value)


def _series_label(row: dict[str, Any], arms_with_several_lrs: set[str]) -> str:
    if row.get("run"):
        return str(row["run"])
    arm = str(row.get("arm", "?"))
    if arm in arms_with_several_lrs and row.get("lr") is not None:
        return f"{arm} lr={float(row['lr']):g}"
    return arm


def training_curves_png(rows: list[dict[str, Any]], path: str | Path, metric: str = "mean_reward") -> Path:
    """Per-step `metric` (e.g. mean_reward for RL, loss for SFT), one line per arm or arm/LR.

    Each row: {"arm", "step", <metric>} plus optional "lr" or "run" (a series name)."""
    usable = [row for row in rows if row.get(metric) is not None and row.get("step") is not None]
    if not usable:
        raise PlotError(f"no rows with both 'step' and {metric!r} to plot")
    lrs_by_arm: dict[str, set[float]] = {}
    for row in usable:
        if row.get("lr") is not None:
            lrs_by_arm.setdefault(str(row.get("arm")), set()).add(float(row["lr"]))
    several = {arm for arm, lrs in lrs_by_arm.items() if len(lrs) > 1}
    series: dict[str, list[tuple[float, float]]] = {}
    for row in usable:
        point = (_number(row["step"], "step"), _number(row[metric], metric))
        series.setdefault(_series_label(row, several), []).append(point)
    figure, axes = _new_figure()
    for label in sorted(series):
        points = sorted(series[label])
        axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=label)
    axes.set_xlabel("step")
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.set_ylabel(metric)
    axes.set_title(f"Training {metric} per step")
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    return _save(figure, path)


def paired_effect_png(criteria_results: list[dict[str, Any]], path: str | Path, verdict: str | None = None) -> Path:
    """Each criterion's paired effect with its [lower, upper] interval and its margin.

    Each entry: {"id", "effect", "lower", "upper", "margin"} plus "arm_weights" (a decision_summary
    criterion). The axis names the subtraction (e.g. gs1_kernel − grpo_gs8), each row says in words
    whether the claim is shown, and the title carries the verdict when given."""
    if not criteria_results:
        raise PlotError("no criteria to plot")
    figure, axes = _new_figure()
    for row, criterion in enumerate(criteria_results):
        effect = _number(criterion.get("effect"), "effect")
        lower = _number(criterion.get("lower"), "lower")
        upper = _number(criterion.get("upper"), "upper")
        margin = _number(criterion.get("margin"), "margin")
        axes.errorbar(
            [effect],
            [row],
            xerr=[[effect - lower], [upper - effect]],
            fmt="o",
            color="tab:blue",
            capsize=6,
            label="effect and interval" if row == 0 else None,
        )
        axes.plot(
            [margin, margin], [row - 0.3, row + 0.3], color="tab:red", linewidth=2, label="margin" if row == 0 else None
        )
        axes.annotate(f"{signed(effect)} [{signed(lower)}, {signed(upper)}]", (effect, row), xytext=(0, 10),
                      textcoords="offset points", ha="center", fontsize="small")
        axes.annotate(effect_in_words(criterion).split(" (")[0], (0.5, row - 0.4), xycoords=("axes fraction", "data"),
                      ha="center", va="center", fontsize="small", color="dimgray")
    axes.set_yticks(range(len(criteria_results)))
    axes.set_yticklabels([f"{c.get('id', index)}:\n{subtraction(c)}" for index, c in enumerate(criteria_results)],
                         fontsize="small")
    axes.set_ylim(-0.7, len(criteria_results) - 0.3)
    axes.axvline(0.0, color="grey", linewidth=0.8, linestyle=":")
    names = sorted({subtraction(c) for c in criteria_results})
    axes.set_xlabel(f"paired effect ({names[0] if len(names) == 1 else 'per criterion'})")
    title = "Paired effect, one-sided Hoeffding bounds, margin"
    axes.set_title(f"Verdict: {verdict}\n{title}" if verdict else title)
    axes.grid(axis="x", alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    return _save(figure, path)


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Wilson score interval for a proportion."""
    if n <= 0:
        raise PlotError("a Wilson interval needs n > 0")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def arm_scores_png(scores: list[dict[str, Any]], path: str | Path, metric: str = "accuracy") -> Path:
    """Per-arm score with an interval.

    Each entry: {"arm", "value"} plus either "lower"/"upper" (drawn as recorded) or "n" (items
    scored; for accuracy a 95% Wilson interval is computed). The title says which."""
    if not scores:
        raise PlotError("no scores to plot")
    arms, values, lows, highs, kinds = [], [], [], [], set()
    for score in scores:
        value = _number(score.get("value"), f"value of arm {score.get('arm')}")
        if score.get("lower") is not None and score.get("upper") is not None:
            low, high = _number(score["lower"], "lower"), _number(score["upper"], "upper")
            kinds.add("recorded")
        elif metric == "accuracy" and score.get("n"):
            low, high = wilson_interval(value * int(score["n"]), int(score["n"]))
            kinds.add("Wilson")
        else:
            low = high = value
            kinds.add("none")
        arms.append(str(score.get("arm", "?")))
        values.append(value)
        lows.append(value - low)
        highs.append(high - value)
    figure, axes = _new_figure()
    positions = range(len(arms))
    bars = axes.bar(positions, values, color="tab:blue", alpha=0.7)
    axes.errorbar(positions, values, yerr=[lows, highs], fmt="none", ecolor="black", capsize=8)
    axes.bar_label(bars, labels=[f"{value:.3f}" for value in values], label_type="center", color="white",
                   fontweight="bold")
    axes.set_xticks(list(positions))
    axes.set_xticklabels(arms)
    axes.set_ylabel(metric)
    if kinds == {"Wilson"}:
        intervals = "95% Wilson intervals"
    elif kinds == {"recorded"}:
        intervals = "intervals as recorded"
    elif kinds == {"none"}:
        intervals = "no interval"
    else:
        intervals = "mixed intervals (Wilson 95% where computed)"
    axes.set_title(f"Per-arm {metric} ({intervals})")
    if metric == "accuracy":
        axes.set_ylim(0, 1)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return _save(figure, path)


def heldout_nll_by_lr_png(points: list[dict[str, Any]], path: str | Path) -> Path:
    """Held-out NLL (per token) against LR, one line per arm; each arm's selected LR is ringed.

    Each point: {"arm", "lr", "nll"} plus optional "selected" (True for the arm's selected run)."""
    usable = [p for p in points if p.get("nll") is not None and p.get("lr") is not None]
    if not usable:
        raise PlotError("no held-out NLL per arm and LR to plot")
    figure, axes = _new_figure()
    styles = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-.")]  # arms with equal values stay visible
    for index, arm in enumerate(sorted({str(p["arm"]) for p in usable})):
        mine = sorted((_number(p["lr"], "lr"), _number(p["nll"], "nll"), bool(p.get("selected")))
                      for p in usable if str(p["arm"]) == arm)
        marker, style = styles[index % len(styles)]
        line, = axes.plot([m[0] for m in mine], [m[1] for m in mine], marker=marker, linestyle=style, label=arm)
        for lr, nll, selected in mine:
            if selected:
                axes.scatter([lr], [nll], s=180, facecolors="none", edgecolors=line.get_color(), linewidths=2)
                axes.annotate(f"{arm}: {nll:.4g}", (lr, nll), xytext=(-10, 12 + 14 * index), textcoords="offset points",
                              ha="right", fontsize="small", color=line.get_color())
    rates = sorted({float(p["lr"]) for p in usable})
    if len(rates) > 1:
        axes.set_xscale("log")
        axes.set_xticks(rates, labels=[f"{rate:g}" for rate in rates])
        axes.minorticks_off()
    axes.set_xlabel("learning rate")
    axes.set_ylabel("held-out NLL per token (lower is better)")
    axes.set_title("Held-out NLL per arm and LR (ringed: each arm's selected LR)")
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    return _save(figure, path)


def step_time_png(rows: list[dict[str, Any]], path: str | Path, metric: str = "optim_seconds") -> Path:
    """Per training run (arm and LR): the median `metric` per step as a bar, its range as a whisker.

    Each row: {"run", metric} (one row per step)."""
    per_run: dict[str, list[float]] = {}
    for row in rows:
        if row.get(metric) is not None and row.get("run") is not None:
            per_run.setdefault(str(row["run"]), []).append(_number(row[metric], metric))
    if not per_run:
        raise PlotError(f"no rows with 'run' and {metric!r} to plot")
    runs = sorted(per_run)
    medians = [median(per_run[run]) for run in runs]
    lows = [m - min(per_run[r]) for m, r in zip(medians, runs)]
    highs = [max(per_run[r]) - m for m, r in zip(medians, runs)]
    figure, axes = _new_figure()
    positions = range(len(runs))
    arms = sorted({run.split("@")[0] for run in runs})
    colors = [f"C{arms.index(run.split('@')[0]) % 10}" for run in runs]  # one colour per arm
    axes.bar(positions, medians, color=colors, alpha=0.8)
    axes.errorbar(positions, medians, yerr=[lows, highs], fmt="none", ecolor="black", capsize=6)
    axes.set_xticks(list(positions))
    axes.set_xticklabels(runs, rotation=30, ha="right", fontsize="small")
    axes.set_ylabel(f"{metric.replace('_', ' ')} per step")
    axes.set_title(f"Step time: median {metric.replace('_', ' ')} per training run (whiskers: min to max)")
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return _save(figure, path)


AUDIT_COUNTS = ("generated", "accepted", "rejected", "execution_errors")


def generation_audit_png(rounds: list[dict[str, Any]], path: str | Path) -> Path:
    """The generation audit's counts per round: generated, accepted, rejected, execution errors, and
    in the audited sample the label errors and overlaps; the title of each group says passed/failed.

    Each round: {"round", "counts": {...}, "sample_size", "label_error_count", "overlap_count", "status"}."""
    if not rounds:
        raise PlotError("no generation audit rounds to plot")
    kinds = [*AUDIT_COUNTS, "sample_size", "label_error_count", "overlap_count"]
    labels = ["generated", "accepted", "rejected", "execution errors", "audited sample", "label errors", "overlaps"]
    figure, axes = _new_figure()
    width = 0.8 / len(kinds)
    for index, kind in enumerate(kinds):
        values = [_number((r.get("counts") or {}).get(kind, r.get(kind, 0)) or 0, kind) for r in rounds]
        bars = axes.bar([i + (index - len(kinds) / 2 + 0.5) * width for i in range(len(rounds))], values, width,
                        label=labels[index])
        axes.bar_label(bars, labels=[f"{v:g}" for v in values], fontsize="x-small")
    axes.set_xticks(list(range(len(rounds))))
    axes.set_xticklabels([f"round {r.get('round', i + 1)}\n{r.get('status', '?')}" for i, r in enumerate(rounds)])
    axes.set_ylabel("tasks")
    axes.set_title("Generation audit per round (label errors, overlaps: in the audited sample)")
    axes.grid(axis="y", alpha=0.3)
    axes.legend(loc="upper left", fontsize="x-small", ncol=2)
    figure.tight_layout()
    return _save(figure, path)


def sft_nll_points(result: dict[str, Any]) -> list[dict[str, Any]]:
    """RESULT.metrics.arms[arm].runs[lr].heldout_nll_token_mean as plot points (selected LR marked)."""
    points = []
    for arm, metrics in ((result.get("metrics") or {}).get("arms") or {}).items():
        if not isinstance(metrics, dict) or not isinstance(metrics.get("runs"), dict):
            continue
        for lr, run in metrics["runs"].items():
            if isinstance(run, dict) and run.get("heldout_nll_token_mean") is not None:
                rate = run.get("learning_rate", lr)
                points.append({"arm": arm, "lr": float(rate), "nll": run["heldout_nll_token_mean"],
                               "selected": metrics.get("selected_lr") is not None
                               and float(metrics["selected_lr"]) == float(rate)})
    return points


def write_run_pictures(run_dir: str | Path) -> list[Path]:
    """Every picture a run's files support, written to <run_dir>/plots/; returns their paths.

    RL: training curves from tables/training_steps.parquet (mean_reward). SFT (TriMuon): the training
    curves (train NLL per token per step, one line per arm and LR) and the optimizer step time per
    training run from tables/sft_steps.parquet, and the held-out NLL per arm and LR from RESULT.metrics.
    Self-generated tasks: the generation audit's counts per round from RESULT.generation_audit. Every
    family: the paired effect per criterion from RESULT.decision, per-arm scores from RESULT.evaluation.
    A picture whose data does not exist yet (a run stopped early) is simply not drawn.
    """
    import json

    import pandas as pd

    run_dir = Path(run_dir)
    out = plots_dir(run_dir)
    out.mkdir(exist_ok=True)
    result = json.loads(result_path(run_dir).read_text())
    written = []
    steps_table = table_path(run_dir, "training_steps")
    if steps_table.is_file():
        rows = pd.read_parquet(steps_table).to_dict("records")
        metric = "mean_reward" if rows and "mean_reward" in rows[0] else "loss"
        written.append(training_curves_png(rows, out / f"training-{metric.replace('_', '-')}.png", metric))
    sft_steps = table_path(run_dir, "sft_steps")
    if sft_steps.is_file():
        rows = pd.read_parquet(sft_steps).to_dict("records")
        if any(row.get("train_nll_token_mean") is not None for row in rows):
            written.append(training_curves_png(rows, out / "training-train-nll.png", "train_nll_token_mean"))
        if any(row.get("optim_seconds") is not None for row in rows):
            written.append(step_time_png(rows, out / "step-time.png"))
    nll_points = sft_nll_points(result)
    if nll_points:
        written.append(heldout_nll_by_lr_png(nll_points, out / "heldout-nll-by-lr.png"))
    audit = result.get("generation_audit") or {}
    rounds = audit.get("rounds") or ([audit] if isinstance(audit.get("counts"), dict) else [])
    if rounds:
        written.append(generation_audit_png(rounds, out / "generation-audit.png"))
    criteria = (result.get("decision") or {}).get("criteria") or []
    if criteria and all(c.get("effect") is not None for c in criteria):
        verdict = result.get("verdict")
        if verdict and result.get("confidence"):
            verdict = f"{verdict} ({result['confidence']} confidence)"
        written.append(paired_effect_png(criteria, out / "paired-effect.png", verdict))
    scores = arm_score_points(result)
    if scores:
        written.append(arm_scores_png(scores, out / "arm-accuracy.png"))
    return written
