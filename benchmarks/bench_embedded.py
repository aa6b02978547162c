"""Throughput of the embedded backend against plain in-process torch/transformers (a benchmark).

    python benchmarks/bench_embedded.py [--json] [--model embedded/tiny-arith] [--rounds 5] [--cpu N | --no-pin]

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
    reached the engine and when its last step ended; and where the HTTP side's CPU went: the SDK client
    (this process), the server process, and the engine's steps inside it (docs/embedded-backend.md).
  * forward_backward: cross-entropy forward + backward of a --batch x --length batch on a LoRA
    adapter of rank --rank, through the SDK (sequential: submit, wait; pipelined: submit all,
    then wait) against the same computation in this process (the public model API: LoraAdapter,
    BaseModel.target_logprobs, backward). Guard: sequential ratio >= 0.85 (below).
  * the sampling engine in this process (embedded_tinker.sampling.SamplingEngine, no HTTP, no SDK):
    the same --prompts requests submitted at once, against the same generate() of the round.

Guards (``guards`` in the JSON, each with its per-round ratios and pass/fail; ``guards_passed``):
the engine in-process >= 1.4x generate(); --prompts concurrent SDK requests over HTTP >= 0.9x
generate(); forward_backward over HTTP (sequential calls) >= 0.85x in-process. Each ratio is the
median of the rounds' ratios (at least 5 rounds), both sides of a ratio measured in the same round.
These are figures of a shared machine, not test assertions.

What makes two runs agree (issue 48):
  * both sides get the same CPU: this process is pinned to one core (--cpu, default the last one this
    process may use) before the server starts, so the server subprocess and its threads inherit the pin
    and the HTTP side cannot borrow a second core that the in-process side does not have;
  * the order alternates: even rounds run each comparison's sides in one order, odd rounds in the other
    (sampling: generate(), server, engine; then engine, server, generate(); forward_backward: in-process,
    sequential, pipelined; then the reverse), so a side is never always the one that runs warm or first;
  * each ratio is also reported per CPU second: a side's tokens over the CPU seconds this process and the
    server process spent while it ran (time.process_time() and the server's /proc/<pid>/stat). The guards
    pass on that ratio, which load moves far less than the wall ratio; the wall ratio is reported beside it.

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
MIN_ROUNDS = 5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def make_batch(batch_size: int, length: int, vocab: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(3, vocab, length + 1).tolist() for _ in range(batch_size)]


# ---------------------------------------------------------------------- what one side costs


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and all its threads (/proc/<pid>/stat, fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Meter:
    """Runs one side of a comparison and says what it cost: wall seconds, and the CPU seconds of this process
    and of the server process together (the HTTP side spends both; an in-process side, this one's)."""

    def __init__(self, server_pid: int | None):
        self.server_pid = server_pid
        self.last_split = (0.0, 0.0)  # the last side's CPU seconds: (this process, the server process)

    def _cpu(self) -> tuple[float, float]:
        return time.process_time(), (process_cpu_seconds(self.server_pid) if self.server_pid else 0.0)

    def rate(self, work) -> tuple[float, float]:
        """(tokens per wall second, tokens per CPU second) of `work()`, which returns the tokens it made."""
        started, (client_before, server_before) = time.perf_counter(), self._cpu()
        tokens = work()
        wall, (client_after, server_after) = time.perf_counter() - started, self._cpu()
        self.last_split = (client_after - client_before, server_after - server_before)
        return tokens / wall, tokens / max(sum(self.last_split), 1e-9)


def pin_to_one_cpu(cpu: int | None) -> list[int]:
    """Pin this process (and every process it starts after) to one CPU; the CPUs it may use afterwards."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    return sorted(os.sched_getaffinity(0))


# ---------------------------------------------------------------------- forward_backward


def in_process_forward_backward(adapter: LoraAdapter, sequences, repeats: int) -> int:
    """Cross-entropy forward + backward on ``adapter`` in this process, ``repeats`` times; the tokens."""
    base = adapter.base
    inputs = [s[:-1] for s in sequences]
    targets = [s[1:] for s in sequences]
    for _ in range(repeats):
        logprobs = base.target_logprobs(inputs, targets, adapter)
        loss = -torch.stack([lp.sum() for lp in logprobs]).sum()
        loss.backward()
        adapter.zero_grad()
    return repeats * sum(len(s) for s in inputs)


def cross_entropy_data(sequences) -> list[types.Datum]:
    """Next-token cross-entropy Datums of ``sequences`` (every target weighted 1)."""
    return [
        types.Datum(
            model_input=types.ModelInput.from_ints(s[:-1]),
            loss_fn_inputs={"target_tokens": s[1:], "weights": [1.0] * (len(s) - 1)},
        )
        for s in sequences
    ]


def http_forward_backward(training, sequences, repeats: int, pipelined: bool) -> int:
    """The same through the SDK: submit and wait per call (sequential) or submit all, then wait; the tokens."""
    data = cross_entropy_data(sequences)
    if pipelined:
        futures = [training.forward_backward(data, "cross_entropy") for _ in range(repeats)]
        for future in futures:
            future.result()
    else:
        for _ in range(repeats):
            training.forward_backward(data, "cross_entropy").result()
    return repeats * sum(len(s) - 1 for s in sequences)


# ---------------------------------------------------------------------- sampling


def generate_tokens(hf_model, prompts: list[list[int]], new_tokens: int) -> int:
    """transformers generate(): one left-padded batch (all prompts have the same length here); the tokens."""
    from transformers import GenerationConfig

    input_ids = torch.tensor(prompts, dtype=torch.long)
    config = GenerationConfig(do_sample=True, temperature=1.0, top_k=None, top_p=None, max_new_tokens=new_tokens,
                              min_new_tokens=None, eos_token_id=None, pad_token_id=0, use_cache=True)
    with torch.inference_mode():
        output = hf_model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                   generation_config=config)
    generated = output.shape[1] - input_ids.shape[1]
    assert generated == new_tokens, f"generate() made {generated} tokens, not {new_tokens}"
    return len(prompts) * generated


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


def server_tokens(sampler, prompts: list[list[int]], new_tokens: int, seed: int) -> int:
    """All prompts as concurrent requests through the SDK, from first submit to last answer; the tokens."""
    futures = [sampler.sample(types.ModelInput.from_ints(prompt), 1,
                              types.SamplingParams(max_tokens=new_tokens, temperature=1.0, stop=[], seed=seed + i))
               for i, prompt in enumerate(prompts)]
    generated = sum(len(future.result().sequences[0].tokens) for future in futures)
    assert generated == len(prompts) * new_tokens, f"the server made {generated} tokens"
    return generated


def engine_tokens(engine: SamplingEngine, weights: SamplerWeights, prompts: list[list[int]], new_tokens: int,
                  seed: int) -> int:
    """All prompts submitted at once to a sampling engine in this process (the server's engine without
    HTTP or SDK), the same sampling settings as the SDK requests; the tokens."""
    jobs = [engine.submit(SampleJob(weights=weights, prompt=prompt, num_samples=1,
                                    spec=SamplingSpec.from_request({"max_tokens": new_tokens, "temperature": 1.0,
                                                                    "stop": [], "seed": seed + i}, weights.base)))
            for i, prompt in enumerate(prompts)]
    generated = sum(len(job.result().sequences[0][0]) for job in jobs)
    assert generated == len(prompts) * new_tokens, f"the engine made {generated} tokens"
    return generated


def one_request_tokens(sampler, prompt: list[int], samples: int, new_tokens: int, seed: int) -> int:
    """One request for ``samples`` samples of one prompt: the same decode work as ``samples``
    concurrent requests in one HTTP round trip (a diagnostic: decode without per-request cost)."""
    response = sampler.sample(types.ModelInput.from_ints(prompt), samples,
                              types.SamplingParams(max_tokens=new_tokens, temperature=1.0, stop=[], seed=seed)).result()
    return sum(len(sequence.tokens) for sequence in response.sequences)


def median(values: list[float]) -> float:
    return float(statistics.median(values))


# ---------------------------------------------------------------------- one round, both orders


def in_round_order(round_index: int, sides: list[tuple[str, object]]) -> dict[str, tuple[float, float]]:
    """Each side's (wall rate, CPU rate), run in the listed order on even rounds and reversed on odd ones."""
    ordered = sides if round_index % 2 == 0 else list(reversed(sides))
    return {name: measure() for name, measure in ordered}


def sampling_round(bench: dict, round_index: int) -> dict:
    args, meter, prompts = bench["args"], bench["meter"], bench["prompts"]
    seed, new = round_index * len(prompts), args.sample_tokens
    engine_seen: dict = {}

    def served() -> tuple[float, float]:
        before, started = engine_report(bench["base_url"]), time.monotonic()
        rates = meter.rate(lambda: server_tokens(bench["sampler"], prompts, new, seed))
        engine_seen.update(engine_figures(before, engine_report(bench["base_url"]), started),
                           client_cpu_s=meter.last_split[0], server_cpu_s=meter.last_split[1])
        return rates

    rates = in_round_order(round_index, [
        ("generate", lambda: meter.rate(lambda: generate_tokens(bench["plain_model"], prompts, new))),
        ("server_http", served),
        ("engine_in_process", lambda: meter.rate(lambda: engine_tokens(bench["engine"], bench["engine_weights"],
                                                                       prompts, new, seed))),
    ])
    adapter_served, _ = meter.rate(lambda: server_tokens(bench["adapter_sampler"], prompts, new, seed))
    before, started = engine_report(bench["base_url"]), time.monotonic()
    one, _ = meter.rate(lambda: one_request_tokens(bench["sampler"], prompts[0], len(prompts), new, seed))
    single = engine_figures(before, engine_report(bench["base_url"]), started)
    plain, served_rate, in_process = rates["generate"][0], rates["server_http"][0], rates["engine_in_process"][0]
    return {
        "server_http": served_rate, "generate": plain, "engine_in_process": in_process,
        "server_http_cpu": rates["server_http"][1], "generate_cpu": rates["generate"][1],
        "engine_in_process_cpu": rates["engine_in_process"][1],
        "ratio": served_rate / plain, "engine_in_process_ratio": in_process / plain,
        "ratio_cpu": rates["server_http"][1] / rates["generate"][1],
        "engine_in_process_cpu_ratio": rates["engine_in_process"][1] / rates["generate"][1],
        "one_request": one, "one_request_ratio": one / plain,
        "adapter_http": adapter_served, "adapter_over_base": adapter_served / served_rate,
        **{f"concurrent_{key}": value for key, value in engine_seen.items()
           if key in ("steps", "rows_per_step", "step_ms", "step_cpu_ms", "last_arrival_s", "last_step_end_s")},
        "concurrent_steps_after_last_arrival": engine_seen["settled_steps"],
        "concurrent_step_ms_after_last_arrival": engine_seen["settled_step_ms"],
        "concurrent_step_cpu_ms_after_last_arrival": engine_seen["settled_step_cpu_ms"],
        "concurrent_wall_s": len(prompts) * new / served_rate,
        # where the HTTP side's CPU went: the SDK client (this process), the server process, the engine's steps in it
        "concurrent_client_cpu_s": engine_seen["client_cpu_s"], "concurrent_server_cpu_s": engine_seen["server_cpu_s"],
        "concurrent_engine_cpu_s": engine_seen["steps"] * engine_seen["step_cpu_ms"] / 1e3,
        "one_request_step_ms": single["step_ms"], "one_request_step_cpu_ms": single["step_cpu_ms"],
    }


def forward_backward_round(bench: dict, round_index: int) -> dict:
    args, meter, sequences, training = bench["args"], bench["meter"], bench["sequences"], bench["training"]
    rates = in_round_order(round_index, [
        ("in_process", lambda: meter.rate(lambda: in_process_forward_backward(bench["adapter"], sequences, args.repeats))),
        ("http_sequential", lambda: meter.rate(lambda: http_forward_backward(training, sequences, args.repeats, False))),
        ("http_pipelined", lambda: meter.rate(lambda: http_forward_backward(training, sequences, args.repeats, True))),
    ])
    local = rates["in_process"]
    return {"in_process": local[0], "http_sequential": rates["http_sequential"][0],
            "http_pipelined": rates["http_pipelined"][0],
            "in_process_cpu": local[1], "http_sequential_cpu": rates["http_sequential"][1],
            "http_pipelined_cpu": rates["http_pipelined"][1],
            "ratio_sequential": rates["http_sequential"][0] / local[0],
            "ratio_pipelined": rates["http_pipelined"][0] / local[0],
            "ratio_sequential_cpu": rates["http_sequential"][1] / local[1]}


def guards(sampling_rounds: list[dict], fb_rounds: list[dict]) -> dict:
    """Each guard's per-round ratios per CPU second (what it passes on) and per wall second, both sides from the same
    round, their medians, and pass/fail."""
    rounds = [{**sampling, **fb} for sampling, fb in zip(sampling_rounds, fb_rounds)]
    report = {}
    for name, numerator, denominator, minimum in GUARDS:
        cpu = [r[f"{numerator}_cpu"] / r[f"{denominator}_cpu"] for r in rounds]
        wall = [r[numerator] / r[denominator] for r in rounds]
        report[name] = {"ratio": round(median(cpu), 3), "minimum": minimum, "passed": median(cpu) >= minimum,
                        "per_round": [round(x, 3) for x in cpu], "spread": [round(min(cpu), 3), round(max(cpu), 3)],
                        "wall_ratio": {"ratio": round(median(wall), 3), "per_round": [round(x, 3) for x in wall]}}
    return report


# ---------------------------------------------------------------------- the run


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--model", default="embedded/tiny-arith")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, here and in the server")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help=f"alternating rounds (medians; at least {MIN_ROUNDS})")
    parser.add_argument("--cpu", type=int, default=None, help="the CPU both sides are pinned to (default: the last "
                                                               "one this process may use)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin (the sides may use different CPUs)")
    parser.add_argument("--prompts", type=int, default=64, help="concurrent requests = generate() batch")
    parser.add_argument("--prompt-length", type=int, default=16)
    parser.add_argument("--sample-tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16, help="forward_backward batch")
    parser.add_argument("--length", type=int, default=128, help="forward_backward sequence length")
    parser.add_argument("--repeats", type=int, default=5, help="forward_backward calls per round")
    parser.add_argument("--rank", type=int, default=16)
    args = parser.parse_args()
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}: a median of fewer does not settle a guard")
    return args


def warm_up(bench: dict) -> None:
    """Every side once before the rounds: the first call of each pays for lazy set-up, not for its work."""
    args, prompts, sequences = bench["args"], bench["prompts"], bench["sequences"]
    engine_tokens(bench["engine"], bench["engine_weights"], prompts, args.sample_tokens, seed=30_000)
    server_tokens(bench["adapter_sampler"], prompts, args.sample_tokens, seed=20_000)
    server_tokens(bench["sampler"], prompts, args.sample_tokens, seed=10_000)
    generate_tokens(bench["plain_model"], prompts, 4)
    in_process_forward_backward(bench["adapter"], sequences, 1)
    http_forward_backward(bench["training"], sequences, 1, pipelined=False)


def main() -> None:
    args = parse_args()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    cpus = pin_to_one_cpu(None if args.no_pin else args.cpu if args.cpu is not None
                          else max(os.sched_getaffinity(0)))  # before the server starts: it inherits the pin
    torch.set_num_threads(args.threads)
    os.environ["EMBEDDED_TINKER_TORCH_THREADS"] = str(args.threads)
    warnings.filterwarnings("ignore")
    from transformers.utils import logging as transformers_logging

    transformers_logging.set_verbosity_error()
    base = load_base_model(args.model)
    bench = {"args": args, "plain_model": load_hf_model(resolve_base_model(args.model)).eval(),  # no LoRA hooks
             "prompts": [s[: args.prompt_length] for s in make_batch(args.prompts, args.prompt_length,
                                                                     base.config.vocab_size, seed=1)],
             "sequences": make_batch(args.batch, args.length, base.config.vocab_size),
             "adapter": LoraAdapter(base, LoraConfig(rank=args.rank)), "engine": SamplingEngine(),
             "engine_weights": SamplerWeights(base, None, f"{base.name}@base")}
    sampling_rounds, fb_rounds = [], []
    with start_server() as server:
        client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
        try:
            training = client.create_lora_training_client(base_model=args.model, rank=args.rank).result()
            training.forward_backward(cross_entropy_data(bench["sequences"]), "cross_entropy").result()
            training.optim_step(types.AdamParams(learning_rate=1e-2)).result()  # a trained adapter (B no longer 0)
            bench.update(base_url=server.base_url, training=training,
                         meter=Meter(server.process.pid if server.process is not None else None),
                         sampler=client.create_sampling_client(base_model=args.model).result(),
                         adapter_sampler=training.save_weights_and_get_sampling_client("bench-adapter"))
            server_cpus = sorted(os.sched_getaffinity(server.process.pid)) if server.process is not None else cpus
            warm_up(bench)
            for round_index in range(args.rounds):
                sampling_rounds.append(sampling_round(bench, round_index))
                fb_rounds.append(forward_backward_round(bench, round_index))
        finally:
            client.close("success")
            bench["engine"].stop()
    report = build_report(args, load_at_start, {"this_process": cpus, "server": server_cpus}, sampling_rounds,
                          fb_rounds)
    print(json.dumps(report) if args.json else "\n".join(report_lines(report)))


def build_report(args, load_at_start: list[float], cpus: dict, sampling_rounds: list[dict],
                 fb_rounds: list[dict]) -> dict:
    def medians(rounds: list[dict]) -> dict:
        return {key: round(median([r[key] for r in rounds]), 3) for key in rounds[0]}

    sampling, fb = medians(sampling_rounds), medians(fb_rounds)
    report = {
        "model": args.model, "torch_threads": args.threads, "cpu_count": os.cpu_count(), "pinned_cpus": cpus,
        "load_average_at_start": load_at_start, "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "rounds": args.rounds,
        "sampling": {
            "prompts": args.prompts, "prompt_tokens": args.prompt_length, "new_tokens": args.sample_tokens,
            "temperature": 1.0,
            **{f"{side}_tokens_per_s": sampling[side] for side in ("server_http", "generate", "engine_in_process")},
            **{f"{side}_tokens_per_cpu_s": sampling[f"{side}_cpu"]
               for side in ("server_http", "generate", "engine_in_process")},
            "ratio": sampling["ratio"], "ratio_cpu": sampling["ratio_cpu"],  # medians of the per-round ratios
            "engine_in_process_ratio": sampling["engine_in_process_ratio"],
            "engine_in_process_cpu_ratio": sampling["engine_in_process_cpu_ratio"],
            # diagnostic: one request for all the samples (decode without per-request HTTP/SDK cost)
            "one_request_tokens_per_s": sampling["one_request"], "one_request_ratio": sampling["one_request_ratio"],
            # diagnostic: the concurrent requests from a trained LoRA checkpoint, and that over the base model
            "adapter_http_tokens_per_s": sampling["adapter_http"], "adapter_over_base": sampling["adapter_over_base"],
            # the server's engine counters (healthz "sampler"), medians over rounds: decode steps, rows per step,
            # wall and engine-CPU ms per step (all steps, and those after the last request reached the engine),
            # when the last request reached the engine and when its last step ended (s after the first submit)
            "engine": {key: sampling[key] for key in sampling if key.startswith(("concurrent_", "one_request_step"))},
            "per_round": sampling_rounds,
        },
        "forward_backward": {
            "batch": args.batch, "length": args.length, "lora_rank": args.rank,
            **{f"{side}_tokens_per_s": fb[side] for side in ("in_process", "http_sequential", "http_pipelined")},
            **{f"{side}_tokens_per_cpu_s": fb[f"{side}_cpu"] for side in ("in_process", "http_sequential",
                                                                         "http_pipelined")},
            "ratio_sequential": fb["ratio_sequential"], "ratio_pipelined": fb["ratio_pipelined"],
            "ratio_sequential_cpu": fb["ratio_sequential_cpu"], "per_round": fb_rounds,
        },
        "note": "a shared machine: ratios of sides measured in the same round, in alternating order, both sides on the "
                "pinned CPU; medians over rounds; guards pass per CPU second, wall ratios beside them",
    }
    report["guards"] = guards(sampling_rounds, fb_rounds)
    report["guards_passed"] = all(guard["passed"] for guard in report["guards"].values())
    return report


def report_lines(report: dict) -> list[str]:
    sampling, fb, engine = report["sampling"], report["forward_backward"], report["sampling"]["engine"]
    lines = [f"guard {name}: {guard['ratio']:.3f} per CPU second (>= {guard['minimum']}) "
             f"{'pass' if guard['passed'] else 'FAIL'}; rounds {', '.join(f'{r:.2f}' for r in guard['per_round'])}; "
             f"wall {guard['wall_ratio']['ratio']:.3f}" for name, guard in report["guards"].items()]
    lines += [
        f"model {report['model']}, torch threads {report['torch_threads']}, pinned to CPUs {report['pinned_cpus']}, "
        f"medians of {report['rounds']} alternating rounds, load {report['load_average_at_start'][0]} -> "
        f"{report['load_average_at_end'][0]}",
        f"sampling, {sampling['prompts']} prompts x {sampling['new_tokens']} new tokens, temperature 1 "
        "(tokens/s, tokens per CPU s)",
        f"  server, SDK over HTTP, concurrent requests     {sampling['server_http_tokens_per_s']:>10.0f} "
        f"{sampling['server_http_tokens_per_cpu_s']:>10.0f}",
        f"  transformers generate(), KV cache             {sampling['generate_tokens_per_s']:>10.0f} "
        f"{sampling['generate_tokens_per_cpu_s']:>10.0f}",
        f"  engine in this process                        {sampling['engine_in_process_tokens_per_s']:>10.0f} "
        f"{sampling['engine_in_process_tokens_per_cpu_s']:>10.0f}",
        f"  (one request of all samples: {sampling['one_request_tokens_per_s']:.0f}, ratio "
        f"{sampling['one_request_ratio']:.2f}; from a trained LoRA checkpoint: {sampling['adapter_http_tokens_per_s']:.0f},"
        f" {sampling['adapter_over_base']:.2f}x the base model)",
        f"  engine, concurrent requests: {engine['concurrent_steps']:.0f} steps x {engine['concurrent_rows_per_step']:.1f} "
        f"rows, {engine['concurrent_step_ms']:.2f} ms/step; last request in at {engine['concurrent_last_arrival_s']:.3f} s,"
        f" last step done at {engine['concurrent_last_step_end_s']:.3f} s of {engine['concurrent_wall_s']:.3f} s",
        f"  HTTP side's CPU: SDK client {engine['concurrent_client_cpu_s']:.3f} s, server {engine['concurrent_server_cpu_s']:.3f} s"
        f" (engine steps {engine['concurrent_engine_cpu_s']:.3f} s)",
        f"forward_backward, {fb['batch']} x {fb['length']} tokens, LoRA rank {fb['lora_rank']} (tokens/s, per CPU s)",
        f"  in-process                                    {fb['in_process_tokens_per_s']:>10.0f} "
        f"{fb['in_process_tokens_per_cpu_s']:>10.0f}",
        f"  HTTP sequential calls (ratio {fb['ratio_sequential']:.2f})             {fb['http_sequential_tokens_per_s']:>10.0f} "
        f"{fb['http_sequential_tokens_per_cpu_s']:>10.0f}",
        f"  HTTP pipelined calls  (ratio {fb['ratio_pipelined']:.2f})             {fb['http_pipelined_tokens_per_s']:>10.0f} "
        f"{fb['http_pipelined_tokens_per_cpu_s']:>10.0f}",
    ]
    return lines


if __name__ == "__main__":
    main()
