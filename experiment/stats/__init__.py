"""Pure numbers and records: paired decision, correctness tolerances, feasibility, activation, evaluator records."""
