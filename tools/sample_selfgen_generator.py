"""Sample the local selfgen generator (embedded_tinker/assets/selfgen-generator) at T=1.0 without a service:
the measured sample behind tests/fixtures/selfgen_generated_sample.jsonl (label error rates of generated tasks
before and after the generator's label check; tests/unit/test_generator_label_check_rejects_ill_posed_tasks.py).

    python -m tools.sample_selfgen_generator 1600 7 tests/fixtures/selfgen_generated_sample.jsonl

The pipeline samples the same weights with the same instruction and temperature through the embedded backend;
this draws from torch's sampler on one thread (seeded), so the rows are the generator's distribution, not the
rows of any one run.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse
import json
from pathlib import Path

BATCH = 64
MAX_NEW_TOKENS = 96


def sample(n: int, seed: int) -> list[str]:
    import torch
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    from embedded_tinker import pretrain
    from embedded_tinker.tasks import selfgen

    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(selfgen.GENERATOR_DIR)
    renderer = pretrain.load_renderer(tokenizer)
    model = Qwen3ForCausalLM.from_pretrained(selfgen.GENERATOR_DIR).float().eval()
    prompt = renderer.build_generation_prompt([{"role": "user", "content": selfgen.INSTRUCTION}]).to_ints()
    eos = tokenizer.convert_tokens_to_ids(pretrain.EOS_TOKEN)
    torch.manual_seed(seed)
    texts: list[str] = []
    with torch.no_grad():
        for start in range(0, n, BATCH):
            rows = model.generate(input_ids=torch.tensor([prompt] * min(BATCH, n - start)), max_new_tokens=MAX_NEW_TOKENS,
                                  do_sample=True, temperature=1.0, top_k=0, eos_token_id=eos, pad_token_id=eos)
            texts += [tokenizer.decode(row[len(prompt):], skip_special_tokens=True) for row in rows.tolist()]
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description="Sample the local selfgen generator at T=1.0 (JSONL of completions).")
    parser.add_argument("n", type=int)
    parser.add_argument("seed", type=int)
    parser.add_argument("output", type=Path)
    args = parser.parse_args()
    with open(args.output, "w", encoding="utf-8") as out:
        for index, text in enumerate(sample(args.n, args.seed)):
            out.write(json.dumps({"index": index, "completion": text}) + "\n")


if __name__ == "__main__":
    main()
