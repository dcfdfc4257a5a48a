"""The settings of several instances on one PostgreSQL database."""

from __future__ import annotations

import os
import socket

import pytest
from aiogram import Bot

from bot.telegram.features.instances import build_instances
from bot.telegram.sender import Sender
from storage.backend import Database
from tests.unit.test_config import error_for, make


def test_each_process_gets_its_own_instance_id_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, second = make(monkeypatch).instance_id, make(monkeypatch).instance_id
    assert first.startswith(f"{socket.gethostname()}:{os.getpid()}:")
    assert first != second  # two processes on one host never share an id


def test_instance_id_and_lease_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make(monkeypatch).claim_lease_s == 15.0
    settings = make(monkeypatch, INSTANCE_ID="bot-1", CLAIM_LEASE_S="4")
    assert (settings.instance_id, settings.claim_lease_s) == ("bot-1", 4.0)


def test_a_lease_under_a_second_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "CLAIM_LEASE_S" in error_for(monkeypatch, CLAIM_LEASE_S="0.5")


async def test_chats_are_claimed_only_on_postgresql(
    monkeypatch: pytest.MonkeyPatch, db: Database
) -> None:
    settings = make(monkeypatch, INSTANCE_ID="bot-1")
    sender = Sender(Bot(settings.bot_token.get_secret_value()))
    instances = build_instances(settings, db, sender)
    await sender.bot.session.close()
    if db.dialect.name == "sqlite":
        assert instances is None  # one process: the intake keeps its chats in memory
    else:
        assert instances is not None and instances.coordination.claims.owner == "bot-1"
