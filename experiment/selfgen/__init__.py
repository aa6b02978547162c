"""The self-generated-tasks family: its gate steps in steps/ (generation audit, activation); sandbox, task generation, generation audit."""
