"""End to end: the exchange's GS1 seed spec, copied without its recorded revision file, stops at a gate
before any arm trains: rehearsed (`--rehearse`) it stops at correctness_preflight with a spec-revision
request; run as written on the embedded backend it stops at a gate with the model substitution said in
its summary. (Split from test_local_gs1_run.py so xdist's loadfile can put these runs on the other worker.)
"""

from __future__ import annotations

import json
import shutil

import pytest

from suite import GS1_SPEC, only_run_dir, run_cli


pytestmark = pytest.mark.slow
TEST_MAX_TOKENS = 16


def test_seed_spec_without_its_revision_file_stops_before_any_arm_trains(tmp_path, prefect_server):
    """The GS1 spec copied alone keeps its correctness revisions UNRESOLVED ("No full run happens while
    correctness_preflight is unresolved"): it stops at a gate and no arm trains."""
    alone = tmp_path / "spec" / GS1_SPEC.name
    alone.parent.mkdir()
    shutil.copy(GS1_SPEC, alone)
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(alone), "--rehearse", "--runs-dir", str(runs), timeout=1500,
                   env_extra=prefect_server.cli_env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    run_dir = only_run_dir(runs)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and "verdict" not in result and not result["completed_arms"]
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert not any(e["event"] == "gate" and e["gate"] == "arm_training" for e in events)
    failed = [e["gate"] for e in events if e["event"] == "gate" and e.get("status") == "failed"]
    assert failed == ["correctness_preflight"], failed
    request = result["spec_revision_request"]  # what to pin, with the values the pipeline would pin
    assert {pin["field"].rsplit(".", 1)[1] for pin in request["pins"]} == {"baseline_revision", "reference_revision"}
    assert all(pin["proposed"] and "UNRESOLVED" not in pin["proposed"] for pin in request["pins"])
    assert result["correctness_preflight"]["status"] == "unverified"


def test_seed_spec_on_the_embedded_backend_stops_at_a_gate(tmp_path, prefect_server):
    """The seed spec run as written (no --rehearse) on the embedded backend, with one test-size change:
    a `rollout` block (answers of at most TEST_MAX_TOKENS tokens, no GSM8K one-shot prefix) in place of
    the prose's max_tokens=512 and the cookbook's one-shot prompt; every other field as written. The run
    stops at the same gate either way (its correctness revisions are UNRESOLVED), but its correctness
    measurement on 512-token answers to one-shot prompts took ~90 s of a loaded 2-core machine."""
    alone = tmp_path / "spec" / GS1_SPEC.name
    alone.parent.mkdir()
    written = json.loads(GS1_SPEC.read_text())
    assert "max_tokens=512" in written["command"] and "rollout" not in written  # what the copy changes
    alone.write_text(json.dumps({**written, "rollout": {"max_tokens": TEST_MAX_TOKENS, "temperature": 1.0,
                                                    "few_shot": False}}, indent=2))
    runs = tmp_path / "runs"
    done = run_cli("flows.run", str(alone), "--runs-dir", str(runs), timeout=1500, env_extra=prefect_server.cli_env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    run_dir = only_run_dir(runs)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed" and "verdict" not in result
    assert result["outcome_reason"] == "incomplete_execution"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["gate"] for e in events if e["event"] == "gate" and e.get("status") == "failed"] == [
        "correctness_preflight"]  # the gate the spec as written stops at (the test-size answers change nothing here)
    assert "embedded/tiny-arith instead of Qwen/Qwen3.5-2B" in result["summary"]
    assert any(d["field"] == "model" for d in result["deviations"])
