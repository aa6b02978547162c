"""The house's shape, measured by one AST pass: modules, lines, the largest modules and functions, import
cycles, import-contract violations and the import hops from the CLI to a gate's domain code.

    python -m tools.house_metrics [ROOT]                   # one tree (default: this repository)
    python -m tools.house_metrics BEFORE_ROOT AFTER_ROOT --labels before,after   # two trees side by side
    python -m tools.house_metrics ROOT --json              # every number, for a script

Every import counts, as import-linter counts them (inside functions and under TYPE_CHECKING too). An
`importlib.import_module("pkg." ...)` whose name starts with a constant package prefix (an f-string such as
f"experiment.gates.{name}") is a *dynamic* edge to every module under that prefix: import-linter does not
see those, so cycles and violations are counted without and with them. A call whose module name is not
spelled at all (`import_module(variable)`) is counted as unresolved. The import contracts are read from the
tree's own pyproject.toml ([tool.importlinter]; types layers, forbidden, protected). "Hops" is the length of
the shortest import chain from `flows.run` (the CLI) to a module of a family's gate steps
(`experiment.<family>.steps.<gate>`).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tomllib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("experiment", "flows", "tasks", "embedded_tinker")
CLI_MODULE = "flows.run"
LONG_FUNCTION_LINES = 80
RUN_DIR_FILES = ("result.json", "events.jsonl", "manifest.json", "gates.parquet")  # the layout the issue names


@dataclass
class Module:
    name: str
    path: Path
    lines: int
    functions: list[tuple[str, int]] = field(default_factory=list)  # (qualified name, lines)
    static: set[str] = field(default_factory=set)  # modules it imports by name
    dynamic: set[str] = field(default_factory=set)  # modules an import_module("prefix" ...) may load
    unresolved: int = 0  # import_module calls whose module name is not spelled
    result_writes: int = 0  # update_result(...) calls: where a RESULT field is written
    layout_literals: int = 0  # string constants naming a file of the run directory's layout


def discover(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """module name -> file, for every .py file of the packages under root (a package is its __init__.py)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _known_prefix(name: str, known: set[str]) -> str | None:
    """The longest module of the house that `name` is or lies in (`pkg.mod.attr` -> `pkg.mod`)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _dynamic_prefix(call: ast.Call) -> str | None:
    """The constant package prefix of an importlib.import_module call's module name, or None."""
    func = call.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id == "import_module")
    if not named or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value)
    return ""


def _functions(tree: ast.AST) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child.end_lineno - child.lineno + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def read_module(name: str, path: Path, known: set[str]) -> Module:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    module = Module(name, path, len(text.splitlines()), _functions(tree))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (target := _known_prefix(alias.name, known)) is not None:
                    module.static.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[:len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                target = _known_prefix(f"{base}.{alias.name}", known) or _known_prefix(base, known)
                if target is not None:
                    module.static.add(target)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(RUN_DIR_FILES):
            module.layout_literals += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update_result":
            module.result_writes += 1
        if isinstance(node, ast.Call) and (prefix := _dynamic_prefix(node)) is not None:
            if not prefix:
                module.unresolved += 1
            elif prefix.endswith("."):
                module.dynamic.update(other for other in known if other.startswith(prefix))
            elif (target := _known_prefix(prefix, known)) is not None:
                module.dynamic.add(target)
    module.static.discard(name)
    module.dynamic -= module.static | {name}
    return module


def read_house(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Module]:
    files = discover(root, packages)
    known = set(files)
    return {name: read_module(name, path, known) for name, path in files.items()}


def edges(house: dict[str, Module], dynamic: bool) -> dict[str, set[str]]:
    return {name: module.static | (module.dynamic if dynamic else set()) for name, module in house.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return sorted(found, key=lambda component: (-len(component), component))


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def import_contracts(root: Path) -> list[dict]:
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return []
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return config.get("tool", {}).get("importlinter", {}).get("contracts", [])


def _layer_of(module: str, layers: list[list[str]]) -> tuple[int, str] | None:
    """(layer index, the sibling package) of the most specific layer package that holds the module."""
    best = None
    for position, siblings in enumerate(layers):
        for sibling in siblings:
            if _within(module, sibling) and (best is None or len(sibling) > len(best[1])):
                best = (position, sibling)
    return best


def violations(graph: dict[str, set[str]], contracts: list[dict]) -> list[str]:
    """'contract id: importer -> imported' for every import a layers, forbidden or protected contract forbids."""
    found = []
    for contract in contracts:
        kind, name = contract.get("type"), contract.get("id", contract.get("name", "?"))
        ignored = {line.replace(" ", "") for line in contract.get("ignore_imports", [])}
        for importer, imported_set in sorted(graph.items()):
            for imported in sorted(imported_set):
                if f"{importer}->{imported}" in ignored:
                    continue
                if kind == "layers":
                    layers = [[part.strip() for part in layer.replace("|", ":").split(":")]
                              for layer in contract["layers"]]
                    independent = ["|" in layer for layer in contract["layers"]]
                    upper, lower = _layer_of(importer, layers), _layer_of(imported, layers)
                    if upper is None or lower is None:
                        continue
                    wrong = upper[0] > lower[0] or (
                        upper[0] == lower[0] and independent[upper[0]] and upper[1] != lower[1])
                elif kind == "forbidden":
                    wrong = (any(_within(importer, p) for p in contract["source_modules"])
                             and any(_within(imported, p) for p in contract["forbidden_modules"]))
                elif kind == "protected":
                    protected = contract["protected_modules"]
                    wrong = (any(_within(imported, p) for p in protected)
                             and not any(_within(importer, p) for p in protected)
                             and not any(_within(importer, p) for p in contract.get("allowed_importers", [])))
                else:
                    continue
                if wrong:
                    found.append(f"{name}: {importer} -> {imported}")
    return found


def packages_on_several_layers(house: dict[str, Module], contracts: list[dict]) -> dict[str, list[int]]:
    """package -> the layers (by position, 0 the top) its modules sit on, for every package of a layers
    contract whose modules sit on more than one layer (e.g. experiment.run, split round experiment.contract)."""
    spread: dict[str, set[int]] = {}
    for contract in contracts:
        if contract.get("type") != "layers":
            continue
        layers = [[part.strip() for part in layer.replace("|", ":").split(":")] for layer in contract["layers"]]
        for name in house:
            if (place := _layer_of(name, layers)) is not None:
                package = place[1].rpartition(".")[0] or place[1]
                if package.count(".") >= 1:  # experiment.run, not experiment itself
                    spread.setdefault(package, set()).add(place[0])
    return {package: sorted(places) for package, places in sorted(spread.items()) if len(places) > 1}


def is_gate_step(module: str) -> bool:
    """A module of a family's gate steps: experiment.<family>.steps.<gate>."""
    parts = module.split(".")
    return len(parts) == 4 and parts[0] == "experiment" and parts[2] == "steps"


def shortest_chains(graph: dict[str, set[str]], start: str = CLI_MODULE) -> dict[str, list[str]]:
    """module -> the shortest import chain from `start` to it (breadth first, names in sorted order)."""
    chains = {start: [start]}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph.get(node, ())):
            if child not in chains:
                chains[child] = chains[node] + [child]
                queue.append(child)
    return chains


def measure(root: Path, top: int = 10) -> dict:
    house = read_house(root)
    static, full = edges(house, dynamic=False), edges(house, dynamic=True)
    contracts = import_contracts(root)
    functions = sorted(((f"{m.name}.{qual}", lines) for m in house.values() for qual, lines in m.functions),
                       key=lambda item: (-item[1], item[0]))
    steps = sorted(name for name in house if is_gate_step(name))
    static_chains, full_chains = shortest_chains(static), shortest_chains(full)
    reached = {name: full_chains[name] for name in steps if name in full_chains}
    farthest = max(reached.items(), key=lambda item: (len(item[1]), item[0]), default=(None, []))
    return {
        "root": str(root),
        "modules": len(house),
        "lines": sum(m.lines for m in house.values()),
        "lines_per_package": {p: sum(m.lines for n, m in house.items() if _within(n, p)) for p in PACKAGES},
        "largest_modules": [[m.name, m.lines] for m in sorted(house.values(), key=lambda m: (-m.lines, m.name))[:top]],
        "functions": len(functions),
        "functions_over_80_lines": sum(1 for _, lines in functions if lines > LONG_FUNCTION_LINES),
        "largest_functions": [list(item) for item in functions[:top]],
        "import_edges": sum(len(targets) for targets in static.values()),
        "dynamic_import_edges": sum(len(m.dynamic) for m in house.values()),
        "unresolved_dynamic_imports": sum(m.unresolved for m in house.values()),
        "cycles": cycles(static),
        "cycles_with_dynamic": cycles(full),
        "violations": violations(static, contracts),
        "violations_with_dynamic": violations(full, contracts),
        "packages_on_several_layers": packages_on_several_layers(house, contracts),
        "result_write_sites": sum(m.result_writes for m in house.values()),
        "result_write_modules": sum(1 for m in house.values() if m.result_writes),
        "layout_literals": sum(m.layout_literals for m in house.values()),
        "layout_literal_modules": sorted(m.name for m in house.values() if m.layout_literals),
        "gate_step_modules": len(steps),
        "gate_steps_reached_statically": sum(1 for name in steps if name in static_chains),
        "hops_to_gate_steps": sorted({len(chain) - 1 for chain in reached.values()}),
        "longest_chain_to_a_gate_step": farthest[1],
    }


ROWS = [
    ("modules", "modules"),
    ("lines", "lines"),
    *[(f"lines in {p}/", ("lines_per_package", p)) for p in PACKAGES],
    ("functions", "functions"),
    (f"functions over {LONG_FUNCTION_LINES} lines", "functions_over_80_lines"),
    ("largest function (lines)", ("largest_functions", 0)),
    ("largest module (lines)", ("largest_modules", 0)),
    ("import edges (static)", "import_edges"),
    ("dynamic import edges (import_module)", "dynamic_import_edges"),
    ("import_module calls with no spelled name", "unresolved_dynamic_imports"),
    ("import cycles, static (modules in them)", "cycles"),
    ("import cycles, with dynamic edges (modules)", "cycles_with_dynamic"),
    ("contract violations, static", "violations"),
    ("contract violations, with dynamic edges", "violations_with_dynamic"),
    ("packages whose modules sit on several layers", "packages_on_several_layers"),
    ("update_result( call sites (modules)", "result_write_sites"),
    ("run-dir file names as literals (modules)", "layout_literals"),
    ("gate step modules (reached by static imports)", "gate_step_modules"),
    (f"import hops from {CLI_MODULE} to a gate step", "hops_to_gate_steps"),
]


def _cell(metrics: dict, key) -> str:
    if isinstance(key, tuple):
        value = metrics[key[0]][key[1]]
        return f"{value[1]:,} ({value[0]})" if isinstance(value, list) else f"{value:,}"
    value = metrics[key]
    if key.startswith("cycles"):
        return f"{len(value)} ({sum(len(c) for c in value)})"
    if key.startswith("violations"):
        return str(len(value))
    if key == "packages_on_several_layers":
        return ", ".join(f"{package} ({len(places)})" for package, places in value.items()) or "none"
    if key == "result_write_sites":
        return f"{value} ({metrics['result_write_modules']})"
    if key == "layout_literals":
        return f"{value} ({len(metrics['layout_literal_modules'])})"
    if key == "gate_step_modules":
        return f"{value} ({metrics['gate_steps_reached_statically']})"
    if key == "hops_to_gate_steps":
        return "unreached" if not value else str(value[0]) if len(value) == 1 else f"{value[0]} to {value[-1]}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def table(measured: list[dict], labels: list[str]) -> str:
    lines = ["| | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(_cell(m, key) for m in measured) + " |" for label, key in ROWS]
    return "\n".join(lines)


def details(metrics: dict, label: str) -> str:
    out = [f"### {label}", "", "Largest modules: " + ", ".join(f"{n} {lines}" for n, lines in metrics["largest_modules"]),
           "", "Largest functions: " + ", ".join(f"{n} {lines}" for n, lines in metrics["largest_functions"])]
    for key, title in (("cycles_with_dynamic", "Cycles with dynamic edges"), ("cycles", "Static cycles")):
        for component in metrics[key]:
            out += ["", f"{title}: " + ", ".join(component)]
    for violation in metrics["violations_with_dynamic"]:
        out += ["", f"Violation{'' if violation in metrics['violations'] else ' (dynamic edge)'}: {violation}"]
    if metrics["layout_literal_modules"]:
        out += ["", "Run-dir file names spelled in: " + ", ".join(metrics["layout_literal_modules"])]
    if metrics["longest_chain_to_a_gate_step"]:
        out += ["", "Longest shortest chain to a gate step: " + " -> ".join(metrics["longest_chain_to_a_gate_step"])]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.house_metrics", description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", type=Path, help="repository roots (default: this one); two: before, after")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--top", type=int, default=10, help="how many largest modules and functions to list")
    parser.add_argument("--labels", help="comma-separated column names, one per root (default: the roots' paths)")
    args = parser.parse_args(argv)
    roots = args.roots or [Path(__file__).resolve().parent.parent]
    for root in roots:
        if not all((root / package).is_dir() for package in PACKAGES):
            print(f"refused: {root} is not a repository root with {', '.join(PACKAGES)}", file=sys.stderr)
            return 2
    measured = [measure(root, args.top) for root in roots]
    if args.json:
        print(json.dumps(measured if len(measured) > 1 else measured[0], indent=2))
        return 0
    labels = args.labels.split(",") if args.labels else [str(root) for root in roots]
    if len(labels) != len(roots):
        print(f"refused: --labels names {len(labels)} columns for {len(roots)} roots", file=sys.stderr)
        return 2
    print(table(measured, labels))
    for metrics, label in zip(measured, labels):
        print()
        print(details(metrics, label))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
