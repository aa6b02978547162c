"""Throughput of the embedded backend (a benchmark, not a test).

    python benchmarks/bench_embedded.py [--model embedded/tiny-random] [--threads 1]

Prints, from one run:
  * forward_backward tokens/s through the HTTP server (stock SDK, server subprocess) next to the
    same computation in this process (the server's own forward_backward function on the same
    model, batch and torch thread count, no HTTP): sequential (submit, wait) and pipelined
    (submit all, then wait) HTTP calls; the goal is a ratio >= 0.8;
  * sampling tokens/s with 1 request at a time and with 64 concurrent requests (batched by the
    server), temperature 1, stop=[] so every request generates max_tokens tokens.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import tinker
import torch
from tinker import types

from embedded_tinker import wire
from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.losses import resolve_config
from embedded_tinker.model import LoraAdapter, LoraConfig, load_base_model
from embedded_tinker.optimizers import create_optimizer
from embedded_tinker.server import TrainingModel, _forward_backward


def make_batch(batch_size: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(3, vocab, length + 1).tolist() for _ in range(batch_size)]


def in_process_tokens_per_second(model_name: str, sequences, rank: int, repeats: int) -> float:
    base = load_base_model(model_name)
    adapter = LoraAdapter(base, LoraConfig(rank=rank))
    model = TrainingModel(
        "bench:train:0",
        base,
        LoraConfig(rank=rank),
        adapter,
        create_optimizer({"type": "adamw"}, adapter.parameters()),
    )
    request = wire.ForwardBackwardRequest(
        model_id=model.model_id,
        seq_id=1,
        data=[
            wire.Datum(
                s[:-1],
                {
                    "target_tokens": np.asarray(s[1:], dtype=np.int64),
                    "weights": np.ones(len(s) - 1, dtype=np.float32),
                },
            )
            for s in sequences
        ],
        loss_fn="cross_entropy",
        loss_fn_config={},
        forward_only=False,
    )
    config = resolve_config("cross_entropy", {})
    _forward_backward(model, request, config)  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        _forward_backward(model, request, config)
    elapsed = time.perf_counter() - started
    return repeats * sum(len(s) - 1 for s in sequences) / elapsed


def http_tokens_per_second(training, sequences, repeats: int, pipelined: bool) -> float:
    data = [
        types.Datum(
            model_input=types.ModelInput.from_ints(s[:-1]),
            loss_fn_inputs={"target_tokens": s[1:], "weights": [1.0] * (len(s) - 1)},
        )
        for s in sequences
    ]
    training.forward_backward(data, "cross_entropy").result()  # warm-up
    started = time.perf_counter()
    if pipelined:
        futures = [training.forward_backward(data, "cross_entropy") for _ in range(repeats)]
        for future in futures:
            future.result()
    else:
        for _ in range(repeats):
            training.forward_backward(data, "cross_entropy").result()
    elapsed = time.perf_counter() - started
    return repeats * sum(len(s) - 1 for s in sequences) / elapsed


def sampling_tokens_per_second(sampler, prompts, concurrent: int, max_tokens: int) -> float:
    params = types.SamplingParams(max_tokens=max_tokens, temperature=1.0, stop=[], seed=0)
    sampler.sample(types.ModelInput.from_ints(prompts[0]), 1, params).result()  # warm-up
    generated = 0
    started = time.perf_counter()
    for first in range(0, len(prompts), concurrent):
        futures = [
            sampler.sample(types.ModelInput.from_ints(p), 1, params)
            for p in prompts[first : first + concurrent]
        ]
        generated += sum(len(f.result().sequences[0].tokens) for f in futures)
    return generated / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="embedded/tiny-random")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, here and in the server")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--sample-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="alternating measurement rounds (median)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    os.environ["EMBEDDED_TINKER_TORCH_THREADS"] = str(args.threads)
    vocab = load_base_model(args.model).config.vocab_size
    sequences = make_batch(args.batch, args.length, vocab)
    prompts = [s[:16] for s in make_batch(64, 16, vocab, seed=1)]

    with start_server() as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            training = client.create_lora_training_client(base_model=args.model, rank=args.rank).result()
            # Alternate the three measurements so machine load affects them alike; report medians.
            rounds = [
                (
                    in_process_tokens_per_second(args.model, sequences, args.rank, args.repeats),
                    http_tokens_per_second(training, sequences, args.repeats, pipelined=False),
                    http_tokens_per_second(training, sequences, args.repeats, pipelined=True),
                )
                for _ in range(args.rounds)
            ]
            local, sequential, pipelined = (float(np.median(column)) for column in zip(*rounds, strict=True))
            sampler = client.create_sampling_client(base_model=args.model).result()
            one_at_a_time = sampling_tokens_per_second(sampler, prompts[:8], 1, args.sample_tokens)
            concurrent = sampling_tokens_per_second(sampler, prompts, 64, args.sample_tokens)
        finally:
            client.close("success")

    print(
        f"model {args.model}, torch threads {args.threads}, batch {args.batch} x {args.length} tokens, "
        f"LoRA rank {args.rank}, median of {args.rounds} alternating rounds"
    )
    print(f"{'forward_backward':<34}{'tokens/s':>12}{'ratio to in-process':>22}")
    print(f"{'  in-process (no HTTP)':<34}{local:>12.0f}{1.0:>22.2f}")
    print(f"{'  HTTP, sequential calls':<34}{sequential:>12.0f}{sequential / local:>22.2f}")
    print(f"{'  HTTP, pipelined calls':<34}{pipelined:>12.0f}{pipelined / local:>22.2f}")
    print(f"{'sampling (' + str(args.sample_tokens) + ' new tokens each)':<34}{'tokens/s':>12}")
    print(f"{'  1 request at a time':<34}{one_at_a_time:>12.0f}")
    print(f"{'  64 concurrent requests':<34}{concurrent:>12.0f}")


if __name__ == "__main__":
    main()
