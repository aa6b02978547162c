"""Two arm threads restoring at once both keep their restore record (initialization_provenance).

Arm training runs one thread per arm; on a resume (or a capacity refusal) both restore a client at
about the same time and each appends its restore to `initialization_provenance`. That is a
read-modify-write of one RESULT field: unserialized, the second write replaces the first and one
arm's restore record is lost (restore_count 0, no optimizer check for that restore). The test
forces the interleaving (both threads read RESULT before either writes) and shows the loss with
the store's lock taken out, then shows that the real code keeps both.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from tinker import types
from tinker.types.optimizer import OptimizerConfigBase

from experiment.rl import restoration as r
from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.run.store import RunStore

SPEC = Path(__file__).resolve().parents[2] / "specs" / "gs1_kernel_vs_grpo_gsm8k.json"
REQUESTED = {"family": "adamw", "learning_rate": 4e-5}


class _NoLock:
    """The weakened store: no serialization at all."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _info(arm: str) -> types.GetInfoResponse:
    """A get_info response as the embedded backend answers it (family + config echoed)."""
    return types.GetInfoResponse(
        model_id=f"session:train:{arm}", model_data=types.ModelData(arch="tiny", model_name="embedded/tiny-arith"),
        optimizer_config=OptimizerConfigBase(type="adamw", learning_rate=4e-5), is_lora=True, lora_rank=8,
    )


def _restore_both_at_once(store: RunStore) -> None:
    """Both threads read RESULT, then wait (at most 1 s) for the other to have read as well."""
    both_read = threading.Barrier(2, timeout=1.0)
    original = store.read_result

    def read_then_wait():
        result = original()
        if threading.current_thread().name.startswith("arm-"):
            try:
                both_read.wait()
            except threading.BrokenBarrierError:  # the other thread could not read yet (it waits on the lock)
                pass
        return result

    store.read_result = read_then_wait
    threads = [threading.Thread(name=f"arm-{arm}", target=r.record_restore,
                                args=(store, arm, _info(arm), REQUESTED, f"tinker://x/weights/{arm}-step-3", True))
               for arm in ("gs1_kernel", "grpo_gs8")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    store.read_result = original


@pytest.fixture
def store(tmp_path):
    spec = load_spec(SPEC, rehearse=True)
    return RunStore.create(tmp_path / "runs", spec, build_plan(spec))


def test_without_the_lock_one_arms_restore_record_is_lost(store):
    store._lock = _NoLock()  # the weakened version: no read-modify-write serialization
    _restore_both_at_once(store)
    arms = store.read_result()["initialization_provenance"]["arms"]
    recorded = [arm for arm in ("gs1_kernel", "grpo_gs8") if arms.get(arm, {}).get("restore_count") == 1]
    assert len(recorded) == 1  # the loss: one thread's write replaced the other's


def test_the_store_lock_keeps_both_restore_records(store):
    _restore_both_at_once(store)
    arms = store.read_result()["initialization_provenance"]["arms"]
    for arm in ("gs1_kernel", "grpo_gs8"):
        assert arms[arm]["restore_count"] == 1
        [check] = arms[arm]["optimizer_checks"]
        assert check["after_restore"] == 1 and check["source"] == "server_response"
        assert check["evidence_ref"] in {f["name"] for f in store.read_result()["evidence"]["files"]}


def test_consecutive_restores_number_one_to_restore_count(store):
    for _ in range(3):
        r.record_restore(store, "gs1_kernel", _info("gs1_kernel"), REQUESTED, "tinker://x/weights/s", True)
    entry = store.read_result()["initialization_provenance"]["arms"]["gs1_kernel"]
    assert entry["restore_count"] == 3
    assert [c["after_restore"] for c in entry["optimizer_checks"]] == [1, 2, 3]
