"""What `--reproduce --backend URL` re-runs on a service, through the stock tinker SDK over HTTP: a deterministic
sample of evaluation items scored again from the checkpoints the record names (REPRO-3, REPRO-4).

The sample: the first `SAMPLE_ITEMS` evaluation item ids in the order of sha256(json.dumps([record id, item id])),
the same items for every arm (the record id: `record_id`, the canonical sha256 of the record's evidence.checkpoints).

REPRO-3 (evaluator), RL greedy predictions: per text prediction file, a sampling client loaded from the row's
`checkpoint` (a tinker:// path, or the base model by name) samples each sampled item greedily with the recorded
evaluator's prompt template and max_tokens and the spec's renderer; the output is scored by the grader's own
parser against the data file's gold answer. Invalid: a re-scored value that is not the recorded one. The text
itself is compared and said in the note (a service may batch differently), not graded. Unverified: decoding that is
not greedy, a prompt template it cannot rebuild, a checkpoint the service cannot load.

REPRO-4 (evaluator), SFT held-out NLL: per NLL prediction file, a training client loaded from the run's recorded
final state (the run directory's arm_training gate event, `state.final_states`) or else the row's `checkpoint`
scores each sampled held-out row with forward(..., "cross_entropy") on the datum the recorded prompt template names
(the cookbook's conversation_to_datum with the spec's renderer and max length, reduction none). Invalid: an n_tokens
that differs, or an nll_sum off by more than NLL_REL_TOL relative (and NLL_ABS_TOL absolute). Unverified: a held-out
file the spec does not name by path, a checkpoint the service cannot load. A row of the base model (no checkpoint
path) is left out: it has no trained weights to load.

Cost (docs/reproduce.md): one client per checkpoint, one request per sampled item (RL) or one forward per file (SFT).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit

import httpx
import numpy as np
import tinker
from tinker_cookbook import renderers
from tinker_cookbook.recipes.math_rl.math_env import MathEnv
from tinker_cookbook.supervised.data import conversation_to_datum
from tinker_cookbook.tokenizer_utils import get_tokenizer

from experiment.contract.rollout import DEFAULT_RENDERER
from experiment.contract.spec import canonical_sha256
from experiment.data import DataError, read_capped_text, resolve_data_path
from experiment.grading.common import INVALID, UNVERIFIED, GradeContext, Issue, as_dict, as_list, short
from experiment.grading.registry import rule
from experiment.grading.reproduce import ServiceUnreachable
from experiment.grading.reproduce.answers import evaluation_items, score
from experiment.grading.reproduce.offline import text_prediction_files
from experiment.service.target import CAPABILITIES_PATH, EMBEDDED_API_KEY, ServiceConfigError, ServiceTarget

SAMPLE_ITEMS = 4  # evaluation items re-scored per arm (or LR-grid run)
NLL_REL_TOL = 1e-4  # a re-scored held-out nll_sum against the recorded one (float32 forward, other batching)
NLL_ABS_TOL = 1e-4
FEW_SHOT_PREFIX = "cookbook MathEnv.standard_fewshot_prefix() then "
PROBE_SECONDS = 15.0  # one plain request before the SDK client: an unreachable service is bad input, said at once
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class _DropExtensionPropertyWarning(logging.Filter):
    """The cookbook warns on every datum built with all assistant messages; the recorded evaluator chose that."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "extension property" not in record.getMessage()


logging.getLogger("tinker_cookbook.renderers.base").addFilter(_DropExtensionPropertyWarning())


@dataclass
class Session:
    """The service client and what the re-scoring cost: every SDK request counted."""

    client: Any
    checks: tuple[Callable[..., list[Issue]], ...] = ()
    calls: int = 0
    seconds: float = 0.0
    loaded: dict[str, Any] = field(default_factory=dict)
    tokenizer: Any = None

    def call(self, request: Callable[[], Any]) -> Any:
        self.calls += 1
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            return request()


def open_session(backend: str) -> Session:
    """A stock `tinker.ServiceClient` for `backend` (credentials from the environment, as a run reads them; a loopback
    embedded backend takes its local key when none is set), after one plain request that it answers (the SDK itself
    would retry an unreachable service for minutes)."""
    try:
        target = ServiceTarget.from_backend(backend)
        if target.kind == "embedded":
            raise ServiceUnreachable("--backend names no service URL; start one (python -m embedded_tinker serve --port N "
                                     "--checkpoint-dir RUNS_DIR/.embedded-checkpoints) and pass http://127.0.0.1:N")
        where = target.describe()["base_url"]
        if urlsplit(target.base_url or "").hostname in LOOPBACK and not os.environ.get("TINKER_API_KEY"):
            problem = _loopback_problem(str(target.base_url), where)
            client = None if problem else tinker.ServiceClient(base_url=target.base_url, api_key=EMBEDDED_API_KEY)
        else:
            problem = target.answer_problem(PROBE_SECONDS)
            client = None if problem else target.service_client()
    except ServiceConfigError as err:
        raise ServiceUnreachable(str(err)) from None
    if problem:
        raise ServiceUnreachable(problem)
    return Session(client, checks=(REPRO_3, REPRO_4))


def _loopback_problem(base_url: str, where: str) -> str | None:
    try:
        response = httpx.get(base_url.rstrip("/") + CAPABILITIES_PATH, headers={"X-API-Key": EMBEDDED_API_KEY},
                             timeout=httpx.Timeout(PROBE_SECONDS, connect=5.0))
    except httpx.HTTPError as err:
        return f"backend {where} does not answer get_server_capabilities ({type(err).__name__}): is the service running?"
    return None if response.status_code < 300 else f"backend {where} answered HTTP {response.status_code}"


def record_id(result: dict[str, Any]) -> str:
    return canonical_sha256(as_list(as_dict(result.get("evidence")).get("checkpoints")))


def sampled_items(seed: str, item_ids: list[str], k: int = SAMPLE_ITEMS) -> list[str]:
    return sorted(set(item_ids), key=lambda item: hashlib.sha256(json.dumps([seed, item]).encode()).hexdigest())[:k]


def _provenance(ctx: GradeContext, rows: list[dict[str, Any]]) -> dict[str, Any]:
    evaluators = as_dict(as_dict(ctx.result.get("evaluation")).get("evaluators"))
    return as_dict(evaluators.get(str(rows[0].get("evaluator_id")))) if rows else {}


def _sampler(session: Session, checkpoint: str) -> Any:
    if checkpoint not in session.loaded:
        if checkpoint.startswith("tinker://"):
            session.loaded[checkpoint] = session.call(
                lambda: session.client.create_sampling_client(model_path=checkpoint).result())
        else:
            session.loaded[checkpoint] = session.call(
                lambda: session.client.create_sampling_client(base_model=checkpoint).result())
    return session.loaded[checkpoint]


def _tokenizer(ctx: GradeContext, session: Session, checkpoints: list[str]) -> Any:
    """The model's tokenizer: from the tokenizer id the run recorded (a run directory's events), else from a training
    client loaded from one of the record's trained checkpoints (a sampling client knows only the base model's name)."""
    if session.tokenizer is None:
        recorded = next((str(e["tokenizer_id"]) for e in ctx.events or [] if isinstance(e.get("tokenizer_id"), str)), None)
        if recorded is None:
            for event in ctx.events or []:
                found = as_dict(event.get("state")).get("tokenizer_id")
                recorded = str(found) if isinstance(found, str) else recorded
        if recorded is not None and os.path.isdir(recorded):
            session.tokenizer = get_tokenizer(recorded)
        else:
            path = next(c for c in checkpoints if c.startswith("tinker://"))
            client = session.call(lambda: session.client.create_training_client_from_state(path).result())
            session.tokenizer = client.get_tokenizer()
    return session.tokenizer


@rule("REPRO-3", "evaluator", "invalid|unverified", "a seeded sample of RL items re-sampled greedily from the recorded checkpoints (service)")
def REPRO_3(ctx: GradeContext, session: Session, notes: list[str]) -> list[Issue]:
    files = text_prediction_files(ctx)
    if not files:
        return []
    try:
        gold = evaluation_items(ctx.spec or {})
    except DataError as err:
        return [Issue("REPRO-3", UNVERIFIED, f"the evaluation data file the spec names cannot be read ({err})")]
    renderer_name = str(as_dict((ctx.spec or {}).get("rollout")).get("renderer") or DEFAULT_RENDERER)
    seed = record_id(ctx.result)
    issues: list[Issue] = []
    compared = same_text = 0
    checkpoints = [str(row.get("checkpoint")) for name in files for row in ctx.evidence.jsonl(name)[:1]]
    for name in files:
        rows = {str(row.get("item_id")): row for row in ctx.evidence.jsonl(name)}
        provenance = _provenance(ctx, list(rows.values()))
        decoding = as_dict(provenance.get("decoding"))
        template = str(provenance.get("prompt_template", ""))
        few_shot = template.startswith(FEW_SHOT_PREFIX)
        template = template.removeprefix(FEW_SHOT_PREFIX)
        if decoding.get("temperature") != 0.0 or not template.startswith("user: ") or "{question}" not in template:
            issues.append(Issue("REPRO-3", UNVERIFIED, f"{name}: decoding {short(decoding.get('temperature'))} or prompt "
                                                       f"template {short(template, 40)} is not greedy or not one it can "
                                                       "rebuild, so its predictions cannot be re-sampled"))
            continue
        checkpoint = str(next(iter(rows.values())).get("checkpoint"))
        try:
            sampler = _sampler(session, checkpoint)
            renderer = renderers.get_renderer(renderer_name, _tokenizer(ctx, session, checkpoints))
        except Exception as err:  # noqa: BLE001 - a checkpoint the service cannot load is said, not raised
            issues.append(Issue("REPRO-3", UNVERIFIED, f"{name}: the service cannot load {short(checkpoint, 80)} "
                                                       f"({type(err).__name__})"))
            continue
        params = tinker.SamplingParams(stop=renderer.get_stop_sequences(), max_tokens=int(decoding.get("max_tokens") or 0),
                                       temperature=0.0)
        contradicted = []
        for item in sampled_items(seed, [i for i in rows if i in gold]):
            convo = (MathEnv.standard_fewshot_prefix() if few_shot else []) + [
                {"role": "user", "content": template.removeprefix("user: ").replace("{question}", gold[item]["question"])}]
            prompt = renderer.build_generation_prompt(convo)
            answer = session.call(lambda: sampler.sample(prompt=prompt, num_samples=1, sampling_params=params).result())
            message, _ = renderer.parse_response(answer.sequences[0].tokens)
            content = renderers.get_text_content(message)
            compared += 1
            same_text += content == rows[item].get("prediction")
            verdict = score(content, gold[item]["answer"])
            if verdict is not None and rows[item].get("value") != (1.0 if verdict else 0.0):
                contradicted.append(f"{item} (recorded {short(rows[item].get('value'), 12)}, re-sampled "
                                    f"{short(content, 30)} scores {float(verdict)})")
        if contradicted:
            issues.append(Issue("REPRO-3", INVALID, f"{name}: {len(contradicted)} item(s) re-sampled greedily from "
                                                    f"{short(checkpoint, 80)} score otherwise (first: {contradicted[0]})"))
    notes.append(f"REPRO-3: {compared} item(s) re-sampled greedily from the recorded checkpoints, {same_text} with the "
                 "recorded text")
    return issues


def _final_states(ctx: GradeContext) -> dict[str, str]:
    """run -> its recorded final training state (the arm_training gate event of a run directory)."""
    states: dict[str, str] = {}
    for event in ctx.events or []:
        if event.get("event") == "gate" and event.get("gate") == "arm_training":
            states.update({str(k): str(v) for k, v in as_dict(as_dict(event.get("state")).get("final_states")).items()})
    return states


def _nll_files(ctx: GradeContext) -> list[str]:
    names = []
    for entry in as_list(as_dict(ctx.result.get("evaluation")).get("scores")):
        ref = as_dict(entry).get("predictions_ref")
        rows = ctx.evidence.jsonl(ref) if ctx.evidence.usable(ref) else None
        if rows and all(isinstance(row.get("prediction"), dict) and "nll_sum" in row["prediction"] for row in rows):
            names.append(ref)
    return list(dict.fromkeys(names))


def _heldout_rows(spec: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    path = as_dict(spec.get("eval")).get("path")
    if not path:
        raise DataError("the spec names its held-out split on a hub, not a file the grader can read offline")
    rows = {}
    for index, line in enumerate(read_capped_text(resolve_data_path(str(path))).splitlines()):
        if line.strip():
            row = json.loads(line)
            rows[str(row.get("prompt_id") or f"{index}")] = [{"role": str(m["role"]), "content": str(m["content"])}
                                                             for m in row["messages"]]
    return rows


@rule("REPRO-4", "evaluator", "invalid|unverified", "a seeded sample of held-out rows re-scored by forward from the recorded checkpoints (service)")
def REPRO_4(ctx: GradeContext, session: Session, notes: list[str]) -> list[Issue]:
    files = _nll_files(ctx)
    if not files:
        return []
    try:
        heldout = _heldout_rows(ctx.spec or {})
    except (DataError, ValueError, KeyError, TypeError) as err:
        return [Issue("REPRO-4", UNVERIFIED, f"the held-out rows cannot be read ({err})")]
    states, seed = _final_states(ctx), record_id(ctx.result)
    issues: list[Issue] = []
    compared = skipped = 0
    for name in files:
        rows = {str(row.get("item_id")): row for row in ctx.evidence.jsonl(name)}
        first = next(iter(rows.values()))
        checkpoint = states.get(str(first.get("run") or first.get("arm"))) or str(first.get("checkpoint"))
        if not checkpoint.startswith("tinker://"):
            skipped += 1
            continue
        template = str(_provenance(ctx, list(rows.values())).get("prompt_template", ""))
        renderer_name = (re.search(r"renderer (\S+?);", template) or [None, None])[1] or \
            str(as_dict((ctx.spec or {}).get("rollout")).get("renderer") or DEFAULT_RENDERER)
        max_length = int((re.search(r"max_length=(\d+)", template) or [None, (ctx.spec or {}).get("max_seq_len")])[1])
        try:
            client = session.loaded.get(checkpoint) or session.call(
                lambda: session.client.create_training_client_from_state(checkpoint).result())
            session.loaded[checkpoint] = client
            renderer = renderers.get_renderer(renderer_name, client.get_tokenizer())
        except Exception as err:  # noqa: BLE001 - a checkpoint the service cannot load is said, not raised
            issues.append(Issue("REPRO-4", UNVERIFIED, f"{name}: the service cannot load {short(checkpoint, 80)} "
                                                       f"({type(err).__name__})"))
            continue
        items = sampled_items(seed, [i for i in rows if i in heldout])
        datums = [conversation_to_datum(heldout[item], renderer, max_length, reduction="none") for item in items]
        output = session.call(lambda: client.forward(datums, "cross_entropy").result())
        off = []
        for item, datum, answer in zip(items, datums, output.loss_fn_outputs):
            weights = np.asarray(datum.loss_fn_inputs["weights"].to_numpy(), dtype=np.float64)
            logprobs = np.asarray(answer["logprobs"].to_numpy(), dtype=np.float64)
            nll, n_tokens = float(-logprobs[weights > 0].sum()), int((weights > 0).sum())
            recorded = as_dict(rows[item].get("prediction"))
            compared += 1
            if recorded.get("n_tokens") != n_tokens or not isinstance(recorded.get("nll_sum"), (int, float)) or \
                    not np.isclose(float(recorded["nll_sum"]), nll, rtol=NLL_REL_TOL, atol=NLL_ABS_TOL):
                off.append(f"{item} (recorded {short(recorded.get('nll_sum'), 14)} over {short(recorded.get('n_tokens'))} "
                           f"tokens, re-scored {nll:.6g} over {n_tokens})")
        if off:
            issues.append(Issue("REPRO-4", INVALID, f"{name}: {len(off)} held-out row(s) re-scored from "
                                                    f"{short(checkpoint, 80)} differ beyond rel {NLL_REL_TOL:g} "
                                                    f"(first: {off[0]})"))
    notes.append(f"REPRO-4: {compared} held-out row(s) re-scored by forward from the recorded checkpoints"
                 + (f"; {skipped} file(s) of the base model left out" if skipped else ""))
    return issues
