"""The SFT family's gate steps: `experiment/sft/steps/<gate>.py`, one module per gate, `run(ctx) -> GateVerdict`.

The gate table (experiment.gates.GATES) hands an SFT spec (training_type "sft") to these. What the steps share (the training runs, routing, sessions) is `experiment/sft/runs.py`;
the loop, loss evaluation and adaptation manifests are the family's library beside it. Only the
gates import a step (contract `gate-steps` in pyproject.toml).
"""
