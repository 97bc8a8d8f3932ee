"""Pieces every service shares: logging set-up and the start-up heap freeze."""
