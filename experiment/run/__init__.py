"""One run's machinery: context, typed state (RunState), configuration (RunConfig), store, service target, clients, capacity policy, data files."""
