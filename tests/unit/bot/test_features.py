"""Each optional feature is one unit: its setting off, nothing of it is wired.

With OPERATOR_CHAT_ID unset and STREAM_ANSWERS=false the wired bot has neither handoff
nor streaming: no feature object, no router of theirs, and the core's collaborators are
their "nothing" defaults. With both on, their parts in the core's work come from their
`Feature` (the seam, bot/telegram/features/__init__.py) and nowhere else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from aiogram import Router

from bot.telegram.wiring import Application, build_application
from bot.telegram.wiring.telegram import one_at_most
from storage.database import Database
from tests.unit.test_config import make


def _names(routers: list[Router]) -> Iterator[str]:
    for router in routers:
        yield router.name
        yield from _names(router.sub_routers)


def _several_instances(db: Database) -> list[str]:
    """On PostgreSQL the instances feature is on (chats claimed by one instance)."""
    return ["instances"] if db.dialect.name == "postgres" else []


@pytest.fixture
async def wired(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, db: Database
) -> AsyncIterator[Application]:
    app = await build_application(make(monkeypatch, **request.param), db)
    yield app
    await app.bot.session.close()
    await app.model.aclose()
    await app.chat_service.aclose()


@pytest.mark.parametrize("wired", [{"STREAM_ANSWERS": "false"}], indirect=True)
async def test_with_handoff_and_streaming_off_nothing_of_them_is_wired(
    wired: Application, db: Database
) -> None:
    # with actions off only the note for presses on old cards ("actions_off"); the
    # shop's knowledge and products are on by default
    expected = ["voice", *_several_instances(db), "knowledge", "gaps", "products", "actions_off"]
    assert [f.name for f in wired.features] == expected
    routers = set(_names(wired.dispatcher.sub_routers))
    assert "stop_pressed" not in routers
    assert not any(name.startswith("handoff") or "operator" in name for name in routers)
    assert "request_human" not in wired.tool_names


@pytest.mark.parametrize("wired", [{"OPERATOR_CHAT_ID": "-1001234"}], indirect=True)
async def test_handoff_and_streaming_contribute_their_parts_through_the_seam(
    wired: Application, db: Database
) -> None:
    features = {f.name: f for f in wired.features}
    assert list(features) == [
        "handoff",
        "voice",
        "streaming",
        *_several_instances(db),
        "knowledge",
        "gaps",
        "products",
        "actions_off",
    ]
    streaming, handoff = features["streaming"], features["handoff"]
    assert streaming.drafts is not None and streaming.on_stored is not None
    assert handoff.after_turn is not None and handoff.person_button
    assert handoff.topic_lost is not None
    assert (streaming.after_turn, streaming.topic_lost, streaming.person_button) == (
        None,
        None,
        False,
    )
    # on PostgreSQL only the instances feature says who runs a chat's updates
    assert [f.name for f in wired.features if f.chats is not None] == _several_instances(db)
    assert "stop_pressed" in set(_names(wired.dispatcher.sub_routers))
    assert "request_human" in wired.tool_names


def test_what_only_one_feature_may_give_is_refused_from_two() -> None:
    first, second = object(), object()
    assert one_at_most("drafts", [None, first, None]) is first
    assert one_at_most("drafts", [None, None]) is None
    with pytest.raises(ValueError, match="two features give drafts"):
        one_at_most("drafts", [first, second])
