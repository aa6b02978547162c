"""Throughput of the embedded backend against plain in-process torch/transformers (a benchmark).

    python benchmarks/bench_embedded.py [--json] [--model embedded/tiny-arith] [--rounds 5]

Everything is measured in one run, with the same weights and one torch thread on both sides (the
server subprocess gets EMBEDDED_TINKER_TORCH_THREADS); the two sides of each comparison alternate
for --rounds rounds so that machine load hits them alike, and medians are reported:

  * sampling: the server, through the stock SDK over HTTP, answering --prompts concurrent
    requests (one sample each, seeded, temperature 1, stop=[] so every request generates
    --sample-tokens tokens), against transformers ``generate()`` in this process on a plain
    Qwen3ForCausalLM with the same weights, batch --prompts, KV cache, do_sample at temperature 1
    (no top-k/top-p), exactly --sample-tokens new tokens. Guard: ratio >= 0.9 (below).
    Also reported, as diagnostics: the same concurrent requests sampled from a trained LoRA
    checkpoint (rank --rank, after one optimizer step) against the base model (the engine folds a
    frozen adapter into its lane's weights, so the ratio should be near 1); one request for
    --prompts samples of one prompt through the SDK (the same decode work in one HTTP round trip),
    to separate decode from per-request HTTP/SDK cost; and, from the server's engine counters (healthz ``sampler``), how many decode
    steps each took, their rows and milliseconds per step, and when the last concurrent request
    reached the engine and when its last step ended.
  * forward_backward: cross-entropy forward + backward of a --batch x --length batch on a LoRA
    adapter of rank --rank, through the SDK (sequential: submit, wait; pipelined: submit all,
    then wait) against the same computation in this process (the public model API: LoraAdapter,
    BaseModel.target_logprobs, backward). Guard: sequential ratio >= 0.85 (below).
  * the sampling engine in this process (embedded_tinker.sampling.SamplingEngine, no HTTP, no SDK):
    the same --prompts requests submitted at once, against the same generate() of the round.

Guards (``guards`` in the JSON, each with its per-round ratios and pass/fail; ``guards_passed``):
the engine in-process >= 1.4x generate(); --prompts concurrent SDK requests over HTTP >= 0.9x
generate(); forward_backward over HTTP (sequential calls) >= 0.85x in-process. Each ratio is the
median of the rounds' ratios, both sides of a ratio measured in the same round. These are figures of
a shared machine, not test assertions.
Beside the engine guard, ``cpu_ratio`` (and sampling ``engine_in_process_cpu_ratio``) is the same
ratio per CPU second of this process (time.process_time(); both sides run on one thread here): on a
loaded machine the wall ratio swings with what the scheduler gives each side, the CPU ratio much less.

Only public entry points are used: embedded_tinker.launch.start_server, the HTTP API through the
tinker SDK (and GET healthz) and the model loading functions of embedded_tinker.model.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import numpy as np
import tinker
import torch
from tinker import types

from embedded_tinker.launch import LOCAL_API_KEY, start_server
from embedded_tinker.model import LoraAdapter, LoraConfig, load_base_model, load_hf_model, resolve_base_model
from embedded_tinker.sampling import SampleJob, SamplerWeights, SamplingEngine, SamplingSpec

# (name, numerator, denominator, minimum): the ratios kept side by side in one run (issue 31.4)
GUARDS = (
    ("engine_in_process_over_generate", "engine_in_process", "generate", 1.4),
    ("sdk_http_concurrent_over_generate", "server_http", "generate", 0.9),
    ("forward_backward_http_over_in_process", "http_sequential", "in_process", 0.85),
)


def make_batch(batch_size: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(3, vocab, length + 1).tolist() for _ in range(batch_size)]


# ---------------------------------------------------------------------- forward_backward


def in_process_forward_backward(adapter: LoraAdapter, sequences, repeats: int) -> float:
    """tokens/s of cross-entropy forward + backward on ``adapter`` in this process."""
    base = adapter.base
    inputs = [s[:-1] for s in sequences]
    targets = [s[1:] for s in sequences]

    def once() -> None:
        logprobs = base.target_logprobs(inputs, targets, adapter)
        loss = -torch.stack([lp.sum() for lp in logprobs]).sum()
        loss.backward()
        adapter.zero_grad()

    once()  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        once()
    return repeats * sum(len(s) for s in inputs) / (time.perf_counter() - started)


def cross_entropy_data(sequences) -> list[types.Datum]:
    """Next-token cross-entropy Datums of ``sequences`` (every target weighted 1)."""
    return [
        types.Datum(
            model_input=types.ModelInput.from_ints(s[:-1]),
            loss_fn_inputs={"target_tokens": s[1:], "weights": [1.0] * (len(s) - 1)},
        )
        for s in sequences
    ]


def http_forward_backward(training, sequences, repeats: int, pipelined: bool) -> float:
    data = cross_entropy_data(sequences)
    training.forward_backward(data, "cross_entropy").result()  # warm-up
    started = time.perf_counter()
    if pipelined:
        futures = [training.forward_backward(data, "cross_entropy") for _ in range(repeats)]
        for future in futures:
            future.result()
    else:
        for _ in range(repeats):
            training.forward_backward(data, "cross_entropy").result()
    return repeats * sum(len(s) - 1 for s in sequences) / (time.perf_counter() - started)


# ---------------------------------------------------------------------- sampling


def generate_tokens_per_second(hf_model, prompts: list[list[int]], new_tokens: int) -> tuple[float, float]:
    """transformers generate(): one left-padded batch (all prompts have the same length here).
    Tokens per second of wall time and of this process's CPU time."""
    from transformers import GenerationConfig

    input_ids = torch.tensor(prompts, dtype=torch.long)
    config = GenerationConfig(
        do_sample=True,
        temperature=1.0,
        top_k=None,
        top_p=None,
        max_new_tokens=new_tokens,
        min_new_tokens=None,
        eos_token_id=None,
        pad_token_id=0,
        use_cache=True,
    )
    started, started_cpu = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        output = hf_model.generate(
            input_ids=input_ids, attention_mask=torch.ones_like(input_ids), generation_config=config
        )
    elapsed, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    generated = output.shape[1] - input_ids.shape[1]
    assert generated == new_tokens, f"generate() made {generated} tokens, not {new_tokens}"
    return len(prompts) * generated / elapsed, len(prompts) * generated / cpu


def engine_report(base_url: str) -> dict:
    """The server's sampling-engine counters (healthz ``sampler``)."""
    return httpx.get(f"{base_url}/api/v1/healthz", timeout=10).json()["sampler"]


def engine_figures(before: dict, after: dict, started: float) -> dict:
    """What the engine did between two reports: decode steps, rows per step, milliseconds per step,
    and when (after ``started``, time.monotonic()) the requests reached it and the last step ended.
    The server's clock is this machine's monotonic clock."""
    steps = after["steps"] - before["steps"]
    submits = [t - started for t in after["recent_submits"] if t >= started]
    last_arrival = submits[-1] if submits else 0.0
    # steps that ended after the last request reached the engine: the whole batch decoding
    settled = [step for step in after["recent_steps"] if step[0] - started > last_arrival]
    return {
        "steps": steps,
        "rows_per_step": (after["row_steps"] - before["row_steps"]) / max(steps, 1),
        "step_ms": 1e3 * (after["step_seconds"] - before["step_seconds"]) / max(steps, 1),
        "step_cpu_ms": 1e3 * (after["step_cpu_seconds"] - before["step_cpu_seconds"]) / max(steps, 1),
        "settled_steps": len(settled),
        "settled_step_ms": 1e3 * sum(step[1] for step in settled) / max(len(settled), 1),
        "settled_step_cpu_ms": 1e3 * sum(step[2] for step in settled) / max(len(settled), 1),
        "first_arrival_s": submits[0] if submits else None,
        "last_arrival_s": submits[-1] if submits else None,
        "last_step_end_s": after["last_step_end"] - started,
    }


def server_tokens_per_second(sampler, prompts: list[list[int]], new_tokens: int, seed: int) -> float:
    """All prompts as concurrent requests through the SDK; tokens/s from first submit to last answer."""
    started = time.perf_counter()
    futures = [
        sampler.sample(
            types.ModelInput.from_ints(prompt),
            1,
            types.SamplingParams(max_tokens=new_tokens, temperature=1.0, stop=[], seed=seed + i),
        )
        for i, prompt in enumerate(prompts)
    ]
    generated = sum(len(future.result().sequences[0].tokens) for future in futures)
    elapsed = time.perf_counter() - started
    assert generated == len(prompts) * new_tokens, f"the server made {generated} tokens"
    return generated / elapsed


def engine_tokens_per_second(engine: SamplingEngine, weights: SamplerWeights, prompts: list[list[int]],
                             new_tokens: int, seed: int) -> tuple[float, float]:
    """All prompts submitted at once to a sampling engine in this process (the server's engine without
    HTTP or SDK), the same sampling settings as the SDK requests; tokens/s from submit to last result,
    of wall time and of this process's CPU time (the engine thread's, and the main thread's wait)."""
    started, started_cpu = time.perf_counter(), time.process_time()
    jobs = [
        engine.submit(SampleJob(weights=weights, prompt=prompt, num_samples=1,
                                spec=SamplingSpec.from_request({"max_tokens": new_tokens, "temperature": 1.0,
                                                                "stop": [], "seed": seed + i}, weights.base)))
        for i, prompt in enumerate(prompts)
    ]
    generated = sum(len(job.result().sequences[0][0]) for job in jobs)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    assert generated == len(prompts) * new_tokens, f"the engine made {generated} tokens"
    return generated / elapsed, generated / cpu


def one_request_tokens_per_second(sampler, prompt: list[int], samples: int, new_tokens: int, seed: int) -> float:
    """One request for ``samples`` samples of one prompt: the same decode work as ``samples``
    concurrent requests in one HTTP round trip (a diagnostic: decode without per-request cost)."""
    started = time.perf_counter()
    response = sampler.sample(
        types.ModelInput.from_ints(prompt),
        samples,
        types.SamplingParams(max_tokens=new_tokens, temperature=1.0, stop=[], seed=seed),
    ).result()
    generated = sum(len(sequence.tokens) for sequence in response.sequences)
    return generated / (time.perf_counter() - started)


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def guards(sampling_rounds: list[dict], fb_rounds: list[dict]) -> dict:
    """Each guard's per-round ratios (both sides from the same round), their median, and pass/fail."""
    rounds = [{**sampling, **fb} for sampling, fb in zip(sampling_rounds, fb_rounds)]
    report = {}
    for name, numerator, denominator, minimum in GUARDS:
        ratios = [r[numerator] / r[denominator] for r in rounds]
        report[name] = {"ratio": round(median(ratios), 3), "minimum": minimum, "passed": median(ratios) >= minimum,
                        "per_round": [round(x, 3) for x in ratios], "spread": [round(min(ratios), 3), round(max(ratios), 3)]}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--model", default="embedded/tiny-arith")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, here and in the server")
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds (medians)")
    parser.add_argument("--prompts", type=int, default=64, help="concurrent requests = generate() batch")
    parser.add_argument("--prompt-length", type=int, default=16)
    parser.add_argument("--sample-tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16, help="forward_backward batch")
    parser.add_argument("--length", type=int, default=128, help="forward_backward sequence length")
    parser.add_argument("--repeats", type=int, default=5, help="forward_backward calls per round")
    parser.add_argument("--rank", type=int, default=16)
    args = parser.parse_args()

    load_at_start = [round(x, 2) for x in os.getloadavg()]
    torch.set_num_threads(args.threads)
    os.environ["EMBEDDED_TINKER_TORCH_THREADS"] = str(args.threads)
    warnings.filterwarnings("ignore")
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()

    base = load_base_model(args.model)
    vocab = base.config.vocab_size
    plain_model = load_hf_model(resolve_base_model(args.model)).eval()  # no LoRA hooks: plain transformers
    prompts = [s[: args.prompt_length] for s in make_batch(args.prompts, args.prompt_length, vocab, seed=1)]
    sequences = make_batch(args.batch, args.length, vocab)
    adapter = LoraAdapter(base, LoraConfig(rank=args.rank))

    engine = SamplingEngine()
    engine_weights = SamplerWeights(base, None, f"{base.name}@base")
    engine_tokens_per_second(engine, engine_weights, prompts, args.sample_tokens, seed=30_000)  # warm-up
    sampling_rounds, fb_rounds = [], []
    with start_server() as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            sampler = client.create_sampling_client(base_model=args.model).result()
            training = client.create_lora_training_client(base_model=args.model, rank=args.rank).result()
            # a trained adapter (B no longer zero), frozen for sampling
            training.forward_backward(cross_entropy_data(sequences), "cross_entropy").result()
            training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
            adapter_sampler = training.save_weights_and_get_sampling_client("bench-adapter")
            server_tokens_per_second(adapter_sampler, prompts, args.sample_tokens, seed=20_000)  # warm-up
            server_tokens_per_second(sampler, prompts, args.sample_tokens, seed=10_000)  # warm-up
            generate_tokens_per_second(plain_model, prompts, 4)  # warm-up
            for round_index in range(args.rounds):
                seed = round_index * len(prompts)
                if round_index % 2 == 0:
                    plain, plain_cpu = generate_tokens_per_second(plain_model, prompts, args.sample_tokens)
                before, started = engine_report(server.base_url), time.monotonic()
                served = server_tokens_per_second(sampler, prompts, args.sample_tokens, seed)
                concurrent = engine_figures(before, engine_report(server.base_url), started)
                if round_index % 2 == 1:
                    plain, plain_cpu = generate_tokens_per_second(plain_model, prompts, args.sample_tokens)
                in_process, in_process_cpu = engine_tokens_per_second(
                    engine, engine_weights, prompts, args.sample_tokens, seed
                )
                adapter_served = server_tokens_per_second(adapter_sampler, prompts, args.sample_tokens, seed)
                before, started = engine_report(server.base_url), time.monotonic()
                one = one_request_tokens_per_second(sampler, prompts[0], len(prompts), args.sample_tokens, seed)
                single = engine_figures(before, engine_report(server.base_url), started)
                sampling_rounds.append(
                    {
                        "server_http": served,
                        "generate": plain,
                        "ratio": served / plain,
                        "engine_in_process": in_process,
                        "engine_in_process_ratio": in_process / plain,
                        "generate_cpu": plain_cpu,
                        "engine_in_process_cpu": in_process_cpu,
                        "engine_in_process_cpu_ratio": in_process_cpu / plain_cpu,
                        "one_request": one,
                        "one_request_ratio": one / plain,
                        "adapter_http": adapter_served,
                        "adapter_over_base": adapter_served / served,
                        "concurrent_steps": concurrent["steps"],
                        "concurrent_rows_per_step": concurrent["rows_per_step"],
                        "concurrent_step_ms": concurrent["step_ms"],
                        "concurrent_step_cpu_ms": concurrent["step_cpu_ms"],
                        "concurrent_steps_after_last_arrival": concurrent["settled_steps"],
                        "concurrent_step_ms_after_last_arrival": concurrent["settled_step_ms"],
                        "concurrent_step_cpu_ms_after_last_arrival": concurrent["settled_step_cpu_ms"],
                        "concurrent_last_arrival_s": concurrent["last_arrival_s"],
                        "concurrent_last_step_end_s": concurrent["last_step_end_s"],
                        "concurrent_wall_s": len(prompts) * args.sample_tokens / served,
                        "one_request_step_ms": single["step_ms"],
                        "one_request_step_cpu_ms": single["step_cpu_ms"],
                    }
                )
                local = in_process_forward_backward(adapter, sequences, args.repeats)
                sequential = http_forward_backward(training, sequences, args.repeats, pipelined=False)
                pipelined = http_forward_backward(training, sequences, args.repeats, pipelined=True)
                fb_rounds.append(
                    {
                        "in_process": local,
                        "http_sequential": sequential,
                        "http_pipelined": pipelined,
                        "ratio_sequential": sequential / local,
                        "ratio_pipelined": pipelined / local,
                    }
                )
        finally:
            client.close("success")
            engine.stop()

    def medians(rounds: list[dict]) -> dict:
        return {key: round(median([r[key] for r in rounds]), 3) for key in rounds[0]}

    sampling, fb = medians(sampling_rounds), medians(fb_rounds)
    report = {
        "model": args.model,
        "torch_threads": args.threads,
        "cpu_count": os.cpu_count(),
        "load_average_at_start": load_at_start,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "rounds": args.rounds,
        "sampling": {
            "prompts": args.prompts,
            "prompt_tokens": args.prompt_length,
            "new_tokens": args.sample_tokens,
            "temperature": 1.0,
            "server_http_tokens_per_s": sampling["server_http"],
            "generate_tokens_per_s": sampling["generate"],
            "ratio": sampling["ratio"],  # median of the per-round ratios
            "engine_in_process_tokens_per_s": sampling["engine_in_process"],
            "engine_in_process_ratio": sampling["engine_in_process_ratio"],
            # diagnostic: the same two sides per CPU second of this process (time.process_time()), both
            # single-threaded here: what the wall ratio would be on an idle machine, readable under load
            "generate_tokens_per_cpu_s": sampling["generate_cpu"],
            "engine_in_process_tokens_per_cpu_s": sampling["engine_in_process_cpu"],
            "engine_in_process_cpu_ratio": sampling["engine_in_process_cpu_ratio"],
            # diagnostic: one request for all the samples (decode without per-request HTTP/SDK cost)
            "one_request_tokens_per_s": sampling["one_request"],
            "one_request_ratio": sampling["one_request_ratio"],
            # diagnostic: the concurrent requests from a trained LoRA checkpoint, and that over the base model
            "adapter_http_tokens_per_s": sampling["adapter_http"],
            "adapter_over_base": sampling["adapter_over_base"],
            # diagnostics from the server's engine counters (healthz "sampler"), medians over rounds:
            # the concurrent requests: decode steps, rows per step, wall and engine-CPU ms per step
            # (all steps, and the steps after the last request reached the engine), when the last
            # request reached the engine and when its last step ended (s after the first submit),
            # and the wall time; the one request: wall and CPU ms per step of its 64-row batch
            "engine": {
                key: sampling[key]
                for key in sampling
                if key.startswith(("concurrent_", "one_request_step"))
            },
            "per_round": sampling_rounds,
        },
        "forward_backward": {
            "batch": args.batch,
            "length": args.length,
            "lora_rank": args.rank,
            "in_process_tokens_per_s": fb["in_process"],
            "http_sequential_tokens_per_s": fb["http_sequential"],
            "http_pipelined_tokens_per_s": fb["http_pipelined"],
            "ratio_sequential": fb["ratio_sequential"],
            "ratio_pipelined": fb["ratio_pipelined"],
            "per_round": fb_rounds,
        },
        "note": "a shared machine (other engineers' work runs beside this benchmark): ratios of sides measured "
                "in the same round, medians over rounds; per-round figures show the spread",
    }
    report["guards"] = guards(sampling_rounds, fb_rounds)
    cpu_ratios = [r["engine_in_process_cpu_ratio"] for r in sampling_rounds]
    report["guards"]["engine_in_process_over_generate"]["cpu_ratio"] = {  # a diagnostic beside the guard
        "ratio": round(median(cpu_ratios), 3), "per_round": [round(x, 3) for x in cpu_ratios]}
    report["guards_passed"] = all(guard["passed"] for guard in report["guards"].values())
    if args.json:
        print(json.dumps(report))
        return
    for name, guard in report["guards"].items():
        print(f"guard {name}: {guard['ratio']:.3f} (>= {guard['minimum']}) {'pass' if guard['passed'] else 'FAIL'}"
              f"; rounds {', '.join(f'{r:.2f}' for r in guard['per_round'])}")
        if "cpu_ratio" in guard:
            print(f"  per CPU second (diagnostic): {guard['cpu_ratio']['ratio']:.3f}"
                  f"; rounds {', '.join(f'{r:.2f}' for r in guard['cpu_ratio']['per_round'])}")
    print(
        f"model {args.model}, torch threads {args.threads}, {os.cpu_count()} CPUs, "
        f"medians of {args.rounds} alternating rounds"
    )
    print(
        f"sampling, {args.prompts} prompts x {args.sample_tokens} new tokens, temperature 1 "
        f"(tokens/s; guard: ratio >= 0.9)"
    )
    print(f"  server, SDK over HTTP, {args.prompts} concurrent requests {sampling['server_http']:>10.0f}")
    print(f"  transformers generate(), batch {args.prompts}, KV cache   {sampling['generate']:>10.0f}")
    print(f"  ratio                                             {sampling['ratio']:>10.2f}")
    print(
        f"  (one request of {args.prompts} samples: {sampling['one_request']:.0f}, ratio {sampling['one_request_ratio']:.2f})"
    )
    print(
        f"  (from a trained rank-{args.rank} LoRA checkpoint: {sampling['adapter_http']:.0f},"
        f" {sampling['adapter_over_base']:.2f}x the base model)"
    )
    engine = report["sampling"]["engine"]
    print(
        f"  engine, concurrent requests: {engine['concurrent_steps']:.0f} steps x"
        f" {engine['concurrent_rows_per_step']:.1f} rows, {engine['concurrent_step_ms']:.2f} ms/step;"
        f" last request in at {engine['concurrent_last_arrival_s']:.3f} s, last step done at"
        f" {engine['concurrent_last_step_end_s']:.3f} s of {engine['concurrent_wall_s']:.3f} s"
    )
    print(
        f"  engine, after the last request arrived: {engine['concurrent_steps_after_last_arrival']:.0f}"
        f" steps, {engine['concurrent_step_ms_after_last_arrival']:.2f} ms/step"
        f" ({engine['concurrent_step_cpu_ms_after_last_arrival']:.2f} ms CPU)"
    )
    print(
        f"  engine, one request: {engine['one_request_step_ms']:.2f} ms/step"
        f" ({engine['one_request_step_cpu_ms']:.2f} ms CPU)"
    )
    print(
        f"forward_backward, {args.batch} x {args.length} tokens, LoRA rank {args.rank} (tokens/s; guard: sequential >= 0.85)"
    )
    print(f"  in-process                                        {fb['in_process']:>10.0f}")
    print(
        f"  HTTP sequential calls      (ratio {fb['ratio_sequential']:.2f})          {fb['http_sequential']:>10.0f}"
    )
    print(
        f"  HTTP pipelined calls       (ratio {fb['ratio_pipelined']:.2f})          {fb['http_pipelined']:>10.0f}"
    )


if __name__ == "__main__":
    main()
