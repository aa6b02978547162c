"""Every `--plan` prediction comes true in production exposure too (issue 45 item 11, deliverable 9).

Each seed spec's wiring rehearsal against the embedded backend's production profile (no adapter hash, only the
optimizer family in get_info, every model trained with AdamW, as the production service does, and no fork
deployed). For TriMuon, `--plan --exposure production` predicted a stop at the correctness preflight while the
preflight probe stopped the run one gate earlier (its TriMuon and DiMuon requests answered by AdamW), and
predicted evaluator, restoration and feasibility records a run stopped there never makes. The plan now names
the stop (`predicted_stop`) and the grades of a run stopped there; GS1 and the self-generated spec run every
gate. The run stops where the plan says and `python -m flows.validate` grades it as predicted.
(All three: 3 min 55 s on the shared 2-core machine; TriMuon alone 29 s.)
"""

from __future__ import annotations

import json

import pytest

from suite import (FAKE_PROXY_SECRET, GS1_SPEC, GS1_WIRING_ARGS, SELFGEN_SPEC, TRIMUON_SPEC, only_run_dir, run_cli,
                   run_main)

PRODUCTION = ("--exposure", "production")


@pytest.mark.parametrize("spec", [TRIMUON_SPEC, GS1_SPEC, SELFGEN_SPEC], ids=["trimuon", "gs1", "selfgen"])
def test_the_run_stops_and_grades_where_its_production_plan_says(tmp_path, prefect_server, spec):
    planned = run_main("flows.run", str(spec), *GS1_WIRING_ARGS, *PRODUCTION, "--plan")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    env = {**prefect_server.cli_env, "MODAL_PROXY_TOKEN_SECRET": FAKE_PROXY_SECRET}
    done = run_cli("flows.run", str(spec), *GS1_WIRING_ARGS, *PRODUCTION, "--runs-dir", str(tmp_path / "runs"),
                   env_extra=env, timeout=900)
    run_dir = only_run_dir(tmp_path / "runs")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]
    failed = [event["gate"] for event in events if event.get("event") == "gate" and event["status"] == "failed"]
    stop = plan["predicted_stop"]
    assert failed == ([stop["gate"]] if stop else []), done.stderr[-3000:]
    if spec == TRIMUON_SPEC:
        assert stop["gate"] == "preflight_probe"
    graded = run_main("flows.validate", str(run_dir), "--json")
    categories = json.loads(graded.stdout)["categories"]
    assert {name: entry["status"] for name, entry in categories.items()} == {
        name: entry["grade"] for name, entry in plan["predicted_grades"].items()}
