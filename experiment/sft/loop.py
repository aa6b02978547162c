"""Supervised fine-tuning (SFT) on the stock tinker SDK, for any optimizer family.

The cookbook's SFT loop is AdamW-only, so this is the pipeline's own, kept to the cookbook's
pieces: its renderer for the model, `conversation_to_datum` with 0/1 weights (reduction "none":
every assistant token counts once), `forward_backward(..., "cross_entropy")`, then `optim_step`
with the run's optimizer family. Every run of a comparison consumes the same batches in the same
order (one seed-0 shuffle of the training rows, cut into consecutive batches).

Per step the record keeps the summed loss, the counted tokens and the optimizer wall time: the
seconds from sending `optim_step` to its result, measured after `forward_backward` returned, so
it covers the optimizer update alone (plus one round trip).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import tinker
from tinker import types
from tinker.types.optimizer import OptimParamsBase

from experiment.contract.spec import Spec
from experiment.data import read_capped_bytes, read_capped_text, resolve_data_path, seeded_shuffle
from experiment.sft.loss_eval import LossEval

from experiment.contract.rollout import DEFAULT_RENDERER  # noqa: E402  (one home)
EVAL_BATCH_SIZE = 16  # forward requests during held-out scoring; batching cannot change the result


@dataclass(frozen=True)
class ChatExample:
    id: str
    messages: list[dict[str, str]]


# the preflights' fixed batch: the first this many training examples (the correctness preflight's updates,
# the restoration preflight's outputs; the probe checks first that each has tokens to train on)
FIXED_BATCH_SIZE = 4


@dataclass(frozen=True)
class SFTSettings:
    batch_size: int
    max_seq_len: int
    steps: int
    n_eval: int
    renderer_name: str
    seed: int


def sft_settings(spec: Spec) -> SFTSettings:
    raw = spec.to_dict()
    return SFTSettings(
        batch_size=int(raw["batch_size"]),
        max_seq_len=int(raw["max_seq_len"]),
        steps=int(raw["steps"]),
        n_eval=int(raw["eval"]["n_examples"]),
        renderer_name=(raw.get("rollout") or {}).get("renderer", DEFAULT_RENDERER),
        seed=int(next((arm.get("seed") for arm in raw.get("arms", []) if arm.get("seed") is not None), 0)),
    )


# ---------------------------------------------------------------- data


def _example(row: dict[str, Any], index: int, source: str) -> ChatExample:
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{source} row {index}: no 'messages' list (the no_robots schema)")
    cleaned = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
    return ChatExample(id=str(row.get("prompt_id") or f"{source}#{index}"), messages=cleaned)


def load_chat_file(path: str | Path) -> list[ChatExample]:
    """Rows in the no_robots schema from a local JSONL or Parquet file (offline)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pandas as pd

        import io

        rows = pd.read_parquet(io.BytesIO(read_capped_bytes(path))).to_dict(orient="records")
        rows = [{**row, "messages": list(row["messages"])} for row in rows]
    else:
        rows = [json.loads(line) for line in read_capped_text(path).splitlines() if line.strip()]
    return [_example(row, index, path.name) for index, row in enumerate(rows)]


def load_chat_hub(hf_path: str, split: str) -> list[ChatExample]:
    """Rows from the Hugging Face Hub through `datasets` (production: HuggingFaceH4/no_robots)."""
    from datasets import load_dataset

    dataset = load_dataset(hf_path, split=split)
    return [_example(row, index, f"{hf_path}:{split}") for index, row in enumerate(dataset)]


def training_examples(spec: Spec, seed: int | None = None) -> list[ChatExample]:
    """The spec's training rows in the order every run at `seed` shares (default: the arms' seed, else 0; one
    shuffle per seed), the first dataset.n_examples of it."""
    dataset = spec.to_dict()["dataset"]
    rows = load_chat_file(resolve_data_path(dataset["path"])) if dataset.get("path") else load_chat_hub(dataset["hf_path"], "train")
    ordered = seeded_shuffle(rows, seed=sft_settings(spec).seed if seed is None else seed)
    n = int(dataset.get("n_examples") or len(ordered))
    if n > len(ordered):
        raise ValueError(f"dataset.n_examples is {n} but the training split has {len(ordered)} rows")
    return ordered[:n]


def heldout_examples(spec: Spec) -> list[ChatExample]:
    """Exactly eval.n_examples held-out rows, in split order (never floor-divided by a batch size)."""
    raw = spec.to_dict()
    evaluation, dataset = raw["eval"], raw["dataset"]
    if evaluation.get("path"):
        rows = load_chat_file(resolve_data_path(evaluation["path"]))
    else:
        rows = load_chat_hub(dataset["hf_path"], "test")
    n = int(evaluation["n_examples"])
    if n > len(rows):
        raise ValueError(f"eval.n_examples is {n} but the held-out split has {len(rows)} rows")
    return rows[:n]


def step_batches(order: Sequence[ChatExample], batch_size: int, steps: int) -> list[list[ChatExample]]:
    """Consecutive batches of the shared order, one per step (wrapping into a new epoch if needed)."""
    if not order:
        raise ValueError("no training rows")
    return [[order[(step * batch_size + i) % len(order)] for i in range(batch_size)] for step in range(steps)]


def batch_id(step: int, batch: Sequence[ChatExample]) -> str:
    """Names the batch by its step and content: equal ids mean the same rows in the same order."""
    digest = hashlib.sha256(json.dumps([example.id for example in batch]).encode()).hexdigest()
    return f"step{step:04d}-{digest[:16]}"


# ---------------------------------------------------------------- datums


class _DropExtensionPropertyWarning(logging.Filter):
    """The cookbook warns on every datum that ALL_ASSISTANT_MESSAGES meets a renderer without the
    extension property (earlier assistant turns of a multi-turn row see their thinking stripped).
    Training on all assistant messages is the cookbook NoRobotsBuilder's own default and the spec's
    metric ("NLL on assistant tokens"), so the choice is deliberate and stated once, here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "extension property" not in record.getMessage()


logging.getLogger("tinker_cookbook.renderers.base").addFilter(_DropExtensionPropertyWarning())


def to_datum(example: ChatExample, renderer: Any, max_seq_len: int) -> tinker.Datum:
    """The cookbook datum with 0/1 weights on every assistant token (reduction "none")."""
    from tinker_cookbook.supervised.data import conversation_to_datum

    return conversation_to_datum(example.messages, renderer, max_seq_len, reduction="none")


def datum_weights(datum: tinker.Datum) -> np.ndarray:
    return np.asarray(datum.loss_fn_inputs["weights"].to_numpy(), dtype=np.float64)


def untrained_examples(examples: list[ChatExample], renderer: Any, max_seq_len: int) -> list[str]:
    """Ids of the examples that keep no assistant token within max_seq_len (their datum weighs nothing)."""
    return [example.id for example in examples if not datum_weights(to_datum(example, renderer, max_seq_len)).any()]


# ---------------------------------------------------------------- optimizer params


def optim_params(family: str, learning_rate: float, config: dict[str, Any]) -> Any:
    """The per-step params object of a family, with the run's LR and the arm's declared settings."""
    beta1 = float(config.get("beta1", 0.9))
    clip = float(config.get("grad_clip_norm", 0.0))
    if family == "dimuon":
        return types.DimuonParams(learning_rate=learning_rate, beta1=beta1, grad_clip_norm=clip)
    if family == "adamw":  # the AdamW settings the arm states (beta2, eps, weight_decay), else the SDK's defaults
        stated = {key: float(config[key]) for key in ("beta2", "eps", "weight_decay") if key in config}
        return types.AdamParams(learning_rate=learning_rate, beta1=beta1, grad_clip_norm=clip, **stated)
    return OptimParamsBase(type=family, learning_rate=learning_rate, beta1=beta1, grad_clip_norm=clip)


# ---------------------------------------------------------------- training and scoring


@dataclass
class StepRecord:
    run: str
    step: int
    batch_id: str
    loss_sum: float
    n_tokens: int
    train_nll_token_mean: float
    forward_backward_seconds: float
    optim_seconds: float
    grad_norm: float | None

    def summary(self) -> dict[str, Any]:
        return asdict(self)


ServiceCall = Callable[[Callable[[], Any]], Any]  # the run's service caller (RunContext.call_service)


def train_step(client: tinker.TrainingClient, datums: list[tinker.Datum], params: Any, run: str, step: int,
               batch: str, *, call: ServiceCall) -> StepRecord:
    """One SFT step (forward_backward, then optim_step), each request through `call`: the run's capacity
    policy and answer deadline."""
    started = time.perf_counter()
    output = call(lambda: client.forward_backward(datums, "cross_entropy").result())
    forward_backward_seconds = time.perf_counter() - started
    started = time.perf_counter()
    optim = call(lambda: client.optim_step(params).result())
    optim_seconds = time.perf_counter() - started
    n_tokens = int(sum((datum_weights(d) > 0).sum() for d in datums))
    loss_sum = float(output.metrics["loss:sum"])
    return StepRecord(
        run=run, step=step, batch_id=batch, loss_sum=loss_sum, n_tokens=n_tokens,
        train_nll_token_mean=loss_sum / n_tokens if n_tokens else float("nan"),
        forward_backward_seconds=forward_backward_seconds, optim_seconds=optim_seconds,
        grad_norm=(optim.metrics or {}).get("grad_norm:mean"),
    )


def score_heldout(client: tinker.TrainingClient, datums: list[tinker.Datum], ids: list[str],
                  aggregation: str = "token_mean",
                  on_progress: Callable[[int, int], None] | None = None, *, call: ServiceCall) -> LossEval:
    """Held-out loss with forward(..., "cross_entropy"), per-example totals (LOSS-1), each request through
    `call` (the run's service caller). `on_progress(done, total)` is called after every forward request."""
    evaluator = LossEval(aggregation)
    for start in range(0, len(datums), EVAL_BATCH_SIZE):
        chunk = datums[start:start + EVAL_BATCH_SIZE]
        output = call(lambda: client.forward(chunk, "cross_entropy").result())
        evaluator.add_output(output, [datum_weights(d) for d in chunk], example_ids=ids[start:start + EVAL_BATCH_SIZE])
        if on_progress is not None:
            on_progress(start + len(chunk), len(datums))
    return evaluator
