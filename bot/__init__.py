"""Telegram adapter and composition root: the only package importing aiogram or settings."""
