"""What a run is bound to: spec, plan, RESULT models, gate order and verdict type, rehearsal rules."""
