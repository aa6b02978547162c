"""The RL family's gate steps (GS1 and the stock cookbook GRPO path): `experiment/rl/steps/<gate>.py`.

One module per gate, `run(ctx) -> GateVerdict`, handed an RL spec (training_type "rl") by
the gate table (experiment.gates.GATES); the self-generated-tasks spec runs these too
except where experiment/selfgen/steps/ has its own. The loop, recipe, estimators, restoration and
greedy evaluation are the family's library beside this package; only the gates import a step
(contract `gate-steps` in pyproject.toml).
"""
