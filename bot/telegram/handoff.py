"""The Telegram side of a handoff to a person: the operators' forum and its topics.

`HandoffDesk` knows OPERATOR_CHAT_ID and turns the decisions of `services.handoff` into
reply parts (`StoredReply`) that the update's outbox stores and then sends through the
sender, like every answer: a notice to the customer, the brief in the customer's topic,
a copy of a customer's message into the topic, a copy of an operator's message to the
customer. It creates a customer's topic on first need (`createForumTopic`), reuses it
for every later handoff, reopens it when a new handoff starts and closes it when one
ends (cosmetic: best effort). A topic an operator deleted is recreated when a part sent
into it is refused with "message thread not found" (`topic_lost`, called by the
responder), and that part goes to the new topic.

The start-up check (`check_operator_chat`) makes sure the chat exists, is a forum and
lets the bot manage topics; a problem is one line naming OPERATOR_CHAT_ID (exit 2).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from aiogram.enums import ChatType
from aiogram.exceptions import (
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramNetworkError,
    TelegramServerError,
)
from aiogram.methods import (
    CloseForumTopic,
    CreateForumTopic,
    GetChat,
    GetChatMember,
    ReopenForumTopic,
)
from aiogram.types import ChatMemberAdministrator, ChatMemberOwner, Message, User

from bot.telegram.formatting import markdown_to_messages
from bot.telegram.handoff_view import (
    HANDOFF_WORDS,
    OPERATOR_WORDS,
    OperatorWords,
    plain,
    render_brief,
    topic_name,
)
from bot.telegram.sender import Sender
from bot.telegram.texts import Language, Texts, TextTable, language_for
from services.handoff import HandoffBrief, HandoffService
from services.offers import Offer, PersonWillAnswer
from services.text_visibility import without_unsafe_controls
from storage.handoffs import Handoff
from storage.inbox import StoredReply

log = logging.getLogger(__name__)


class HandoffSetupError(Exception):
    """OPERATOR_CHAT_ID cannot be used; the message is the one line to print."""


@dataclass(frozen=True, slots=True)
class Begun:
    """A handoff the model asked for, due to be announced with the turn's answer."""

    handoff_id: int
    notice: str  # added under the answer, in the customer's language
    parts: tuple[StoredReply, ...]  # the brief in the customer's topic


class HandoffDesk:
    """Topics in the operators' forum and the parts that go there or come from there."""

    def __init__(
        self,
        *,
        operator_chat_id: int,
        service: HandoffService,
        sender: Sender,
        texts: TextTable,
    ) -> None:
        self.operator_chat_id = operator_chat_id
        self.service = service
        self._sender = sender
        self._texts = texts
        self._language: Language = texts.default_language
        # operators are staff: their words are in the shop's language, as the shop made them
        self.words: OperatorWords = texts.by_language[self._language].of(OPERATOR_WORDS)

    def customer_texts(self, language: str) -> Texts:
        return self._texts.by_language[language_for(language, default=self._language)]

    # --- start-up ------------------------------------------------------------------

    async def check_operator_chat(self, bot_id: int) -> None:
        """The chat exists, is private (no username: briefs carry order data), is a forum,
        and the bot is an admin that may manage topics."""
        name = f"OPERATOR_CHAT_ID {self.operator_chat_id}"
        try:
            chat = await self._sender.call(GetChat(chat_id=self.operator_chat_id))
            member = await self._sender.call(
                GetChatMember(chat_id=self.operator_chat_id, user_id=bot_id)
            )
        except (TelegramBadRequest, TelegramForbiddenError):
            raise HandoffSetupError(
                f"{name}: Telegram does not know this chat or the bot is not in it; add "
                "the bot to the operators' group and use the group's id"
            ) from None
        except (TelegramNetworkError, TelegramServerError) as exc:
            log.warning("could not check %s (%s); continuing", name, type(exc).__name__)
            return
        if chat.username:
            raise HandoffSetupError(
                f"{name}: the group is public (@{chat.username}), so anyone could read the "
                "customers' messages and order data; make it a private group"
            )
        if not chat.is_forum:
            raise HandoffSetupError(
                f"{name}: the group is not a forum; turn on Topics in the group's settings"
            )
        may_manage = isinstance(member, ChatMemberOwner) or (
            isinstance(member, ChatMemberAdministrator) and member.can_manage_topics
        )
        if not may_manage:
            raise HandoffSetupError(
                f"{name}: the bot must be an administrator of the group with the right "
                '"Manage topics"'
            )
        log.info("handoff to operators: chat %s is a forum the bot manages", self.operator_chat_id)

    # --- parts ---------------------------------------------------------------------

    def notice(self, chat_id: int, text: str) -> list[StoredReply]:
        """A fixed text (Markdown subset) to a customer chat."""
        return [
            StoredReply(html=part.html, plain=part.plain, chat_id=chat_id)
            for part in markdown_to_messages(text)
        ]

    def to_topic(self, topic_id: int, text: str) -> StoredReply:
        rendered = plain(text)
        return StoredReply(
            html=rendered.html,
            plain=rendered.plain,
            chat_id=self.operator_chat_id,
            thread_id=topic_id,
        )

    def copy_to_topic(self, topic_id: int, from_chat_id: int, message_id: int) -> StoredReply:
        return StoredReply(
            html="",
            plain="",
            chat_id=self.operator_chat_id,
            thread_id=topic_id,
            copy_from_chat_id=from_chat_id,
            copy_message_id=message_id,
        )

    def copy_to_customer(self, customer_chat_id: int, message_id: int) -> StoredReply:
        return StoredReply(
            html="",
            plain="",
            chat_id=customer_chat_id,
            copy_from_chat_id=self.operator_chat_id,
            copy_message_id=message_id,
        )

    async def brief_part(self, handoff: Handoff, topic_id: int) -> StoredReply:
        return self._brief_part(await self.service.brief(handoff), topic_id)

    def _brief_part(self, brief: HandoffBrief, topic_id: int) -> StoredReply:
        rendered = render_brief(brief, self.words)
        return StoredReply(
            html=rendered.html,
            plain=rendered.plain,
            chat_id=self.operator_chat_id,
            thread_id=topic_id,
        )

    def started_notice(self, texts: Texts) -> str:
        """What the customer is told when a handoff starts (with working hours if any)."""
        label = self.service.hours_label
        if label is not None and not self.service.operators_available():
            return texts.of(HANDOFF_WORDS).off_hours_for(label)
        return texts.of(HANDOFF_WORDS).handoff_started

    async def after_turn(
        self, message: Message, offers: Sequence[Offer], language: str, texts: Texts
    ) -> Begun | None:
        """The handoff the model opened in this turn (`request_human`), from the turn's
        offer — the turn's stored offers after a replay — in a private chat."""
        called = next((o for o in offers if isinstance(o, PersonWillAnswer)), None)
        if called is None or message.chat.type != ChatType.PRIVATE:
            return None
        chat_id = message.chat.id
        topic_id = await self.topic_for(chat_id, message.from_user, language, reopen=True)
        brief = await self.service.brief_for(chat_id, source="model", reason=called.reason)
        return Begun(
            handoff_id=called.handoff_id,
            notice=self.started_notice(texts),
            parts=(self._brief_part(brief, topic_id),),
        )

    # --- topics --------------------------------------------------------------------

    async def topic_for(
        self, chat_id: int, user: User | None, language: str, *, reopen: bool
    ) -> int:
        """The customer's topic id, created on first need; `reopen` for a new handoff."""
        topic = await self.service.topic_of(chat_id)
        if (
            topic is not None
            and topic.topic_id is not None
            and topic.operator_chat_id == self.operator_chat_id
        ):
            if reopen:
                await self.service.set_language(chat_id, language)
                await self._best_effort(
                    ReopenForumTopic(
                        chat_id=self.operator_chat_id, message_thread_id=topic.topic_id
                    )
                )
            return topic.topic_id
        title = topic_name(user, chat_id) if user is not None or topic is None else topic.title
        return await self._create(chat_id, title, language)

    async def _create(self, chat_id: int, title: str, language: str) -> int:
        created = await self._sender.call(
            # a title stored before control characters were stripped is cleaned here too
            CreateForumTopic(chat_id=self.operator_chat_id, name=without_unsafe_controls(title))
        )
        await self.service.save_topic(
            chat_id,
            operator_chat_id=self.operator_chat_id,
            topic_id=created.message_thread_id,
            title=title,
            language=language,
        )
        log.info("handoff topic %s created for chat %s", created.message_thread_id, chat_id)
        return created.message_thread_id

    async def close_topic(self, topic_id: int) -> None:
        await self._best_effort(
            CloseForumTopic(chat_id=self.operator_chat_id, message_thread_id=topic_id)
        )

    async def topic_lost(self, chat_id: int, topic_id: int) -> int | None:
        """A part's topic was deleted: recreate the customer's topic (the responder then
        sends the part there); None when it is not one of the bot's customer topics."""
        if chat_id != self.operator_chat_id:
            return None
        customer = await self.service.customer_of(chat_id, topic_id)
        await self.service.forget_topic(chat_id, topic_id)
        topic = await self.service.topic_of(customer) if customer is not None else None
        if customer is None or topic is None:
            return None
        log.warning("handoff topic %s was deleted; creating it again", topic_id)
        new_id = await self._create(customer, topic.title, topic.language)
        result = await self._sender.send_text(
            chat_id,
            plain(self.words.operator_recreated).html,
            parse_mode="HTML",
            message_thread_id=new_id,
        )
        if not result.delivered:
            log.warning("the note in recreated topic %s: %s", new_id, result.reason)
        return new_id

    async def _best_effort(self, method: CloseForumTopic | ReopenForumTopic) -> None:
        """Closing/reopening a topic only shows operators the state; never fail on it."""
        try:
            await self._sender.call(method)
        except Exception as exc:  # e.g. TOPIC_NOT_MODIFIED: it already was
            log.debug("%s: %s", method.__api_method__, type(exc).__name__)
