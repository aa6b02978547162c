"""Synthetic task families shipped with the embedded backend."""
