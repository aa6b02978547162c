"""End to end: the local self-generated-tasks spec on the embedded backend (issue 7 done-when).

Generation through the sampling client, sandboxed labels, the audit validated before any update on
generated data, three arms (untrained base, arithmetic RL, self-generated RL) evaluated on the same
items, and both criteria of the three-way decision computed. Its pictures include the generation audit's counts,
and the summary's images load in headless Chromium.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from suite import FAKE_PROXY_SECRET

pytestmark = pytest.mark.slow


def test_local_selfgen_spec_runs_end_to_end(tmp_path, prefect_server, wiring_rehearsal):
    # the session's self-generated wiring rehearsal (tests/e2e/conftest.py), run with a fake proxy secret in its
    # environment, on the session's Prefect server
    run_dir = wiring_rehearsal("selfgen")["run_dir"]
    result = json.loads((run_dir / "result.json").read_text())

    assert result["status"] == "succeeded"
    assert result["verdict"] in ("supported", "refuted", "inconclusive") and result["outcome_reason"]
    assert "confidence" not in result and "effect" not in result  # the three-way shape
    assert result["validation"]["status"] == "passed", result["validation"]
    assert result["rehearsal"]["rehearsal"] is True and result["summary"].startswith("REHEARSAL")

    audit = result["generation_audit"]
    assert audit["stage"] == "before_training" and audit["label_error_count"] == 0 and audit["overlap_count"] == 0
    # re-solved by the exact arithmetic solver, independent of generator, filter and trained model (issue 28)
    assert audit["resolver"]["name"] == "exact-solver:embedded-arithmetic" and audit["resolver_independent"] is True
    assert result["original_hypothesis_tested"] is False and result["tested_instead"]
    kinds = {f["name"]: f["kind"] for f in result["evidence"]["files"]}
    assert kinds[audit["dataset_file"]] == "generated_tasks" and kinds[audit["evaluation_file"]] == "generated_tasks"

    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    gates = [e["gate"] for e in events if e["event"] == "gate"]
    assert gates.index("generation_audit") < gates.index("feasibility_pilot") < gates.index("arm_training")

    scores = result["evaluation"]["scores"]
    assert {s["arm"] for s in scores} == {"base", "rl_gsm8k", "rl_selfgen"}
    assert len({s["evaluator_id"] for s in scores}) == 1
    assert [c["id"] for c in result["decision"]["criteria"]] == ["noninferiority_vs_gsm8k_rl", "recovered_half_gain"]
    assert result["decision"]["adjustment"] == "bonferroni"

    for path in run_dir.rglob("*"):
        if path.is_file():
            assert FAKE_PROXY_SECRET.encode() not in path.read_bytes(), path

    # pictures: the RL ones and the audit's counts, in plots/ and in the summary, loaded in the browser
    from flows.artifacts import keyed

    pictures = sorted(p.name for p in (run_dir / "plots").glob("*.png"))
    assert pictures == ["arm-accuracy.png", "generation-audit.png", "paired-effect.png", "training-mean-reward.png"]
    spec = importlib.util.spec_from_file_location("ui_browser", Path(__file__).with_name("browser.py"))
    browser = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(browser)
    (flow_run,) = prefect_server.flow_runs_of(run_dir.parent)
    screenshot = Path(os.environ.get("RX_UI_SCREENSHOT_DIR") or tmp_path) / "summary-selfgen.png"
    sizes = browser.summary_pictures(prefect_server, flow_run["id"], keyed("summary", run_dir.name), screenshot,
                                     expected=len(pictures))
    print(f"self-generated summary: {len(sizes)} pictures loaded {sizes}; screenshot {screenshot}")
    assert len(sizes) == len(pictures) and all(width > 0 and height > 0 for width, height in sizes)
