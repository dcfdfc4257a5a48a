"""The channel-neutral runtime: what runs updates and the bot's own work without
knowing Telegram (intake, chat claims, leadership, metrics, logs). It never imports
aiogram (an import-linter contract)."""
