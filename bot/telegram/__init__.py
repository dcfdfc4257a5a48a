"""The Telegram adapter: updates in (polling, webhook), routers, the sender and its
pacing, formatting, keyboards, drafts, the features' Telegram sides and the wiring.
The only package of bot/ that imports aiogram."""
