"""tinker-cookbook's math_rl recipe, run as documented in docs/embedded-backend.md, for 2 steps
against the embedded backend, then resumed for a third step from its last checkpoint.

The resume reads the renderer metadata of the run that saved the checkpoint (GET training_runs/{id})
and restores the optimizer state: the resumed run's checkpoint records optimizer step 3.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tinker

from embedded_tinker.launch import LOCAL_API_KEY, start_server

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_DIR = REPO_ROOT / "embedded_tinker" / "assets" / "tiny-arith"
RENDERER = "qwen3_5_disable_thinking"


def math_rl(base_url: str, log_path: Path, max_steps: int) -> str:
    """The documented command line (smallest sizes); returns the recipe's output."""
    command = [
        sys.executable, "-m", "tinker_cookbook.recipes.math_rl.train",
        f"base_url={base_url}", f"model_name={MODEL_DIR}", f"renderer_name={RENDERER}",
        "env=arithmetic", "lora_rank=4", "groups_per_batch=2", "group_size=2", "max_tokens=8",
        "learning_rate=1e-4", f"max_steps={max_steps}", "save_every=1", "eval_every=0",
        f"log_path={log_path}", "behavior_if_log_dir_exists=resume",
    ]
    environment = {**os.environ, "TINKER_API_KEY": LOCAL_API_KEY, "TINKER_TELEMETRY": "0",
                   "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    completed = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-4000:]
    return output


def final_checkpoint(log_path: Path) -> dict:
    rows = [json.loads(line) for line in (log_path / "checkpoints.jsonl").read_text().splitlines()]
    return [row for row in rows if row["name"] == "final"][-1]


@pytest.mark.slow
def test_math_rl_two_steps_then_resume(tmp_path):
    log_path = tmp_path / "math_rl"
    with start_server(checkpoint_dir=tmp_path / "checkpoints") as server:
        math_rl(server.base_url, log_path, max_steps=2)
        first = final_checkpoint(log_path)
        assert first["batch"] == 2

        output = math_rl(server.base_url, log_path, max_steps=3)
        assert f"Resumed training from {first['state_path']}" in output
        assert f"Renderer metadata matches for checkpoint {first['state_path']}: {RENDERER}" in output
        assert "Could not fetch renderer metadata" not in output

        resumed = final_checkpoint(log_path)
        assert resumed["batch"] == 3 and resumed["state_path"] != first["state_path"]
        steps = [json.loads(line)["progress/batch"] for line in (log_path / "metrics.jsonl").read_text().splitlines()]
        assert steps == [0, 1, 2]

        rest = tinker.RestClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        info = rest.get_weights_info_by_tinker_path(resumed["state_path"]).result()
        assert info.optimizer_config.optimizer_step == 3  # the Adam state came along with the weights
        run = rest.get_training_run_by_tinker_path(resumed["state_path"]).result()
        assert run.user_metadata["renderer_name"] == RENDERER and run.base_model == str(MODEL_DIR)
