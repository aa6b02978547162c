"""The RL (GS1) family: loop, recipe, advantages and their reference, preflight, restoration, greedy eval."""
