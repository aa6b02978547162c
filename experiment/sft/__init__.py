"""Supervised fine-tuning (the TriMuon spec): pieces in the target layout."""
