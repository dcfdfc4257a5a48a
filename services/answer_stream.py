"""Between a streamed model step and the customer's draft: pace, screen, remember.

The LLM client hands every text delta of a streamed step to a `DraftRelay` (as the
step's whole text so far). The relay passes it on to the bot's `DraftSink` — the
Telegram draft of the answer — at most once per `interval_s`, and only after the output
guard has passed it: a text that quotes the system instruction is never shown, no later
draft of the turn is either, and the chat service then withholds the turn's answer as
it does today. When the step turns out to ask for a tool, the draft goes back to the
"thinking" placeholder: only an answering step's text is shown. A draft is shown only up
to the first place where a tool call written as text or an internal tag could begin
(services.text_calls.visible_draft: a `{`, a code fence, a `<tag`): the rest of such a
piece has not arrived yet, and the final answer is screened whole. With the customer's
`language`, a step's draft is shown only once its words say that language
(`LANGUAGE_WORDS` words that carry one, services/reply_language.py): an answer in another
language is asked again by the loop and must never flash on the customer's screen first.

Nothing here waits: the relay runs inside the model request, so the sink must return
at once (the bot sends drafts in the background and drops them under load).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from services.reply_language import language_of
from services.text_calls import visible_draft

log = logging.getLogger(__name__)

# words carrying a language (Cyrillic words, English function words) before a draft shows
LANGUAGE_WORDS = 3


class DraftSink(Protocol):
    """Where the bot shows an answer while it is written (bot/telegram/drafts.py); never blocks."""

    def show(self, text: str) -> None:
        """Show `text` (Markdown, the answer so far) in place of the previous draft."""

    def thinking(self) -> None:
        """Show the placeholder again (the step became a tool step)."""


class DraftRelay:
    """A `services.llm.types.StepListener` that feeds a `DraftSink`, paced and screened."""

    def __init__(
        self,
        sink: DraftSink,
        *,
        leaks: Callable[[str], bool],
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        language: str | None = None,
    ) -> None:
        self._sink = sink
        self._leaks = leaks
        self._interval_s = max(0.0, interval_s)
        self._clock = clock
        self._next_at = float("-inf")  # the first text is shown at once
        self._showing_text = False
        self._shown = ""
        self.leaked = False  # a draft text quoted the instruction: the turn is withheld
        self.drafts_shown = 0
        self._language = language  # the customer's; None: drafts are not held for it
        self._step_language: str | None = None  # what this step's words say, once known

    def on_text(self, text: str) -> None:
        text = visible_draft(text)
        if self.leaked or not text.strip() or (self._showing_text and text == self._shown):
            return
        if not self._in_language(text):
            return
        now = self._clock()
        if now < self._next_at:
            return  # the next delta after the interval carries this text too
        if self._leaks(text):
            self.leaked = True
            log.warning("a draft quoted the system instruction; no more drafts this turn")
            if self._showing_text:
                self._sink.thinking()
            return
        self._next_at = now + self._interval_s
        self._showing_text = True
        self._shown = text
        self.drafts_shown += 1
        self._sink.show(text)

    def _in_language(self, text: str) -> bool:
        """Whether the step's text may be shown: its language is the customer's (decided
        once per step, on the first `LANGUAGE_WORDS` words carrying one)."""
        if self._language is None:
            return True
        if self._step_language is None:
            self._step_language = language_of(text, at_least=LANGUAGE_WORDS)
        return self._step_language == self._language

    def on_tool_call(self) -> None:
        if self._showing_text and not self.leaked:
            self._sink.thinking()
        self._showing_text = False
        self._step_language = None
        self._next_at = float("-inf")  # the answering step's first text shows at once
