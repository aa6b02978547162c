"""How a service shows a client its adapter weights, and what to tell a service that cannot.

The optimizer update check of a forked optimizer reads the weights back through the stock SDK's
export routes (experiment/sft/service_probe.py). These texts are what the run and `--plan` say when
a service lacks them; this module imports nothing, so `--plan` can say it without a service.
"""

from __future__ import annotations

WEIGHT_ROUTES = (
    "POST /api/v1/save_weights_external (TrainingClient.save_weights_external: PEFT adapter_model.safetensors)",
    "GET /api/v1/training_runs/{run}/checkpoints/external_weights/{name}/external_weights_urls "
    "(RestClient.get_external_weights_urls: signed URLs a client can GET)",
)
HOW_TO_EXPOSE = (
    "expose the adapter weights through the stock SDK's export routes, the ones `tinker checkpoint download` uses: "
    + "; ".join(WEIGHT_ROUTES)
    + "; embedded_tinker/rest_api.py is a reference implementation to port into the fork, then rerun")
NOT_EXPOSED_IN_PRODUCTION = (
    "the production service has no adapter-export routes (save_weights_external and external_weights_urls answer "
    "404), so the forked optimizer's update cannot be read back and the correctness path stays required/unverified; "
    "the run stops at correctness_preflight before any training. To verify it: " + HOW_TO_EXPOSE)
SAME_CODE_ON_EMBEDDED = (
    "the embedded backend runs the treatment-disabled TriMuon and DiMuon-lite from one file (embedded_tinker/muon.py), "
    "so the baseline parity check compares one code path with itself and grades unverified")

# What the production service trains: every model with AdamW, whatever optimizer was declared at creation
# (embedded_tinker/exposure.py mirrors it in its production profile). An arm of another family is not served.
PRODUCTION_OPTIMIZER_FAMILY = "adamw"
NOT_SERVED_IN_PRODUCTION = (
    "the production service trains every model with AdamW (get_info reports {{\"type\": \"adamw\"}}) and no fork is "
    "deployed, so the preflight probe finds arm(s) {arms} on AdamW instead of their optimizer ({families}) and stops the "
    "run at preflight_probe before any training (never a silently swapped optimizer); deploy the fork that serves "
    "them and route those arms to it, then rerun")
