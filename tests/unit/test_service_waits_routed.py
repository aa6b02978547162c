"""Every wait on the training service goes through the run's answer deadline (issue 32).

A run stalls on a service that stopped answering wherever the code waits on the SDK itself: an
SDK future's `.result()`, or `run_async(...)` of coroutines that await SDK calls. Each such wait in
experiment/ must be made inside a function handed to the run's service caller (`ctx.call_service`,
`session.call`, `ctx.wait_for_service`: experiment.service.capacity.call_with_answer_deadline), carry its own
timeout, or be one of the few listed below with the reason it is bounded elsewhere. The check reads the
source (ast): a new direct wait fails here with its file and line.
"""

from __future__ import annotations

import ast

from suite import REPO_ROOT

EXPERIMENT = REPO_ROOT / "experiment"
ROUTED_CALLERS = {"call", "call_service", "wait_for_service"}  # the run's service callers
WAITS = {"result", "run_async"}
# (file, function): why its wait is bounded although the function itself is not handed to a caller
BOUNDED_ELSEWHERE = {
    ("experiment/service/target.py", "served_models"): "spec_intake makes it through ctx.call_service",
    ("experiment/service/target.py", "take"): "a local Future: the early start of the embedded server (EarlyEmbedded)",
    ("experiment/service/target.py", "stop"): "a local Future: the early start of the embedded server (EarlyEmbedded)",
    ("experiment/rl/recipe.py", "run_async"): "its definition",
    ("experiment/sft/steps/correctness_preflight.py", "_computed"):
        "a local Future: the float64 references computed on the client beside the service's jobs",
}
NOT_SERVICE_CODE = ("experiment/grading/", "experiment/report/", "experiment/stats/", "experiment/contract/")


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def unrouted_waits(source: str, path: str) -> list[str]:
    """'path:line' of each service wait in `source` that no service caller bounds."""
    tree = ast.parse(source)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    routed_calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _name(node.func) in ROUTED_CALLERS]
    routed_lambdas = {id(arg) for call in routed_calls for arg in call.args if isinstance(arg, ast.Lambda)}
    routed_names = {arg.id for call in routed_calls for arg in call.args if isinstance(arg, ast.Name)}

    def bounded(node: ast.AST) -> bool:
        current = parents.get(node)
        while current is not None:
            if isinstance(current, ast.Lambda) and id(current) in routed_lambdas:
                return True
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if current.name in routed_names or (path, current.name) in BOUNDED_ELSEWHERE:
                    return True
            current = parents.get(current)
        return False

    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _name(node.func) in WAITS):
            continue
        if _name(node.func) == "result" and not isinstance(node.func, ast.Attribute):
            continue
        if any(keyword.arg == "timeout" for keyword in node.keywords) or (node.args and _name(node.func) == "result"):
            continue  # .result(timeout=...) / .result(60): bounded by its own timeout
        if not bounded(node):
            found.append((node.lineno, f"{path}:{node.lineno}"))
    return [where for _, where in sorted(found)]


def test_the_check_finds_a_direct_wait_and_accepts_a_routed_one():
    """Shown on the shapes the pipeline had before (a direct save, a bare run_async) and has now."""
    direct = ("def run(ctx, client):\n"
              "    uri = client.save_state('init').result().path\n"
              "    return run_async(pilot(ctx, client))\n")
    routed = ("def run(ctx, client):\n"
              "    uri = ctx.call_service(lambda: client.save_state('init').result().path)\n"
              "    def attempt():\n"
              "        return client.forward_backward([], 'cross_entropy').result()\n"
              "    ctx.call_service(attempt)\n"
              "    client.close('success').result(timeout=60)\n"
              "    return ctx.wait_for_service(lambda: run_async(pilot(ctx, client)))\n")
    assert unrouted_waits(direct, "step.py") == ["step.py:2", "step.py:3"]
    assert unrouted_waits(routed, "step.py") == []


def test_every_service_wait_in_experiment_goes_through_a_service_caller():
    found = []
    for file in sorted(EXPERIMENT.rglob("*.py")):
        path = file.relative_to(REPO_ROOT).as_posix()
        if not path.startswith(NOT_SERVICE_CODE):
            found += unrouted_waits(file.read_text(), path)
    assert found == [], f"waits on the service outside the run's answer deadline: {found}"
