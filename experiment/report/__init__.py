"""What people read and re-check: summary text, plots, code revision, validation of a finished run."""
