"""Storage: the database (SQLAlchemy, SQLite or PostgreSQL), its schema and migrations, and
the blob store. Imports nothing of the agents service but its settings."""
