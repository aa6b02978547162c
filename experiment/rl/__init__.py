"""The RL family (GS1, stock GRPO): gate steps in steps/; loop, recipe, advantages and their reference, preflight, restoration, activation pilots, greedy eval."""
