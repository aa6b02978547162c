"""One run's machinery: context, typed state (RunState), configuration (RunConfig), the one preparation (prepare_run), store, clients.

What a run stands on sits below the contract: the training service (experiment.service) and the data files
(experiment.data)."""
