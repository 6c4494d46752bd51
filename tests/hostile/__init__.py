"""Hostile-input tests: every input path with the outcome each bad input must have."""
