"""Persistence: one protocol (backend.py), SQLite (aiosqlite) or PostgreSQL (asyncpg) behind
it, migrations, repositories, chat claims and the polling lock. No business rules."""
