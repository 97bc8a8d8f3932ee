"""Alembic migrations of the agents database (see ``handlers.agents.storage.migrate``)."""
