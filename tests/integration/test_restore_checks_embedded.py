"""Restoration checks against a real embedded server, through the stock SDK over HTTP.

- The create-save-restore check takes an optimizer step before saving, so the optimizer's
  moments are part of what is restored and compared: a restore that loses them (weights only)
  is caught. The weakened restore is shown failing first, then the real one passing.
- The checkpoint-load proof (what the pipeline uses when a service exposes no adapter hash):
  a fresh client loads the initialization checkpoint and the service's load response names it;
  its initial output equals the adapter-proven client's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tinker import types

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.rl import restoration as r
from experiment.run.clients import ClientSession, session_weights_info
from experiment.run.store import RunStore
from experiment.service.target import ServiceTarget

MODEL = "embedded/tiny-random"
REQUESTED = {"family": "adamw", "learning_rate": 1e-2}
ADAM = types.AdamParams(learning_rate=1e-2)
SPEC = Path(__file__).resolve().parents[2] / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"


@pytest.fixture(scope="module")
def session(embedded_server):
    running = embedded_server  # one backend for the session (tests/conftest.py)
    target = ServiceTarget("embedded", running.base_url)
    target._server = running  # started here; ServiceTarget must not start another
    session = ClientSession(target, "test")
    yield session
    session.close()


def _batch() -> list[types.Datum]:
    rng = np.random.default_rng(0)
    datums = []
    for _ in range(2):
        tokens = rng.integers(1, 200, size=12).tolist()
        datums.append(types.Datum(
            model_input=types.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={"target_tokens": types.TensorData.from_numpy(np.array(tokens[1:], dtype=np.int64)),
                            "weights": types.TensorData.from_numpy(np.ones(11, dtype=np.float32))},
        ))
    return datums


@pytest.fixture(scope="module")
def init_uri(session):
    client = session.lora_client(MODEL, 4, 0, REQUESTED)
    return client.save_state("init-full-test").result().path


def test_restore_that_loses_the_optimizer_moments_is_caught(session, init_uri, monkeypatch):
    original = session.client_from_state

    def weights_only(path, requested, with_optimizer=False):  # the weakened restore: moments dropped
        return original(path, requested, with_optimizer=False)

    monkeypatch.setattr(session, "client_from_state", weights_only)
    check = r.restore_update_check(session, init_uri, REQUESTED, _batch(), ADAM, "weakened", 1e-6)
    assert not check["passed"] and check["max_abs_difference"] > 1e-6


def test_restore_with_optimizer_state_matches_the_uninterrupted_client(session, init_uri):
    check = r.restore_update_check(session, init_uri, REQUESTED, _batch(), ADAM, "real", 1e-6)
    assert check["steps_before_save"] == 1
    assert check["passed"], check
    assert check["optimizer_check_after_restore"]["after_restore"] == 1
    assert check["optimizer_check_after_restore"]["actual_family"] == "adamw"


def test_checkpoint_load_proof_names_the_loaded_checkpoint(session, init_uri, tmp_path):
    spec = load_spec(SPEC, rehearse=True)
    store = RunStore.create(tmp_path / "runs", spec, build_plan(spec))
    info = session_weights_info(session, init_uri)
    by_load, _ = r.restore_member(store, session, "a", MODEL, 4, 0, REQUESTED, init_uri, info, _batch(),
                                  adapter_proof=False)
    by_hash, _ = r.restore_member(store, session, "b", MODEL, 4, 0, REQUESTED, init_uri, info, _batch(),
                                  adapter_proof=True)
    init = by_load["initialization"]
    assert init["loaded_checkpoint_uri"] == init_uri and init["load_succeeded"] is True
    assert init["checkpoint_immutable"] is True and init["checkpoint_scope"] == "full_initialization"
    assert by_hash["initialization"]["adapter_sha256"] == by_hash["initialization"]["checkpoint_adapter_sha256"]
    assert by_load["initial_output"]["output_sha256"] == by_hash["initial_output"]["output_sha256"]
    assert r.group_consistency({"a": by_load, "b": by_hash}) == []


def test_every_arm_created_from_saved_state_records_its_restore(session, init_uri, tmp_path):
    """Both ways an arm's client starts from the initialization checkpoint load saved state: restore 1,
    with the client, checkpoint, method and time, and an optimizer check after it (issue 28)."""
    spec = load_spec(SPEC, rehearse=True)
    store = RunStore.create(tmp_path / "runs", spec, build_plan(spec))
    info = session_weights_info(session, init_uri)
    by_load, loaded = r.restore_member(store, session, "a", MODEL, 4, 0, REQUESTED, init_uri, info, _batch(),
                                       adapter_proof=False)
    by_hash, created = r.restore_member(store, session, "b", MODEL, 4, 0, REQUESTED, init_uri, info, _batch(),
                                        adapter_proof=True)
    for entry, client, method in ((by_load, loaded, r.LOAD_STATE), (by_hash, created, r.CREATE_FROM_STATE)):
        (restore,) = entry["restores"]
        assert entry["restore_count"] == 1 and restore["restore"] == 1 and restore["method"] == method
        assert restore["client"] == client.model_id and restore["loaded_from"] == init_uri and restore["at"]
        assert [c["after_restore"] for c in entry["optimizer_checks"]] == [0, 1]
    assert by_load["restores"][0]["loaded_path"] == init_uri
    # no response after load_state exposes the optimizer: that check is declared, never verified
    assert by_load["optimizer_checks"][1]["source"] == "declared" and r.config_unverified(by_load["optimizer_checks"][1])
    assert by_hash["optimizer_checks"][1]["source"] == "server_response"
    from experiment.grading.common import GradeContext
    from experiment.grading.evidence import EvidenceAccess
    from experiment.grading.restoration import REST_4_restores

    result = store.read_result()
    result["initialization_provenance"] = {"version": 1, "arms": {"a": by_load, "b": by_hash}}
    assert REST_4_restores(GradeContext(result=result, evidence=EvidenceAccess(result))) == []


def test_the_grader_recomputes_the_real_create_save_restore_update(session, init_uri, monkeypatch):
    """REST-10 graded from what the check retains: the real restore passes, the weakened one (moments
    lost) is invalid on the recomputed difference."""
    from experiment.contract.result_models import evidence_file
    from experiment.grading.common import GradeContext
    from experiment.grading.evidence import EvidenceAccess
    from experiment.grading.restoration import REST10_EVIDENCE, REST_10

    def graded(check):
        result = {"evidence": {"version": 1, "files": [
            evidence_file(REST10_EVIDENCE, "metrics", json.dumps(check).encode())]}}
        return REST_10(GradeContext(result=result, evidence=EvidenceAccess(result)))

    real = r.restore_update_check(session, init_uri, REQUESTED, _batch(), ADAM, "real", r.RESTORE_UPDATE_ATOL)
    assert graded(real) == []
    original = session.client_from_state
    monkeypatch.setattr(session, "client_from_state",
                        lambda path, requested, with_optimizer=False: original(path, requested, with_optimizer=False))
    weakened = r.restore_update_check(session, init_uri, REQUESTED, _batch(), ADAM, "weakened", r.RESTORE_UPDATE_ATOL)
    issues = graded(weakened)
    assert [i.status for i in issues] == ["invalid"] and "differs from the uninterrupted" in issues[0].message
