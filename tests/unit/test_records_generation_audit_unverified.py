"""A generation audit that cannot compare answers is recorded unverified (GA-7:
"missing or unsupported strategies remain unverified"), never left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.gates import RunContext, run_gate
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget

SELFGEN = Path(__file__).resolve().parents[2] / "specs" / "selfgen_tasks_vs_gsm8k.json"


def _context(tmp_path: Path, answer_comparison) -> RunContext:
    raw = json.loads(SELFGEN.read_text())
    if answer_comparison is None:
        raw["generation_audit"].pop("answer_comparison", None)
    else:
        raw["generation_audit"]["answer_comparison"] = answer_comparison
    tmp_path.mkdir(parents=True, exist_ok=True)
    spec_path = tmp_path / SELFGEN.name
    spec_path.write_text(json.dumps(raw))
    plan_file = SELFGEN.with_name(SELFGEN.name.removesuffix(".json") + ".plan.json")
    if plan_file.exists():
        shutil.copy(plan_file, tmp_path / plan_file.name)
    spec = load_spec(spec_path, rehearse=True)
    plan = build_plan(spec)
    return RunContext(spec=spec, plan=plan, store=RunStore.create(tmp_path / "runs", spec, plan),
                      service=ServiceTarget("embedded", None))


def test_a_missing_comparison_strategy_is_recorded_unverified(tmp_path):
    for strategy in (None, "fuzzy_numeric"):
        ctx = _context(tmp_path / str(strategy), strategy)
        verdict = run_gate("generation_audit", ctx)
        assert verdict.failed
        record = ctx.store.read_result()["generation_audit"]
        assert record["status"] == "unverified" and record["stage"] == "before_training"
        assert repr(strategy) in record["reason"] and "unverified" in record["reason"]
