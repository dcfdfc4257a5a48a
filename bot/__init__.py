"""The bot: bot/telegram (the Telegram adapter), bot/runtime (the channel-neutral
runtime, no aiogram) and bot/programs (the command-line programs)."""
