"""A run that overruns its budget says so in its record, and a budget that may not hold the run is predicted so
(issue 46: a 1-minute budget that "fit" by a noisy projection ran 3x over, and the record did not say so).

The corpus variant `budget-tiny-short-run` (GS1 at 2 steps, a 1-minute enforced budget) rehearsed at the wiring
scale: `--plan` predicts it may stop at feasibility (the categories measured after it then grade unknown). Either
way the run ends, the grades `--plan` predicted come true: stopped at the feasibility pilot, those categories grade
unknown; finished, they grade as predicted, and RESULT.budget_use holds the wall time against the budget, with a
note when the run overran it (measured on a loaded 2-core machine: 105 s of a 60 s budget, 1.8x).
"""

from __future__ import annotations

import json

from spec_variants import variant, write_variant
from suite import GS1_WIRING_ARGS, only_run_dir, run_cli, run_main


def test_a_budget_that_may_not_hold_is_predicted_and_an_overrun_is_recorded(tmp_path, prefect_server):
    spec = write_variant(variant("budget-tiny-short-run"), tmp_path)
    planned = run_main("flows.run", str(spec), "--plan", *GS1_WIRING_ARGS)
    assert planned.returncode == 0, planned.stderr
    predicted = json.loads(planned.stdout)["predicted_grades"]
    assert predicted["feasibility"]["may_stop_at_feasibility"] is True
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(spec), *GS1_WIRING_ARGS, "--runs-dir", str(runs), env_extra=prefect_server.cli_env,
                   timeout=1500)
    run_dir = only_run_dir(runs)
    result = json.loads((run_dir / "result.json").read_text())
    graded = json.loads(run_main("flows.validate", str(run_dir), "--spec", str(spec), "--json").stdout)["categories"]
    stopped = [e["gate"] for e in map(json.loads, (run_dir / "events.jsonl").read_text().splitlines())
               if e["event"] == "gate" and e.get("status") == "failed"]
    if stopped:  # the feasibility pilot projected past the budget: what it said may happen
        assert done.returncode == 1 and stopped == ["feasibility_pilot"], done.stderr[-2000:]
        expected = {c: e.get("if_stopped_at_feasibility", e["grade"]) for c, e in predicted.items()}
    else:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        expected = {c: e["grade"] for c, e in predicted.items()}
    assert {c: e["status"] for c, e in graded.items()} == expected
    use = result["budget_use"]
    assert use["budget_wall_seconds"] == 60 and use["within_budget"] == (use["elapsed_wall_seconds"] <= 60)
    assert ("note" in use) == (not use["within_budget"])
    if not use["within_budget"]:
        assert use["note"].startswith("the run overran its wall budget")
