"""Restoration checks (REST-4..REST-6): the optimizer check must catch a requested != actual
family or config; hashes are recomputed here with hashlib/struct, never taken from the module."""

from __future__ import annotations

import hashlib
import struct
from types import SimpleNamespace

import numpy as np
import pytest
import tinker
from tinker.types.optimizer import OptimizerConfigBase

from experiment.run.clients import creation_optimizer_config
from experiment.rl.restoration import (
    adapter_sha256_from_info,
    canonical_sha256,
    group_consistency,
    max_abs_difference,
    optimizer_check,
    optimizer_family,
    output_sha256,
    requested_optimizer,
)


def _info(family="adamw", lora_rank=None, **config):
    """A get_info-shaped response; optimizer_config is the SDK's own pydantic type."""
    return SimpleNamespace(optimizer_config=OptimizerConfigBase(type=family, **config), lora_rank=lora_rank)


REQUESTED = {"family": "adamw", "learning_rate": 1e-4, "lora_rank": 8, "seed": 0}


def test_matching_optimizer_is_verified():
    check = optimizer_check(_info(learning_rate=1e-4, lora_rank=8), dict(REQUESTED), 0, "ev.json#c")
    assert check["matches"] is True and check["mismatches"] == []
    assert check["verified_keys"] == ["learning_rate", "lora_rank"]
    assert check["proven_by_initialization"] == ["seed"]
    assert check["not_exposed_keys"] == []
    assert check["actual_family"] == "adamw"
    assert check["actual_config"] == {"learning_rate": 1e-4, "lora_rank": 8}
    assert check["after_restore"] == 0 and check["before_next_update"] is True
    assert check["source"] == "server_response" and check["evidence_ref"] == "ev.json#c"
    assert check["requested"] == REQUESTED


def test_requested_learning_rate_different_from_the_servers_is_a_mismatch():
    check = optimizer_check(_info(learning_rate=2e-4, lora_rank=8), dict(REQUESTED), 1, "ev")
    assert check["matches"] is False
    assert check["verified_keys"] == ["lora_rank"]
    assert len(check["mismatches"]) == 1 and check["mismatches"][0].startswith("learning_rate: requested 0.0001")
    assert "2e-04" in check["mismatches"][0] or "0.0002" in check["mismatches"][0]


def test_requested_family_different_from_the_servers_is_a_mismatch():
    check = optimizer_check(_info(family="dimuon", learning_rate=1e-4, lora_rank=8), dict(REQUESTED), 0, "ev")
    assert check["matches"] is False
    assert check["mismatches"] == ["family: requested 'adamw', server reports 'dimuon'"]
    assert check["verified_keys"] == ["learning_rate", "lora_rank"]


def test_family_and_config_mismatch_together_family_first():
    check = optimizer_check(_info(family="trimuon", learning_rate=3e-4, lora_rank=4), dict(REQUESTED), 0, "ev")
    assert check["matches"] is False and len(check["mismatches"]) == 3
    assert check["mismatches"][0].startswith("family:")


def test_lora_rank_mismatch_from_info():
    check = optimizer_check(_info(learning_rate=1e-4, lora_rank=16), dict(REQUESTED), 0, "ev")
    assert check["matches"] is False and check["mismatches"][0].startswith("lora_rank:")


def test_unreported_keys_are_not_exposed_never_verified():
    check = optimizer_check(_info(), dict(REQUESTED), 0, "ev")
    assert check["matches"] is True  # the family matches, nothing contradicts
    assert check["verified_keys"] == []
    assert check["not_exposed_keys"] == ["learning_rate", "lora_rank"]
    assert check["actual_config"] is None


def test_no_optimizer_config_at_all_is_a_family_mismatch():
    info = SimpleNamespace(optimizer_config=None, lora_rank=None)
    check = optimizer_check(info, {"family": "adamw"}, 0, "ev")
    assert check["matches"] is False and check["actual_family"] is None
    assert check["mismatches"] == ["family: requested 'adamw', server reports None"]


def test_server_state_keys_are_not_configuration():
    info = _info(learning_rate=1e-4, adapter_sha256="ab", optimizer_step=3, last_optim_params={"x": 1})
    check = optimizer_check(info, {"family": "adamw", "learning_rate": 1e-4}, 0, "ev")
    assert check["actual_config"] == {"learning_rate": 1e-4}
    assert check["matches"] is True


def test_numbers_compare_by_value_other_values_exactly():
    assert optimizer_check(_info(beta=1), {"family": "adamw", "beta": 1.0}, 0, "e")["matches"] is True
    assert optimizer_check(_info(mode="a"), {"family": "adamw", "mode": "a"}, 0, "e")["matches"] is True
    assert optimizer_check(_info(mode="a"), {"family": "adamw", "mode": "b"}, 0, "e")["matches"] is False
    assert optimizer_check(_info(beta="1"), {"family": "adamw", "beta": 1}, 0, "e")["matches"] is False
    assert optimizer_check(_info(beta=1.0000001), {"family": "adamw", "beta": 1}, 0, "e")["matches"] is False


def test_spec_names_normalize_to_reported_families():
    assert optimizer_family("adam") == "adamw"
    assert optimizer_family("AdamW") == "adamw"
    assert optimizer_family("trimuon (fork)") == "trimuon"
    assert optimizer_family("DiMuon") == "dimuon"
    assert optimizer_family("sgd") == "sgd"
    assert requested_optimizer("adam", {"lr": 2e-5, "lora_rank": 8, "seed": 1}) == {
        "family": "adamw", "learning_rate": 2e-5, "lora_rank": 8, "seed": 1}


def test_creation_config_sends_only_optimizer_fields():
    config = creation_optimizer_config({"family": "dimuon", "learning_rate": 1e-3, "lora_rank": 8, "seed": 3,
                                        "momentum": 0.9})
    assert config.model_dump() == {"type": "dimuon", "learning_rate": 1e-3, "momentum": 0.9}


def test_canonical_sha256_is_sorted_compact_json():
    assert canonical_sha256({"b": [1, 2], "a": "é"}) == hashlib.sha256(b'{"a":"\\u00e9","b":[1,2]}').hexdigest()
    with pytest.raises(ValueError):
        canonical_sha256({"x": float("nan")})


def _output(*arrays):
    return SimpleNamespace(loss_fn_outputs=[
        {"logprobs": tinker.TensorData.from_numpy(np.asarray(a, dtype=np.float32))} for a in arrays])


def test_output_sha256_is_length_then_float32_le_per_datum():
    a, b = [-0.5, -1.25], [-2.0]
    expected = hashlib.sha256(struct.pack("<q", 2) + struct.pack("<2f", *a) + struct.pack("<q", 1)
                              + struct.pack("<f", *b)).hexdigest()
    assert output_sha256(_output(a, b)) == expected
    # moving a value across the datum boundary changes the hash (lengths are hashed)
    assert output_sha256(_output([-0.5], [-1.25, -2.0])) != expected


def test_adapter_sha256_is_read_from_the_response_extras():
    assert adapter_sha256_from_info(_info(adapter_sha256="f" * 64)) == "f" * 64
    assert adapter_sha256_from_info(_info()) is None
    assert adapter_sha256_from_info(_info(adapter_sha256=5)) is None
    assert adapter_sha256_from_info(SimpleNamespace(optimizer_config=None, model_data=None)) is None


def _entry(uri="tinker://init", adapter="a" * 64, batch="b" * 64, output="c" * 64):
    return {"initialization": {"checkpoint_uri": uri, "adapter_sha256": adapter},
            "initial_output": {"batch_sha256": batch, "output_sha256": output}}


def test_group_consistency():
    assert group_consistency({"t": _entry(), "b": _entry()}) == []
    for field, kwargs in (("initialization.checkpoint_uri", {"uri": "tinker://other"}),
                          ("initialization.adapter_sha256", {"adapter": "d" * 64}),
                          ("initial_output.batch_sha256", {"batch": "e" * 64}),
                          ("initial_output.output_sha256", {"output": "f" * 64})):
        problems = group_consistency({"t": _entry(), "b": _entry(**kwargs)})
        assert len(problems) == 1 and problems[0].startswith(f"{field} differs across arms")
    for field, kwargs in (("initialization.checkpoint_uri", {"uri": None}),
                          ("initial_output.output_sha256", {"output": None})):
        problems = group_consistency({"t": _entry(), "b": _entry(**kwargs)})
        assert problems == [f"{field} missing for ['b']"]
    # a missing adapter hash: only arm b is named, as lacking any proof of its initialization
    problems = group_consistency({"t": _entry(), "b": _entry(adapter=None)})
    assert problems == ["b: neither an adapter sha256 nor a successful load of the initialization checkpoint "
                        "(loaded None) proves its initialization"]
    assert not any(p.startswith("t:") for p in problems)
    # ... unless a successful load of the initialization checkpoint itself proves it
    loaded = _entry(adapter=None)
    loaded["initialization"].update(loaded_checkpoint_uri="tinker://init", load_succeeded=True)
    assert group_consistency({"t": _entry(), "b": loaded}) == []
    failed = _entry(adapter=None)
    failed["initialization"].update(loaded_checkpoint_uri="tinker://init", load_succeeded=False)
    assert group_consistency({"t": _entry(), "b": failed}) == [
        "b: neither an adapter sha256 nor a successful load of the initialization checkpoint "
        "(loaded 'tinker://init') proves its initialization"]
    assert group_consistency({"t": _entry(batch=None), "b": _entry(batch=None)}) == []


def test_max_abs_difference():
    a = [np.array([1.0, 2.0], dtype=np.float32), np.array([3.0], dtype=np.float32)]
    b = [np.array([1.0, 2.5], dtype=np.float32), np.array([1.0], dtype=np.float32)]
    assert max_abs_difference(a, b) == 2.0
    assert max_abs_difference(b, a) == 2.0
    assert max_abs_difference(a, a) == 0.0
    assert max_abs_difference([], []) == 0.0
    assert max_abs_difference(a, b[:1]) == float("inf")
    assert max_abs_difference(a, [b[0], np.array([1.0, 1.0])]) == float("inf")


def test_max_abs_difference_with_the_shorter_list_first_and_long_lists():
    a = [np.array([1.0], dtype=np.float32), np.array([3.0], dtype=np.float32)]
    assert max_abs_difference(a[:1], a) == float("inf")
    many = [np.array([float(j)], dtype=np.float32) for j in range(300)]  # beyond the small-int cache
    shifted = [x + np.float32(0.5) for x in many]
    assert max_abs_difference(many, shifted) == 0.5


@pytest.mark.parametrize("checkpoint_hash", ["0" * 64, "f" * 64], ids=["sorts before", "sorts after"])
def test_a_loaded_adapter_that_differs_from_the_checkpoints_is_a_problem_either_way(checkpoint_hash):
    """Any difference between the loaded adapter's hash ("a" * 64) and the checkpoint's is a problem,
    whichever way the two strings sort."""
    entries = {arm: _entry() for arm in ("t", "b")}
    adapter = entries["t"]["initialization"]["adapter_sha256"]
    assert adapter not in ("0" * 64, "f" * 64)
    for entry in entries.values():
        entry["initialization"]["checkpoint_adapter_sha256"] = checkpoint_hash
    problems = group_consistency(entries)
    assert problems == [f"{arm}: loaded adapter {adapter[:12]} differs from the initialization checkpoint's "
                        f"{checkpoint_hash[:12]}" for arm in ("t", "b")]


def test_a_loaded_adapter_equal_to_the_checkpoints_is_no_problem():
    entries = {arm: _entry() for arm in ("t", "b")}
    for entry in entries.values():
        entry["initialization"]["checkpoint_adapter_sha256"] = entry["initialization"]["adapter_sha256"]
    assert group_consistency(entries) == []


def test_a_successful_load_is_compared_by_uri_value_not_identity():
    """Records come from JSON: the loaded URI and the initialization URI are equal strings, never the
    same object."""
    loaded = _entry(adapter=None)
    loaded["initialization"].update(loaded_checkpoint_uri="".join(["tinker://", "in", "it"]), load_succeeded=True)
    assert loaded["initialization"]["loaded_checkpoint_uri"] is not loaded["initialization"]["checkpoint_uri"]
    assert group_consistency({"t": _entry(), "b": loaded}) == []
