"""The Spindle-shaped service profile (embedded_tinker/service_profile.py, docs/service-profile.md).

The profile's figures reproduce the measured phase totals; through the stock SDK every profiled call
is held for at least its service time on its lane (lower bounds only: a call is never answered
before its service time has passed, by construction, so no assertion depends on how fast the
machine is); the profile composes with the capacity fault; the server the CLI starts on demand
takes the profile from the environment.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import Future

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")

import httpx
import pytest
import tinker
from tinker import types

from embedded_tinker.faults import FaultConfig
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.service_profile import SPINDLE_QWEN35_2B, ServiceSchedule, profile_named

MODEL = "embedded/tiny-random"
TOKENS = [5, 17, 99, 23, 8, 41, 77, 3, 250, 12]


def datum() -> types.Datum:
    return types.Datum(
        model_input=types.ModelInput.from_ints(TOKENS[:-1]),
        loss_fn_inputs={"target_tokens": TOKENS[1:], "weights": [1.0] * (len(TOKENS) - 1)},
    )


def test_the_profile_reproduces_the_phases_measured_on_spindle():
    profile = SPINDLE_QWEN35_2B
    assert profile.seconds("create_from_checkpoint") == pytest.approx(30.0)  # setup
    assert profile.rl_step_seconds(64) == pytest.approx(37.0)  # one RL step of 64 rollouts
    assert profile.seconds("sample_greedy", 1319) == pytest.approx(26.0)  # greedy evaluation of 1,319 items
    scaled = profile_named("spindle-qwen3.5-2b", 0.01)
    assert scaled.rl_step_seconds(64) == pytest.approx(0.37)
    assert profile_named("none") is None
    with pytest.raises(ValueError, match="unknown service profile"):
        profile_named("spindle-qwen9")
    with pytest.raises(ValueError, match="time factor"):
        profile.scaled(0)


def test_calls_on_one_lane_are_served_one_after_another_and_lanes_side_by_side():
    profile = SPINDLE_QWEN35_2B.scaled(0.05)  # optim_step: 0.16 s
    cost = profile.seconds("optim_step")
    schedule = ServiceSchedule(profile)
    finished: dict[str, float] = {}
    started = time.monotonic()
    held = {}
    for name, lane in (("first", "model-a"), ("second", "model-a"), ("other", "model-b")):
        work: Future = Future()
        work.set_result(name)  # the embedded work itself is already done: only the profile holds it
        held[name] = schedule.hold(lane, "optim_step", 1, work)
        held[name].add_done_callback(lambda f, n=name: finished.setdefault(n, time.monotonic()))
    assert {name: future.result(timeout=10) for name, future in held.items()} == {
        "first": "first", "second": "second", "other": "other"}
    assert finished["first"] - started >= cost
    assert finished["second"] - started >= 2 * cost  # queued behind the first on its lane
    assert finished["other"] - started >= cost
    report = schedule.report()
    assert report["calls"] == 3 and report["overran"] == 0
    assert report["service_seconds"] >= 3 * cost - 1e-6
    assert report["scheduled_seconds"] == pytest.approx(3 * cost)  # the profile's rates, whatever the machine did


def test_every_call_of_an_rl_step_is_held_for_its_service_time(tmp_path):
    profile = SPINDLE_QWEN35_2B.scaled(0.01)
    with start_server(checkpoint_dir=tmp_path, in_process=True, profile=profile) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            training = client.create_lora_training_client(base_model=MODEL, rank=2).result()
            sampler = training.save_weights_and_get_sampling_client().result()
            rollouts = sampler.sample(types.ModelInput.from_ints(TOKENS), 4,
                                      types.SamplingParams(max_tokens=4, temperature=1.0, seed=1)).result()
            greedy = sampler.sample(types.ModelInput.from_ints(TOKENS), 1,
                                    types.SamplingParams(max_tokens=4, temperature=0.0)).result()
            training.forward_backward([datum()] * 4, "cross_entropy").result()
            training.optim_step(types.AdamParams(learning_rate=1e-3)).result()
        finally:
            client.close("success")
        report = httpx.get(f"{server.base_url}/api/v1/healthz").json()["service_profile"]
    assert len(rollouts.sequences) == 4 and len(greedy.sequences) == 1
    expected = (profile.seconds("create_model") + profile.seconds("sampler_weights") + profile.seconds("sample", 4)
                + profile.seconds("sample_greedy", 1) + profile.seconds("forward_backward", 4)
                + profile.seconds("optim_step"))
    assert report["name"] == "spindle-qwen3.5-2b" and report["time_factor"] == 0.01
    assert report["calls"] == 6
    assert report["service_seconds"] >= expected - 1e-6
    assert report["scheduled_seconds"] == pytest.approx(expected)
    assert report["busy_seconds"] >= expected - 1e-6  # one client, one call after another


def test_a_create_refused_for_capacity_passes_through_the_profile(tmp_path):
    faults = FaultConfig(capacity_exhausted_seconds=600)
    with start_server(checkpoint_dir=tmp_path, faults=faults, in_process=True,
                      profile=SPINDLE_QWEN35_2B.scaled(0.01)) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            with pytest.raises(tinker.RequestFailedError, match="trainer capacity exhausted"):
                client.create_lora_training_client(base_model=MODEL, rank=2).result()
        finally:
            client.close("success")
        report = httpx.get(f"{server.base_url}/api/v1/healthz").json()["service_profile"]
    assert report["calls"] >= 1 and report["overran"] == 0


def test_the_server_started_on_demand_takes_the_profile_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBEDDED_TINKER_SERVICE_PROFILE", "spindle-qwen3.5-2b")
    monkeypatch.setenv("EMBEDDED_TINKER_TIME_FACTOR", "0.02")
    with start_server(checkpoint_dir=tmp_path) as server:  # a subprocess, as the CLI starts it
        report = httpx.get(f"{server.base_url}/api/v1/healthz").json()
    assert report["service_profile"]["name"] == "spindle-qwen3.5-2b"
    assert report["service_profile"]["time_factor"] == 0.02

    monkeypatch.setenv("EMBEDDED_TINKER_SERVICE_PROFILE", "spindle-qwen9")
    with pytest.raises(RuntimeError, match="unknown service profile 'spindle-qwen9'"):
        start_server(checkpoint_dir=tmp_path)


def test_an_adapter_export_is_served_under_the_profile_as_a_checkpoint_save(tmp_path):
    # save_weights_external reached the profile with no call kind: HTTP 500 "unknown call kind ''",
    # and the correctness preflight (it exports the adapter) never finished under a profile
    profile = SPINDLE_QWEN35_2B.scaled(0.01)
    with start_server(checkpoint_dir=tmp_path, in_process=True, profile=profile) as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            training = client.create_lora_training_client(base_model=MODEL, rank=2).result()
            export = training.save_weights_external("adapter-0").result()
        finally:
            client.close("success")
        report = httpx.get(f"{server.base_url}/api/v1/healthz").json()["service_profile"]
    assert export.path.endswith("/external_weights/adapter-0")
    assert report["calls"] == 2  # create, export
    assert report["service_seconds"] >= profile.seconds("create_model") + profile.seconds("save_checkpoint") - 1e-6
