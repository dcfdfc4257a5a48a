"""Which words a customer sees for a finished turn: the model's answer or our own text.

Failures never show anything internal: availability problems get "try again in a
minute", a refusal gets a polite refusal, anything else a short apology. An answer the
output cap cut short says so, so the customer knows to ask for the rest. (An answer that
quotes the system instruction arrives here already withheld as a refusal: the chat
service checks it before anything is stored.)
"""

from __future__ import annotations

from bot.telegram.texts import Texts
from services.loop_types import UNAVAILABLE_CODES, StopReason, TurnReply

__all__ = ["UNAVAILABLE_CODES", "customer_text"]


def customer_text(reply: TurnReply, texts: Texts) -> str:
    if reply.error_code is not None:
        if reply.error_code in UNAVAILABLE_CODES:
            return texts.temporarily_unavailable
        return texts.apology
    if reply.stop_reason is StopReason.REFUSED:
        return texts.refused
    if reply.stop_reason is StopReason.STOPPED and not (reply.text or "").strip():
        return texts.stopped  # stopped before any answer text was written
    if not reply.text or not reply.text.strip():
        return texts.apology
    if reply.stop_reason is StopReason.TRUNCATED:  # ANSWER_MAX_TOKENS cut it off
        return f"{reply.text.rstrip()}…\n\n{texts.cut_short}"
    return reply.text
