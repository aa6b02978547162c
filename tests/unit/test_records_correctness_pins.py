"""Correctness revisions are pinned by the spec or its recorded revision file, never by the run
(CORR-6, CORR-8).

While a revision is UNRESOLVED everywhere the plan marks the gate's revisions unresolved (the gate
then stops the run with a spec-revision request); a recorded revision file that pins them resolves
them; a reported revision is checked against its pin.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from experiment.stats.correctness import pinned_revisions, revision_status, unresolved_revisions
from experiment.rl.steps.correctness_preflight import spec_revision_request
from experiment.contract.plan import build_plan, draft_plan
from experiment.contract.spec import SpecError, load_spec

SPECS = Path(__file__).resolve().parents[2] / "specs"
GS1 = SPECS / "gs1_kernel_vs_grpo_gsm8k.json"
GS1_PLAN_NAME = "gs1_kernel_vs_grpo_gsm8k.plan.json"
PATH_ID = "gs1_kernel_advantage_loop"
BASELINE_PIN = "tinker-cookbook==0.1.0 (rl/data_processing.py sha256:" + "a" * 64 + ")"
REFERENCE_PIN = "experiment/rl/gs1_reference.py sha256:" + "b" * 64


def _copy_spec(tmp_path: Path, source: Path = GS1, plan: dict | None = None) -> Path:
    """A temp copy of the spec as written, without its recorded revision file (and, when given, the
    revision file `plan` beside it instead)."""
    target = tmp_path / source.name
    shutil.copy(source, target)
    if plan is not None:
        target.with_name(target.name.removesuffix(".json") + ".plan.json").write_text(json.dumps(plan))
    return target


def test_the_seed_specs_leave_both_revisions_unresolved(tmp_path):
    """The seed spec as written leaves both revisions UNRESOLVED (and, with no revision file beside it,
    the gate's revisions are unresolved); the recorded revision file in specs/ pins both."""
    as_written = [json.loads(GS1.read_text()), load_spec(_copy_spec(tmp_path)).to_dict()]
    for raw in as_written:
        pins = pinned_revisions(raw)
        assert unresolved_revisions(pins) == [(PATH_ID, "baseline_revision"), (PATH_ID, "reference_revision")]
        assert pins[PATH_ID]["baseline_revision"]["spec_text"].startswith("UNRESOLVED")
    spec = load_spec(_copy_spec(tmp_path))
    assert spec.source.revision is None
    assert draft_plan(spec).gate("correctness_preflight").details["revisions_unresolved"] is True
    with pytest.raises(SpecError, match="UNRESOLVED and the spec has no revision file"):  # refused before spending
        build_plan(spec)
    recorded = load_spec(GS1)
    assert recorded.source.revision is not None and recorded.source.revision.path.endswith(GS1_PLAN_NAME)
    pins = pinned_revisions(recorded.to_dict(), recorded.source.revision.supplied)
    assert unresolved_revisions(pins) == []
    assert build_plan(recorded).gate("correctness_preflight").details["revisions_unresolved"] is False


def test_a_recorded_revision_file_pins_them(tmp_path):
    spec = load_spec(_copy_spec(tmp_path, plan={"correctness_revisions": {PATH_ID: {
        "baseline_revision": BASELINE_PIN, "reference_revision": REFERENCE_PIN}}}))
    plan = build_plan(spec)
    details = plan.gate("correctness_preflight").details
    assert details["revisions_unresolved"] is False
    pins = details["revision_pins"][PATH_ID]
    assert pins["baseline_revision"]["pinned"] == BASELINE_PIN
    assert pins["reference_revision"]["pinned"] == REFERENCE_PIN
    assert "revision file" in pins["reference_revision"]["source"]
    assert plan.spec_revision["supplied"] == ["correctness_revisions"]


def test_the_paths_form_of_the_revision_file_and_a_partial_pin(tmp_path):
    spec = load_spec(_copy_spec(tmp_path, plan={"correctness_revisions": {"paths": [
        {"id": PATH_ID, "baseline_revision": BASELINE_PIN, "reference_revision": "UNRESOLVED: still open"}]}}))
    pins = pinned_revisions(spec.to_dict(), spec.source.revision.supplied)
    assert pins[PATH_ID]["baseline_revision"]["pinned"] == BASELINE_PIN
    assert unresolved_revisions(pins) == [(PATH_ID, "reference_revision")]  # an UNRESOLVED pin pins nothing
    assert draft_plan(spec).gate("correctness_preflight").details["revisions_unresolved"] is True
    with pytest.raises(SpecError, match="reference_revision are UNRESOLVED and its revision file .* does not pin"):
        build_plan(spec)


def test_a_pin_in_the_spec_itself_wins():
    raw = json.loads(GS1.read_text())
    raw["correctness_preflight"]["paths"][0]["baseline_revision"] = BASELINE_PIN
    raw["correctness_revisions"] = {PATH_ID: {"baseline_revision": "something else"}}
    pins = pinned_revisions(raw)
    assert pins[PATH_ID]["baseline_revision"] == {"pinned": BASELINE_PIN, "source": "spec", "spec_text": BASELINE_PIN}


def test_reported_revisions_are_checked_against_the_pins():
    pins = {"baseline_revision": {"pinned": BASELINE_PIN, "source": "spec"},
            "reference_revision": {"pinned": REFERENCE_PIN, "source": "spec revision file"}}
    reported = {"baseline_revision": BASELINE_PIN, "reference_revision": REFERENCE_PIN.replace("b", "c")}
    status = revision_status(pins, reported)
    assert status["baseline_revision"]["status"] == "matches"
    assert status["reference_revision"]["status"] == "differs"
    unpinned = revision_status({"baseline_revision": {"pinned": None, "source": None}}, reported)
    assert unpinned["baseline_revision"]["status"] == "unresolved"
    assert unpinned["reference_revision"]["status"] == "unresolved"  # no pin entry at all: unresolved too


def test_the_spec_revision_request_names_what_to_pin_with_the_values_the_pipeline_would_pin(tmp_path):
    spec_path = _copy_spec(tmp_path)
    plan = draft_plan(load_spec(spec_path))  # a plan intake refuses (the pins are UNRESOLVED); the request says what to pin
    record = {"id": PATH_ID, "baseline_revision": BASELINE_PIN, "reference_revision": REFERENCE_PIN,
              "implementation_revision": "experiment/rl/advantages.py sha256:" + "d" * 64,
              "errors": {"baseline_loss": {"max_abs_error": 0.0}}, "fixed_input": {"sha256": "e" * 64}}
    request = spec_revision_request(SimpleNamespace(plan=plan), record, ["baseline_revision", "reference_revision"], True)
    assert request["revision_file"] == str(spec_path.with_name(GS1_PLAN_NAME))
    assert [(p["field"], p["proposed"]) for p in request["pins"]] == [
        (f"correctness_preflight.paths[id={PATH_ID}].baseline_revision", BASELINE_PIN),
        (f"correctness_preflight.paths[id={PATH_ID}].reference_revision", REFERENCE_PIN)]
    assert all(p["spec_value"].startswith("UNRESOLVED") for p in request["pins"])
    # the fragment, written as the revision file, resolves exactly these revisions
    spec_path.with_name(GS1_PLAN_NAME).write_text(json.dumps(request["revision_file_fragment"]))
    pinned = build_plan(load_spec(spec_path)).gate("correctness_preflight").details
    assert pinned["revisions_unresolved"] is False
    assert revision_status(pinned["revision_pins"][PATH_ID], record)["baseline_revision"]["status"] == "matches"
