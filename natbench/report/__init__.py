"""Aggregation of trial records into seed-style tables and plots."""
