"""The self-generated-tasks family: sandbox, task generation, generation audit."""
