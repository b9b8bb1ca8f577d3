"""Evaluation: prompting models under the three context settings, matching, metrics."""
