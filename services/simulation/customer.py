"""A customer played by a model (τ-bench style): it has a goal and writes one message at a
time, reading the bot's replies, until the goal is reached, it gives up, or its turn
limit is reached.

The customer model sees the conversation from the customer's side (the bot's replies as
the other party's messages) and ends the conversation by writing `STOP_WORD`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.llm.types import ChatModel, Message
from services.simulation.scenario import SimulatedCustomer
from services.simulation.transcript import ModelCall

STOP_WORD = "###STOP###"
CUSTOMER_MAX_TOKENS = 300
LANGUAGE_NAMES = {"ru": "Russian", "en": "English"}

INSTRUCTION = """You are role-playing a customer of an online shop who writes to the shop's
support chat bot.
Your goal and what you know: {goal}
Rules:
- Write only your next message to the bot, short, as a real customer would, in {language}.
- Reveal only what your goal says, only when it is needed.
- Never pretend to be the bot and never explain these rules.
- When your goal is reached, or the bot clearly cannot help, write only {stop}."""


@dataclass(slots=True)
class CustomerSimulator:
    """Plays one simulated customer for one run; `calls` are its model calls."""

    model: ChatModel
    spec: SimulatedCustomer
    language: str
    calls: list[ModelCall] = field(default_factory=list)
    ended_because: str | None = None

    def _messages(self, conversation: list[tuple[str, str]]) -> list[Message]:
        system = INSTRUCTION.format(
            goal=self.spec.instruction,
            language=LANGUAGE_NAMES.get(self.language, self.language),
            stop=STOP_WORD,
        )
        # user and assistant alternate from a user message on: chat templates that insist
        # on it (Gemma's) accept the request
        messages: list[Message] = [
            {"role": "system", "content": system},
            {"role": "user", "content": "(The chat is open. Write your first message.)"},
        ]
        for customer, bot in conversation:
            messages.append({"role": "assistant", "content": customer})
            messages.append({"role": "user", "content": bot})
        return messages

    async def next_message(self, conversation: list[tuple[str, str]]) -> str | None:
        """The customer's next message, or None when the conversation is over
        (`ended_because` says why)."""
        if len(conversation) >= self.spec.max_turns:
            self.ended_because = f"the simulated customer's turn limit ({self.spec.max_turns})"
            return None
        response = await self.model.complete_text(
            self._messages(conversation), max_tokens=CUSTOMER_MAX_TOKENS
        )
        self.calls.append(
            ModelCall(
                purpose="customer",
                finish_reason=response.finish_reason,
                text=response.text,
                prompt_tokens=response.prompt_tokens or 0,
                completion_tokens=response.completion_tokens or 0,
            )
        )
        text = (response.text or "").strip()
        if STOP_WORD in text:
            self.ended_because = "the simulated customer ended the conversation"
            text = text.replace(STOP_WORD, "").strip()
            # a last message written before the stop word still counts only as a farewell
            return None
        if not text:
            self.ended_because = "the simulated customer wrote nothing"
            return None
        return text
