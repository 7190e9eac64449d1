"""Automatic routing: one entry point that picks the query mode per question."""
