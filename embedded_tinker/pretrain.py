"""Build the tiny-arith assets: tokenizer, model config, pre-trained weights, metadata.

    python -m embedded_tinker.pretrain             # everything (task data, tokenizer, train, eval)
    python -m embedded_tinker.pretrain --stage tokenizer   # tokenizer + config.json only

Deterministic: fixed seeds, one torch thread, fixed step count (``TRAIN_STEPS``), data order
from ``random.Random(DATA_ORDER_SEED)``. The byte-level BPE tokenizer is trained with
`tokenizers` on the task family plus a small built-in English/chat/Python corpus, splits
digits into single characters and carries the Qwen chat special tokens as single ids, so the
cookbook renderer ``qwen3_5_disable_thinking`` works unchanged.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse
import hashlib
import json
import random
import time
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

from embedded_tinker.tasks import arithmetic

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
TOKENIZER_DIR = ASSETS_DIR / "tokenizer"
MODEL_DIR = ASSETS_DIR / "tiny-arith"
METADATA_FILE = "tiny_arith_metadata.json"
RENDERER_NAME = "qwen3_5_disable_thinking"

# ---------------------------------------------------------------- tokenizer
VOCAB_SIZE = 512
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
# Qwen3 / Qwen3.5 chat tokens the cookbook renderers emit, each a single id. As in the Qwen
# tokenizers, the control tokens are "special" (dropped by skip_special_tokens) and the markup
# tokens (<think>, <tool_call>, ...) are plain added tokens that always decode.
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
]
MARKUP_TOKENS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]

GENERIC_CORPUS = """\
You are a helpful assistant. Answer the question clearly and briefly.
Hello! How can I help you today? Could you explain what a prime number is?
A prime number is a whole number greater than 1 whose only divisors are 1 and itself.
Sure, here is a short summary of the story. The weather today is sunny, with a light breeze.
Please write a short poem about the sea. Thank you very much; that was really useful.
What is the capital of France? The capital of France is Paris.
Let's think step by step. First, we add the numbers. Then we subtract the cost.
The answer is 42. Therefore the final answer is \\boxed{42}.
Write a Python function that returns the sum of a list.
def solve():
    total = 0
    for value in [3, 5, 7]:
        total += value
    return total

def solve():
    apples = 37
    bought = 45
    return apples + bought

if __name__ == "__main__":
    print(solve())  # prints the result
import math
x = math.sqrt(16) * (2 + 3) / 4 - 1
result = {"key": [1, 2, 3], 'other': (4, 5)}
while x > 0 and not done: x -= 1
# Comments, quotes "double" and 'single', symbols: ~ ` ! @ # $ % ^ & * ( ) - _ = + [ ] { } | ; : , . < > / ?
Questions, answers, problems, solutions, examples, instructions, reasoning, explanation.
"""


def tokenizer_training_corpus() -> list[str]:
    """Deterministic text the BPE merges are learned from."""
    rows = arithmetic.build_splits()["train"]
    prompts = [
        f"<|im_start|>user\n{row['question']}{arithmetic.BOXED_INSTRUCTION}<|im_end|>\n"
        f"<|im_start|>assistant\n<think>\n\n</think>\n\n\\boxed{{{row['answer']}}}<|im_end|>\n"
        for row in rows[:4000]
    ]
    return prompts + [GENERIC_CORPUS] * 200


def build_tokenizer():
    """Train the byte-level BPE tokenizer; returns a transformers PreTrainedTokenizerFast."""
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(MARKUP_TOKENS),
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(tokenizer_training_corpus(), trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    assert tokenizer.get_vocab_size() == VOCAB_SIZE
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[t for t in SPECIAL_TOKENS if t not in (EOS_TOKEN, PAD_TOKEN)],
        model_max_length=1024,
        clean_up_tokenization_spaces=False,
    )


# ---------------------------------------------------------------- model config
def build_model_config(tokenizer):
    """Qwen3 config of the tiny-arith model (about 0.9M parameters, tied embeddings)."""
    from transformers import Qwen3Config

    assert len(tokenizer) <= VOCAB_SIZE
    return Qwen3Config(
        vocab_size=VOCAB_SIZE,
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=1024,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        attention_dropout=0.0,
        bos_token_id=tokenizer.convert_tokens_to_ids(PAD_TOKEN),
        eos_token_id=tokenizer.convert_tokens_to_ids(EOS_TOKEN),
        pad_token_id=tokenizer.convert_tokens_to_ids(PAD_TOKEN),
        dtype="float32",
    )


def write_tokenizer_and_config() -> None:
    """Stage 'tokenizer': tokenizer files into assets/tokenizer and assets/tiny-arith, config.json."""
    from transformers import GenerationConfig

    tokenizer = build_tokenizer()
    tokenizer.save_pretrained(TOKENIZER_DIR)
    tokenizer.save_pretrained(MODEL_DIR)
    config = build_model_config(tokenizer)
    config.save_pretrained(MODEL_DIR)
    GenerationConfig(
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id, do_sample=False
    ).save_pretrained(MODEL_DIR)


# ---------------------------------------------------------------- data
def load_renderer(tokenizer):
    from tinker_cookbook import renderers

    return renderers.get_renderer(RENDERER_NAME, tokenizer)


def user_message(question: str) -> dict[str, str]:
    """The single user turn the cookbook MathEnv sends (convo_prefix=None)."""
    return {"role": "user", "content": question + arithmetic.BOXED_INSTRUCTION}


def supervised_example(renderer, row: dict[str, str]) -> tuple[list[int], list[float]]:
    """Token ids and per-token loss weights: generation prompt (weight 0) + completion
    ``\\boxed{ANSWER}<|im_end|>`` (weight 1), exactly as ``build_supervised_example`` makes it."""
    messages = [
        user_message(row["question"]),
        {"role": "assistant", "content": f"\\boxed{{{row['answer']}}}"},
    ]
    model_input, weights = renderer.build_supervised_example(messages)
    return model_input.to_ints(), [float(w) for w in weights]


def generation_prompt(renderer, question: str) -> list[int]:
    return renderer.build_generation_prompt([user_message(question)]).to_ints()


# ---------------------------------------------------------------- evaluation
def boxed_answer(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` in ``text`` (None when there is none)."""
    from tinker_cookbook.recipes.math_rl.math_grading import extract_boxed

    try:
        return extract_boxed(text).strip()
    except ValueError:
        return None


def greedy_completions(
    model, tokenizer, prompts: list[list[int]], max_tokens: int = 16, batch_size: int = 100
) -> list[list[int]]:
    """Greedy completions (stop after ``<|im_end|>``, which is kept), left-padded batches."""
    import torch

    eos_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    completions: list[list[int]] = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(prompts), batch_size):
            batch = prompts[start : start + batch_size]
            width = max(len(p) for p in batch)
            input_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in batch])
            attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
            output = model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                max_new_tokens=max_tokens,
                do_sample=False,
                eos_token_id=eos_id,
                pad_token_id=pad_id,
            )
            for row in output[:, width:].tolist():
                completions.append(row[: row.index(eos_id) + 1] if eos_id in row else row)
    return completions


def greedy_accuracy(model, tokenizer, renderer, rows: list[dict[str, str]], max_tokens: int = 16) -> float:
    """Fraction of rows whose greedy completion's last \\boxed{} equals the answer."""
    prompts = [generation_prompt(renderer, row["question"]) for row in rows]
    completions = greedy_completions(model, tokenizer, prompts, max_tokens)
    correct = sum(
        boxed_answer(tokenizer.decode(c, skip_special_tokens=True)) == row["answer"]
        for c, row in zip(completions, rows)
    )
    return correct / len(rows)


# ---------------------------------------------------------------- training
TORCH_THREADS = 1
INIT_SEED = 0
DATA_ORDER_SEED = 1
BATCH_SIZE = 32
LEARNING_RATE = 3e-3
WARMUP_STEPS = 50
WEIGHT_DECAY = 0.01
TRAIN_STEPS = 3000  # fixed by calibration (see assets/tiny-arith/README.md)
EVAL_MAX_TOKENS = 16


def learning_rate(step: int) -> float:
    """Linear warm-up, then constant: a run of N steps is the first N steps of any longer run,
    so a calibration run's intermediate evaluations are exactly the candidate step counts."""
    return LEARNING_RATE * min(1.0, (step + 1) / WARMUP_STEPS)


def batch_order(n_examples: int, total_steps: int) -> list[list[int]]:
    """Example indices per step: shuffled epochs from random.Random(DATA_ORDER_SEED)."""
    rng = random.Random(DATA_ORDER_SEED)
    order: list[int] = []
    while len(order) < total_steps * BATCH_SIZE:
        epoch = list(range(n_examples))
        rng.shuffle(epoch)
        order.extend(epoch)
    return [order[i * BATCH_SIZE : (i + 1) * BATCH_SIZE] for i in range(total_steps)]


def collate(examples: list[tuple[list[int], list[float]]], pad_id: int):
    """Right-padded input ids, attention mask, next-token targets and their weights."""
    import torch

    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(examples), width), dtype=torch.long)
    weights = torch.zeros((len(examples), width), dtype=torch.float32)
    for i, (ids, w) in enumerate(examples):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention_mask[i, : len(ids)] = 1
        weights[i, : len(w)] = torch.tensor(w)
    # position t predicts token t+1, weighted by the weight of token t+1
    return input_ids, attention_mask, input_ids[:, 1:], weights[:, 1:]


def train(
    total_steps: int = TRAIN_STEPS,
    eval_every: int = 0,
    eval_rows: int = 200,
    checkpoint_dir: Path | None = None,
    log=print,
):
    """Train the tiny-arith model from scratch; returns (model, tokenizer, renderer, wall seconds)."""
    import torch
    from transformers import AutoConfig, AutoTokenizer, Qwen3ForCausalLM

    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(INIT_SEED)
    torch.use_deterministic_algorithms(True)
    tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)
    renderer = load_renderer(tokenizer)
    model = Qwen3ForCausalLM(AutoConfig.from_pretrained(MODEL_DIR))
    examples = [supervised_example(renderer, row) for row in arithmetic.load_split("train")]
    test_rows = arithmetic.load_split("test")[:eval_rows]
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.98), weight_decay=WEIGHT_DECAY
    )
    started = time.perf_counter()
    for step, indices in enumerate(batch_order(len(examples), total_steps)):
        model.train()
        input_ids, attention_mask, targets, weights = collate([examples[i] for i in indices], pad_id)
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1]
        token_loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
        )
        loss = (token_loss * weights.reshape(-1)).sum() / weights.sum()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 50 == 0 or step == total_steps - 1:
            log(
                f"step {step} loss {loss.item():.4f} lr {learning_rate(step):.2e} "
                f"elapsed {time.perf_counter() - started:.0f}s"
            )
        if eval_every and (step + 1) % eval_every == 0:
            accuracy = greedy_accuracy(model, tokenizer, renderer, test_rows, EVAL_MAX_TOKENS)
            log(f"step {step + 1} greedy accuracy on {len(test_rows)} test rows: {accuracy:.3f}")
            if checkpoint_dir is not None:
                model.save_pretrained(checkpoint_dir / f"step-{step + 1}")
    return model, tokenizer, renderer, time.perf_counter() - started


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def train_and_save(total_steps: int = TRAIN_STEPS, output_dir: Path = MODEL_DIR, eval_every: int = 0) -> dict:
    """Stage 'train': train, save weights + tokenizer, measure held-out accuracy, write metadata."""
    import torch
    import transformers

    model, tokenizer, renderer, wall_seconds = train(
        total_steps, eval_every, checkpoint_dir=output_dir if eval_every else None
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    test_rows = arithmetic.load_split("test")
    accuracy = greedy_accuracy(model, tokenizer, renderer, test_rows, EVAL_MAX_TOKENS)
    weights_path = output_dir / "model.safetensors"
    metadata = {
        "model": "embedded/tiny-arith",
        "architecture": "Qwen3ForCausalLM",
        "renderer": RENDERER_NAME,
        "greedy_accuracy_test": accuracy,
        "n_test": len(test_rows),
        "eval": {
            "temperature": 0.0,
            "max_tokens": EVAL_MAX_TOKENS,
            "stop": EOS_TOKEN,
            "answer": "last \\boxed{} of the completion == answer string",
        },
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "weights_bytes": weights_path.stat().st_size,
        "weights_sha256": sha256_file(weights_path),
        "train": {
            "steps": total_steps,
            "batch_size": BATCH_SIZE,
            "learning_rate": LEARNING_RATE,
            "warmup_steps": WARMUP_STEPS,
            "lr_schedule": "linear warm-up, then constant",
            "weight_decay": WEIGHT_DECAY,
            "init_seed": INIT_SEED,
            "data_order_seed": DATA_ORDER_SEED,
            "task_seed": arithmetic.DEFAULT_SEED,
            "torch_threads": TORCH_THREADS,
            "wall_seconds": round(wall_seconds, 1),
            "loss": "cross-entropy on completion tokens only (\\boxed{ANSWER}<|im_end|>)",
        },
        "script": "embedded_tinker/pretrain.py",
        "script_sha256": sha256_file(Path(__file__)),
        "task_generator_sha256": sha256_file(Path(arithmetic.__file__)),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    (output_dir / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
    return metadata


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the tiny-arith assets.")
    parser.add_argument("--stage", choices=["all", "data", "tokenizer", "train"], default="all")
    parser.add_argument("--steps", type=int, default=TRAIN_STEPS)
    parser.add_argument("--eval-every", type=int, default=0, help="calibration: eval on 200 test rows")
    parser.add_argument("--output-dir", type=Path, default=MODEL_DIR)
    args = parser.parse_args()
    if args.stage in ("all", "data"):
        arithmetic.write_splits()
    if args.stage in ("all", "tokenizer"):
        write_tokenizer_and_config()
    if args.stage in ("all", "train"):
        metadata = train_and_save(args.steps, args.output_dir, args.eval_every)
        print(json.dumps(metadata, indent=2))


if __name__ == "__main__":
    main()
