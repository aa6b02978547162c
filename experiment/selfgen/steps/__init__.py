"""The self-generated-tasks family's gate steps: `experiment/selfgen/steps/<gate>.py`, `run(ctx) -> GateVerdict`.

The self-generated spec is an RL run whose treatment arm trains on tasks the pipeline generated and
audited. It runs the RL steps (experiment/rl/steps/) except where its own step differs: the
generation audit (tasks generated, filtered, frozen and re-solved blind before any update) and the
activation pilot (each arm on its intended data). This family sits above the RL library it builds
on; only the gates import a step (contract `gate-steps` in pyproject.toml).
"""
