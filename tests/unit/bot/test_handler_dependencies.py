"""Handlers get what they ask for, checked before anything runs.

A handler's collaborators come from its router builder (`HandlerDeps` and a feature's
own objects, in the closure), so mypy (`make check`) rejects a handler that uses one
that does not exist: the first test runs mypy on such a handler and expects exactly that
error. What aiogram still matches by parameter name is small and fixed: `ctx` (the
update's context), `bot`, and what a handler's own filters return; the second test walks
every handler and filter of the fully wired dispatcher (every feature on) and fails on
any other parameter, which aiogram would only report as a TypeError on the first update.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiogram import Router
from aiogram.dispatcher.event.handler import FilterObject, HandlerObject
from aiogram.filters import Command, CommandStart
from aiogram.filters.callback_data import CallbackQueryFilter

from bot.telegram.routers.handoff import InHandoffTopic, InOpenHandoff
from bot.telegram.wiring import build_application
from storage.database import Database
from tests.unit.test_config import make

ROOT = Path(__file__).resolve().parents[3]

BROKEN_HANDLER = """
from aiogram import Router
from aiogram.types import Message

from bot.telegram.context import HandlerDeps, UpdateContext


def build_refunds_router(deps: HandlerDeps) -> Router:
    router = Router(name="refunds")

    @router.message()
    async def on_refund(message: Message, ctx: UpdateContext) -> None:
        await deps.refunds.start(message.chat.id)  # no such dependency
        await ctx.outbox.send(ctx.texts.help)

    return router
"""


def test_mypy_rejects_a_handler_that_uses_a_missing_dependency(tmp_path: Path) -> None:
    snippet = tmp_path / "broken_router.py"
    snippet.write_text(BROKEN_HANDLER)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(snippet)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 1, checked.stdout
    assert '"HandlerDeps" has no attribute "refunds"' in checked.stdout
    # and nothing else: the rest of the snippet is how a real handler is written
    assert checked.stdout.count("error:") == 1, checked.stdout


# what a filter puts into the handler data, by filter type
FILTER_DATA: dict[type, frozenset[str]] = {
    Command: frozenset({"command"}),
    CommandStart: frozenset({"command"}),
    CallbackQueryFilter: frozenset({"callback_data"}),
    InOpenHandoff: frozenset({"open_handoff"}),
    InHandoffTopic: frozenset({"customer_chat_id", "topic_id"}),
}
ALWAYS = frozenset({"ctx", "bot"})


def _handlers(router: Router) -> Iterator[tuple[str, HandlerObject, list[FilterObject]]]:
    for name, observer in router.observers.items():
        outer = list(observer._handler.filters or [])
        for handler in observer.handlers:
            yield f"{router.name}.{name}", handler, outer + list(handler.filters or [])
    for child in router.sub_routers:
        yield from _handlers(child)


def _asked(callback: object) -> set[str]:
    """The parameters after the event that have no default (aiogram must supply them)."""
    parameters = list(inspect.signature(callback).parameters.values())[1:]  # type: ignore[arg-type]
    return {
        p.name
        for p in parameters
        if p.default is inspect.Parameter.empty and p.kind is not inspect.Parameter.VAR_KEYWORD
    }


async def test_every_handler_asks_only_for_what_the_dispatcher_gives(
    monkeypatch: pytest.MonkeyPatch, db: Database
) -> None:
    settings = make(monkeypatch, OPERATOR_CHAT_ID="-1001234", ADMIN_IDS="7")
    app = await build_application(settings, db)
    try:
        seen = 0
        routers = app.dispatcher.sub_routers  # the dispatcher's own handler feeds them
        for where, handler, filters in (h for r in routers for h in _handlers(r)):
            given = set(ALWAYS)
            for f in filters:
                given |= FILTER_DATA.get(type(f.callback), frozenset())
                assert _asked(f.callback) <= ALWAYS, f"a filter of {where} asks for more"
            asked = _asked(handler.callback)
            assert asked <= given, f"{where} {handler.callback.__name__} asks for {asked - given}"
            seen += 1
        assert seen >= 20  # every router of every feature was walked
    finally:
        await app.bot.session.close()
        await app.model.aclose()
        await app.chat_service.aclose()
