"""SQLite persistence through aiosqlite: connection, migrations, repositories. No business rules."""
