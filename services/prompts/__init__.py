"""Versioned prompt templates and the registry that says which version is active.

prompts = build_prompt_registry()
system = prompts.render("support_chat", shop_name="Кофейный двор")
system.text, system.ref  # ref == "support_chat@5", stored with the turn
"""

from services.prompts.conversation_summary import CONVERSATION_SUMMARY_ID, CONVERSATION_SUMMARY_V1
from services.prompts.registry import PromptRegistry
from services.prompts.support_chat import (
    SUPPORT_CHAT_ACTIONS_ID,
    SUPPORT_CHAT_ACTIONS_V1,
    SUPPORT_CHAT_ACTIONS_V2,
    SUPPORT_CHAT_ACTIONS_V3,
    SUPPORT_CHAT_ACTIONS_V4,
    SUPPORT_CHAT_ID,
    SUPPORT_CHAT_V1,
    SUPPORT_CHAT_V2,
    SUPPORT_CHAT_V3,
    SUPPORT_CHAT_V4,
    SUPPORT_CHAT_V5,
)
from services.prompts.template import PromptError, PromptTemplate, RenderedPrompt


def build_prompt_registry() -> PromptRegistry:
    """A fresh registry with every prompt version; the newest of each is active."""
    registry = PromptRegistry()
    registry.register(SUPPORT_CHAT_V1)  # kept: turns stored with older versions name them
    registry.register(SUPPORT_CHAT_V2)
    registry.register(SUPPORT_CHAT_V3)
    registry.register(SUPPORT_CHAT_V4)
    registry.register(SUPPORT_CHAT_V5, active=True)
    registry.register(SUPPORT_CHAT_ACTIONS_V1)
    registry.register(SUPPORT_CHAT_ACTIONS_V2)
    registry.register(SUPPORT_CHAT_ACTIONS_V3)
    registry.register(SUPPORT_CHAT_ACTIONS_V4, active=True)  # with ACTIONS_ENABLED
    registry.register(CONVERSATION_SUMMARY_V1, active=True)
    return registry


__all__ = [
    "CONVERSATION_SUMMARY_ID",
    "SUPPORT_CHAT_ACTIONS_ID",
    "SUPPORT_CHAT_ID",
    "PromptError",
    "PromptRegistry",
    "PromptTemplate",
    "RenderedPrompt",
    "build_prompt_registry",
]
