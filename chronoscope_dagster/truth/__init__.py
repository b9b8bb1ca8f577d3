"""Validity intervals, anchored truth tables and present-day answers."""
