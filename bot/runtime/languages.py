"""The languages of the bot's own words (Russian, English) and the default one.

Apart from the texts (bot/telegram/texts.py, which check that each fits a Telegram message), so
the settings and the features' declarations name a language without Telegram.
"""

from __future__ import annotations

from typing import Literal, get_args

Language = Literal["ru", "en"]
LANGUAGES: tuple[Language, ...] = get_args(Language)
DEFAULT_LANGUAGE: Language = "ru"  # the shop's own language unless DEFAULT_LANGUAGE says
