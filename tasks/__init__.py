"""One thin Prefect task per gate, in contract order (experiment.gates.GATE_ORDER)."""

from experiment.gates import GATE_ORDER
from tasks.spec_intake import spec_intake
from tasks.preflight_probe import preflight_probe
from tasks.generation_audit import generation_audit
from tasks.correctness_preflight import correctness_preflight
from tasks.restoration_preflight import restoration_preflight
from tasks.feasibility_pilot import feasibility_pilot
from tasks.activation_gate import activation_gate
from tasks.arm_training import arm_training
from tasks.evaluation import evaluation
from tasks.decision import decision

GATE_TASKS = {
    "spec_intake": spec_intake,
    "preflight_probe": preflight_probe,
    "generation_audit": generation_audit,
    "correctness_preflight": correctness_preflight,
    "restoration_preflight": restoration_preflight,
    "feasibility_pilot": feasibility_pilot,
    "activation_gate": activation_gate,
    "arm_training": arm_training,
    "evaluation": evaluation,
    "decision": decision,
}
if tuple(GATE_TASKS) != GATE_ORDER:
    raise RuntimeError("tasks/__init__.py must list every gate of experiment.gates.GATE_ORDER, in order")
