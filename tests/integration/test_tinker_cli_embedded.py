"""The stock `tinker` CLI (0.38) and the cookbook's renderer lookup against the embedded backend.

One server subprocess; a model trained one step through the SDK, saved as a training and a sampler
checkpoint; then the stock CLI (`--format json`) lists, describes and downloads them. The CLI's own
click command runs in this process (click's CliRunner: the same code as the `tinker` executable,
without a ~2 s interpreter start per call); one test runs the installed `tinker` executable itself.
A server restarted on the same checkpoint directory still lists the run and its renderer metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import httpx
import pytest
import tinker
from click.testing import CliRunner
from safetensors.numpy import load_file
from tinker.cli.__main__ import main_cli as tinker_cli
from tinker_cookbook import checkpoint_utils

from embedded_tinker.launch import LOCAL_API_KEY, start_server

MODEL = "embedded/tiny-random"
RENDERER = "qwen3_5_disable_thinking"
TINKER_CLI = str(Path(sys.executable).parent / "tinker") if (Path(sys.executable).parent / "tinker").exists() \
    else shutil.which("tinker")


def cli_environment(server) -> dict[str, str]:
    return {"TINKER_BASE_URL": server.base_url, "TINKER_API_KEY": LOCAL_API_KEY, "TINKER_TELEMETRY": "0"}


def run_cli(server, *args: str):
    """The stock CLI's click command, in process; returns (exit code, output)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        result = CliRunner().invoke(tinker_cli, ["--format", "json", *args], env=cli_environment(server))
    error = result.exception  # the CLI's TinkerCliError (main() prints message and details to stderr)
    message = f"{getattr(error, 'message', error)}\n{getattr(error, 'details', '')}" if error else ""
    return (1 if error and not result.exit_code else result.exit_code), result.output + message


def cli_json(server, *args: str):
    exit_code, output = run_cli(server, *args)
    assert exit_code == 0, output
    return json.loads(output)


def test_the_tinker_executable_lists_checkpoints(server, trained):
    completed = subprocess.run([TINKER_CLI, "--format", "json", "checkpoint", "list"], capture_output=True,
                               text=True, env={**os.environ, **cli_environment(server)}, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert trained["state"] in {c["tinker_path"] for c in json.loads(completed.stdout)["checkpoints"]}


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("checkpoints")


@pytest.fixture(scope="module")
def server(checkpoint_dir):
    with start_server(checkpoint_dir=checkpoint_dir) as running:
        yield running


@pytest.fixture(scope="module")
def trained(server):
    """One trained run: (run_id, training checkpoint path, sampler checkpoint path, adapter sha256)."""
    service = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    training = service.create_lora_training_client(base_model=MODEL, rank=2,
                                                   user_metadata={"renderer_name": RENDERER}).result()
    tokens = training.get_tokenizer().encode("Tom has 3 apples and buys 4 more. \\boxed{7}")
    datum = tinker.Datum(model_input=tinker.ModelInput.from_ints(tokens[:-1]),
                         loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})
    training.forward_backward([datum], "cross_entropy").result()
    training.optim_step(tinker.AdamParams(learning_rate=1e-2)).result()
    state = training.save_state("step-1").result().path
    sampler = training.save_weights_for_sampler("sampler-1").result().path
    rest = tinker.RestClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    info = rest.get_weights_info_by_tinker_path(state).result()
    yield {"service": service, "training": training, "run_id": training.model_id, "state": state, "sampler": sampler,
           "adapter_sha256": info.optimizer_config.adapter_sha256}
    service.close("success").result()


def test_run_list_and_info_show_the_run_with_its_metadata(server, trained):
    runs = cli_json(server, "run", "list")["runs"]
    run = next(r for r in runs if r["training_run_id"] == trained["run_id"])
    assert run["base_model"] == MODEL and run["is_lora"] and run["lora_rank"] == 2
    assert run["user_metadata"] == {"renderer_name": RENDERER}
    assert run["last_checkpoint"]["tinker_path"] == trained["state"]
    assert run["last_sampler_checkpoint"]["tinker_path"] == trained["sampler"]

    info = cli_json(server, "run", "info", trained["run_id"])
    assert info["training_run_id"] == trained["run_id"] and info["model_owner"]


def test_checkpoint_list_and_info(server, trained):
    listed = cli_json(server, "checkpoint", "list", "--run-id", trained["run_id"])["checkpoints"]
    assert {(c["checkpoint_type"], c["tinker_path"]) for c in listed} == {
        ("training", trained["state"]), ("sampler", trained["sampler"])}
    assert all(c["size_bytes"] > 0 for c in listed)

    everywhere = cli_json(server, "checkpoint", "list")["checkpoints"]
    assert {trained["state"], trained["sampler"]} <= {c["tinker_path"] for c in everywhere}

    info = cli_json(server, "checkpoint", "info", trained["state"])
    assert info["checkpoint_id"] == "weights/step-1" and info["checkpoint_type"] == "training"


def test_checkpoint_download_gives_the_checkpoints_adapter(server, trained, tmp_path):
    result = cli_json(server, "checkpoint", "download", trained["state"], "--output", str(tmp_path))
    destination = Path(result["destination"])
    assert sorted(p.name for p in destination.iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors", "checkpoint.json"]
    config = json.loads((destination / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["r"] == 2 and config["base_model_name_or_path"] == MODEL

    # Hash the downloaded tensors ourselves (float32 little-endian bytes, A then B per module, in the
    # checkpoint's recorded order): they are exactly the trained adapter the server reported.
    tensors = load_file(str(destination / "adapter_model.safetensors"))
    order = json.loads((destination / "checkpoint.json").read_text())["adapter_tensor_order"]
    digest = hashlib.sha256()
    for name in order:
        digest.update(tensors[f"base_model.model.{name}.weight"].astype("<f4").tobytes())
    assert digest.hexdigest() == trained["adapter_sha256"]
    assert any(abs(t).sum() > 0 for name, t in tensors.items() if name.endswith("lora_B.weight"))

    # The temporary export the CLI created was deleted again; the checkpoint itself is untouched.
    listed = cli_json(server, "checkpoint", "list")["checkpoints"]
    assert not [c for c in listed if c["checkpoint_type"] == "external"]
    assert trained["state"] in {c["tinker_path"] for c in listed}


def test_export_urls_are_signed(server, trained):
    rest = tinker.RestClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    export = trained["training"].save_weights_external("probe").result().path
    try:
        urls = rest.get_external_weights_urls(export).result().urls
        url = urls["adapter_config.json"]
        assert httpx.get(url).json()["peft_type"] == "LORA"  # the signed URL itself is served
        tampered = re.sub(r"signature=[0-9a-f]", lambda m: m.group(0)[:-1] + ("0" if m.group(0)[-1] != "0" else "1"), url)
        later = re.sub(r"expires=(\d+)", lambda m: f"expires={int(m.group(1)) + 10}", url)
        other_file = url.replace("adapter_config.json", "checkpoint.json")
        for forged in (tampered, later, other_file):
            assert httpx.get(forged).status_code == 403
    finally:
        rest.delete_checkpoint_from_tinker_path(export).result()
    assert export not in {c["tinker_path"] for c in cli_json(server, "checkpoint", "list")["checkpoints"]}


def test_training_checkpoints_cannot_be_deleted(server, trained):
    exit_code, output = run_cli(server, "checkpoint", "delete", trained["state"], "--yes")
    assert "immutable" in output
    listed = cli_json(server, "checkpoint", "list", "--run-id", trained["run_id"])["checkpoints"]
    assert trained["state"] in {c["tinker_path"] for c in listed}


def test_unknown_run_is_not_found(server):
    exit_code, output = run_cli(server, "run", "info", "sess-000000000000:train:9")
    assert exit_code != 0 and "not found" in output.lower()


def test_cookbook_renderer_lookup_reads_the_runs_metadata(trained):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        found = checkpoint_utils.get_renderer_name_from_checkpoint(trained["service"], trained["state"])
    assert found == RENDERER


def test_a_restarted_server_still_lists_the_run(server, trained, checkpoint_dir):
    trained["service"].close("success").result()  # before its server goes (a later close is a no-op)
    server.stop()
    # Same address, as a restarted service keeps its URL (the in-process CLI, run against a new
    # port, kept trying the old one).
    with start_server(port=server.port, checkpoint_dir=checkpoint_dir) as restarted:
        runs = cli_json(restarted, "run", "list")["runs"]
        run = next(r for r in runs if r["training_run_id"] == trained["run_id"])
        assert run["user_metadata"] == {"renderer_name": RENDERER} and run["lora_rank"] == 2
        info = cli_json(restarted, "checkpoint", "info", trained["state"])
        assert info["tinker_path"] == trained["state"]
