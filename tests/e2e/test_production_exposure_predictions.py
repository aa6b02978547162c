"""Every `--plan` prediction comes true in production exposure too (issue 45 item 11, deliverable 9).

The TriMuon wiring rehearsal against the embedded backend's production profile (it trains every model with
AdamW, as the production service does, and no fork is deployed): `--plan --exposure production` predicted a stop
at the correctness preflight while the preflight probe stopped the run one gate earlier (the arms' TriMuon and
DiMuon requests answered by AdamW), and predicted evaluator, restoration and feasibility records a run stopped
there never makes. The plan now names the stop and the grades of a run stopped there; the run is graded by
`python -m flows.validate` and both must agree.
"""

from __future__ import annotations

import json

from suite import FAKE_PROXY_SECRET, GS1_WIRING_ARGS, TRIMUON_SPEC, only_run_dir, run_cli

PRODUCTION = ("--exposure", "production")


def test_the_trimuon_run_stops_and_grades_where_its_production_plan_says(tmp_path, prefect_server):
    planned = run_cli("flows.run", str(TRIMUON_SPEC), *GS1_WIRING_ARGS, *PRODUCTION, "--plan")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert plan["predicted_stop"]["gate"] == "preflight_probe"
    env = {**prefect_server.cli_env, "MODAL_PROXY_TOKEN_SECRET": FAKE_PROXY_SECRET}
    done = run_cli("flows.run", str(TRIMUON_SPEC), *GS1_WIRING_ARGS, *PRODUCTION, "--runs-dir", str(tmp_path / "runs"),
                   env_extra=env, timeout=900)
    run_dir = only_run_dir(tmp_path / "runs")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    gates = [(event["gate"], event["status"]) for event in events if event.get("event") == "gate"]
    assert gates == [("spec_intake", "passed"), ("preflight_probe", "failed")], done.stderr[-3000:]
    graded = run_cli("flows.validate", str(run_dir), "--json")
    categories = json.loads(graded.stdout)["categories"]
    assert {name: entry["status"] for name, entry in categories.items()} == {
        name: entry["grade"] for name, entry in plan["predicted_grades"].items()}
