"""The run contract in code: gate order, verdict type, spec, plan, RESULT models, rehearsal scale."""
