"""The local task generator for the self-generated-tasks spec: a tiny model that follows the
instruction's format, "problem text, then def solve(): return <int expression>".

    python -m embedded_tinker.tasks.selfgen          # train, save assets/selfgen-generator, measure

What it is, honestly: a copy of embedded/tiny-arith fully fine-tuned (one torch thread, fixed
seeds, fixed step count) on templated examples of the arithmetic task family, rendered as one
chat turn: user = the spec's fixed instruction, assistant = "<question>\\n\\ndef solve():\\n
    return <a> <op> <b>". The examples are drawn from their own seed (GENERATOR_DATA_SEED),
so they are not the committed train/test rows, though the template space is shared: a
generated problem can coincide with a held-out question, which is what filter 4 and the audit's
overlap count are for. The model must copy the numbers of the problem it just wrote into the
code; when it fails, the label is wrong, which is what the audit's blind re-solve is for.

The independent solver of the local spec is embedded/tiny-arith itself (different weights: the
pre-trained model, never fine-tuned on code), answering the problem text in the math-env format.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse
import hashlib
import json
import random
import re
import time
from pathlib import Path

from embedded_tinker import pretrain
from embedded_tinker.tasks import arithmetic

GENERATOR_DIR = pretrain.ASSETS_DIR / "selfgen-generator"
METADATA_FILE = "selfgen_generator_metadata.json"
INSTRUCTION = ("Write one grade-school math word problem with a single integer answer, then a short Python "
               "function solve() that returns the answer.")
GENERATOR_DATA_SEED = 7_000_001
N_EXAMPLES = 20_000
TORCH_THREADS = 1
INIT_SEED = 0
DATA_ORDER_SEED = 2
BATCH_SIZE = 32
LEARNING_RATE = 2e-3
WARMUP_STEPS = 30
WEIGHT_DECAY = 0.01
TRAIN_STEPS = 1600
SAMPLE_MAX_TOKENS = 96
OPERATORS = {"add": "+", "sub": "-", "times": "*"}


def templated_example(rng: random.Random) -> dict[str, str]:
    """One problem of the arithmetic family with its solve() code (the label is the code's value)."""
    problem = arithmetic.generate_problem(rng)
    numbers = [int(n) for n in re.findall(r"\d+", problem.question)]
    a, b = numbers[0], numbers[1]
    for op in OPERATORS.values():
        if eval(f"{a} {op} {b}") == problem.answer:
            break
    else:
        raise ValueError(f"no operator gives {problem.answer} from {a}, {b}")
    code = f"def solve():\n    return {a} {op} {b}"
    return {"question": problem.question, "answer": str(problem.answer), "completion": f"{problem.question}\n\n{code}"}


def templated_examples(n: int = N_EXAMPLES, seed: int = GENERATOR_DATA_SEED) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [templated_example(rng) for _ in range(n)]


def supervised_example(renderer, completion: str) -> tuple[list[int], list[float]]:
    messages = [{"role": "user", "content": INSTRUCTION}, {"role": "assistant", "content": completion}]
    model_input, weights = renderer.build_supervised_example(messages)
    return model_input.to_ints(), [float(w) for w in weights]


def train(total_steps: int = TRAIN_STEPS, log=print):
    """Fine-tune a copy of tiny-arith on the templated examples; returns (model, tokenizer, renderer, seconds)."""
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(INIT_SEED)
    tokenizer = AutoTokenizer.from_pretrained(pretrain.MODEL_DIR)
    renderer = pretrain.load_renderer(tokenizer)
    model = Qwen3ForCausalLM.from_pretrained(pretrain.MODEL_DIR).float()
    examples = [supervised_example(renderer, row["completion"]) for row in templated_examples()]
    pad_id = tokenizer.convert_tokens_to_ids(pretrain.PAD_TOKEN)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.98), weight_decay=WEIGHT_DECAY)
    rng = random.Random(DATA_ORDER_SEED)
    started = time.perf_counter()
    for step in range(total_steps):
        model.train()
        batch = [examples[rng.randrange(len(examples))] for _ in range(BATCH_SIZE)]
        input_ids, attention_mask, targets, weights = pretrain.collate(batch, pad_id)
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
        token_loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                                       reduction="none")
        loss = (token_loss * weights.reshape(-1)).sum() / weights.sum()
        for group in optimizer.param_groups:
            group["lr"] = LEARNING_RATE * min(1.0, (step + 1) / WARMUP_STEPS)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 25 == 0 or step == total_steps - 1:
            log(f"step {step} loss {loss.item():.4f} elapsed {time.perf_counter() - started:.0f}s")
    return model, tokenizer, renderer, time.perf_counter() - started


def format_rate(model, tokenizer, renderer, n: int = 64, seed: int = 0) -> dict[str, float]:
    """Sampled at T=1: share of completions with problem text then `def solve():` (local check only)."""
    import torch

    torch.manual_seed(seed)
    prompt = renderer.build_generation_prompt([{"role": "user", "content": INSTRUCTION}]).to_ints()
    eos_id = tokenizer.convert_tokens_to_ids(pretrain.EOS_TOKEN)
    with torch.no_grad():
        output = model.generate(input_ids=torch.tensor([prompt] * n), max_new_tokens=SAMPLE_MAX_TOKENS, do_sample=True,
                                temperature=1.0, top_k=0, eos_token_id=eos_id, pad_token_id=eos_id)
    texts = [tokenizer.decode(row[len(prompt):], skip_special_tokens=True) for row in output.tolist()]
    formatted = sum(bool(re.search(r"\S.*\n\s*def solve\(\):\n\s+return ", text, re.DOTALL)) for text in texts)
    return {"samples": n, "formatted": formatted, "rate": formatted / n}


def train_and_save(total_steps: int = TRAIN_STEPS, output_dir: Path = GENERATOR_DIR) -> dict:
    import torch
    import transformers

    model, tokenizer, renderer, seconds = train(total_steps)
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    weights = output_dir / "model.safetensors"
    metadata = {
        "model": "embedded_tinker/assets/selfgen-generator",
        "role": "local task generator for specs/local/selfgen_tasks_local.json (not the spec's Qwen3.5-2B)",
        "initialized_from": {"model": "embedded/tiny-arith",
                             "weights_sha256": pretrain.sha256_file(pretrain.MODEL_DIR / "model.safetensors")},
        "instruction": INSTRUCTION,
        "format": "<question>\\n\\ndef solve():\\n    return <a> <op> <b>",
        "format_rate_T1": format_rate(model, tokenizer, renderer),
        "weights_sha256": pretrain.sha256_file(weights),
        "train": {"steps": total_steps, "batch_size": BATCH_SIZE, "learning_rate": LEARNING_RATE,
                  "warmup_steps": WARMUP_STEPS, "weight_decay": WEIGHT_DECAY, "init_seed": INIT_SEED,
                  "data_order_seed": DATA_ORDER_SEED, "data_seed": GENERATOR_DATA_SEED, "n_examples": N_EXAMPLES,
                  "torch_threads": TORCH_THREADS, "wall_seconds": round(seconds, 1),
                  "loss": "cross-entropy on the assistant turn (problem + code + <|im_end|>)"},
        "script": "embedded_tinker/tasks/selfgen.py",
        "script_sha256": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    (output_dir / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
    return metadata


def main() -> None:
    parser = argparse.ArgumentParser(description="Train the local selfgen task generator.")
    parser.add_argument("--steps", type=int, default=TRAIN_STEPS)
    parser.add_argument("--output-dir", type=Path, default=GENERATOR_DIR)
    args = parser.parse_args()
    print(json.dumps(train_and_save(args.steps, args.output_dir), indent=2))


if __name__ == "__main__":
    main()
