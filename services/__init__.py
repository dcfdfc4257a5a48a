"""Application logic without Telegram: LLM client, bounded tool loop, chat service, stats."""
