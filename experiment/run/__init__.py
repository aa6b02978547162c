"""One run's machinery: context and state, store, service target, clients, capacity policy, data files."""
