"""What people read and re-check: summary text, plots, code revision (a run is re-checked by experiment.grading)."""
