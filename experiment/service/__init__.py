"""The training service a run talks to: its target and credentials (target.py), the capacity policy and answer
deadline every service wait goes through (capacity.py), and the slots of the service-wide limit every request in
flight holds (request_slots.py). Below the contract: they import nothing else of experiment/."""
