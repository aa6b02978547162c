"""The pipeline side of the production exposure profile: what the records say when a service
exposes neither an adapter hash nor the optimizer configuration (only `{"type": family}`).

The responses are built with the stock SDK's own response types, in the shapes the production
service answers (docs/tinker-protocol/README.md; issue 11): the exposure is read from them,
never from a flag.
"""

from __future__ import annotations

import pytest
from tinker import types
from tinker.types.optimizer import OptimizerConfigBase

from experiment.rl import restoration as r
from experiment.service.target import ServiceConfigError, ServiceTarget

REQUESTED = {"family": "trimuon", "beta1": 0.9, "grad_clip_norm": 0.0, "learning_rate": 0.04}


def _info(**optimizer) -> types.GetInfoResponse:
    return types.GetInfoResponse(
        model_id="s:train:0", model_data=types.ModelData(arch="tiny", model_name="embedded/tiny-arith"),
        optimizer_config=OptimizerConfigBase(**optimizer), is_lora=True, lora_rank=8,
    )


PRODUCTION_INFO = _info(type="trimuon")  # get_info's optimizer_config on production: the family only
EMBEDDED_INFO = _info(type="trimuon", beta1=0.9, grad_clip_norm=0.0, learning_rate=0.04, polar_step="polar_switch",
                      adapter_sha256="ab" * 32, optimizer_step=0, last_optim_params=None)


def test_exposure_is_read_from_the_response():
    assert r.service_exposure(PRODUCTION_INFO) == {
        "adapter_sha256": False, "optimizer_family": "trimuon", "optimizer_config_keys": [],
        "optimizer_config": "family_only"}
    embedded = r.service_exposure(EMBEDDED_INFO)
    assert embedded["adapter_sha256"] is True and embedded["optimizer_config"] == "full"


def test_family_only_response_leaves_the_config_unverified_not_passed():
    check = r.optimizer_check(PRODUCTION_INFO, REQUESTED, after_restore=0, evidence_ref="restoration-x.json")
    assert check["source"] == "declared" and check["actual_config"] is None
    assert check["actual_family"] == "trimuon" and check["family_source"] == "server_response"
    assert check["unverified"] is True and "only the optimizer family" in check["unverified_reason"]
    assert check["verified_keys"] == [] and check["matches"] is True  # nothing contradicts, nothing verified
    assert r.config_unverified(check)


def test_family_mismatch_still_stops_under_production():
    check = r.optimizer_check(_info(type="adamw"), REQUESTED, after_restore=1, evidence_ref="e.json")
    assert not check["matches"] and "family" in check["mismatches"][0]


def test_embedded_response_verifies_the_config():
    check = r.optimizer_check(EMBEDDED_INFO, REQUESTED, after_restore=0, evidence_ref="e.json")
    assert check["source"] == "server_response" and not r.config_unverified(check)
    assert sorted(check["verified_keys"]) == ["beta1", "grad_clip_norm", "learning_rate"]


def test_checkpoint_proof_from_the_load_response():
    uri = "tinker://s:train:0/weights/init-full-run"
    entry = r.initialization_from_checkpoint("embedded/tiny-arith", uri,
                                             types.LoadWeightsResponse(path=uri, model_id="s:train:3"),
                                             "restoration-trimuon-lr0.04.json", None)
    for key, value in {"source": "server_response", "checkpoint_uri": uri, "checkpoint_immutable": True,
                       "checkpoint_scope": "full_initialization", "loaded_checkpoint_uri": uri,
                       "load_succeeded": True, "before_first_update": True,
                       "evidence_ref": "restoration-trimuon-lr0.04.json"}.items():
        assert entry[key] == value
    other = r.initialization_from_checkpoint("m", uri, types.LoadWeightsResponse(path="tinker://other"), "e", None)
    assert other["load_succeeded"] is False


def _member(init: dict) -> dict:
    return {"initialization": init, "optimizer_checks": [],
            "initial_output": {"batch_sha256": "b" * 64, "output_sha256": "o" * 64}}


def test_group_needs_one_proof_per_member():
    uri = "tinker://s:train:0/weights/init"
    proven = r.initialization_from_checkpoint("m", uri, types.LoadWeightsResponse(path=uri), "e", None)
    declared = {**proven, "loaded_checkpoint_uri": None, "load_succeeded": False}  # a declared URI proves nothing
    assert r.group_consistency({"a": _member(proven), "b": _member(proven)}) == []
    problems = r.group_consistency({"a": _member(proven), "b": _member(declared)})
    assert any("b: neither an adapter sha256 nor a successful load" in p for p in problems)


def test_unverified_configuration_is_a_limit_not_a_stop():
    uri = "tinker://s:train:0/weights/init"
    proven = r.initialization_from_checkpoint("m", uri, types.LoadWeightsResponse(path=uri), "e", None)
    member = _member(proven)
    member["optimizer_checks"] = [r.optimizer_check(PRODUCTION_INFO, REQUESTED, 0, "e")]
    problems, unverified = r.provenance_findings({"a": member, "b": member})
    assert problems == [] and len(unverified) == 2


def test_exposure_profile_names_are_checked(monkeypatch):
    monkeypatch.delenv("TINKER_BASE_URL", raising=False)
    assert ServiceTarget.from_backend("local", exposure="production").describe()["exposure"] == "production"
    with pytest.raises(ServiceConfigError):
        ServiceTarget.from_backend("local", exposure="staging")
