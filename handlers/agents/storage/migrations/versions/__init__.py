"""Revisions, oldest first: ``v0001_initial`` creates the agents schema."""
