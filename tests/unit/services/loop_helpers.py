"""Tiny test-local tools for loop unit tests: an echo tool and a tool that waits on events."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from tools.base import Caller, Tool, ToolBusinessError, ToolContext
from tools.executor import ToolExecutor
from tools.registry import ToolRegistry


class LookupArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str


class LookupResult(BaseModel):
    key: str
    value: str


class FakeTools:
    """`lookup` answers from a dict (`missing` raises a business error); `wait` holds on
    `barrier`/`release` so tests can prove concurrency or keep a call in flight."""

    def __init__(self, *, tool_timeout_s: float = 5.0) -> None:
        self.calls: list[str] = []
        self.barrier: asyncio.Barrier | None = None
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.registry = ToolRegistry()
        self.registry.register(
            Tool(
                name="lookup",
                description="Look a key up.",
                arguments_model=LookupArgs,
                result_model=LookupResult,
                handler=self._lookup,
                timeout_s=tool_timeout_s,
            )
        )
        self.registry.register(
            Tool(
                name="wait",
                description="Wait for the test.",
                arguments_model=LookupArgs,
                result_model=LookupResult,
                handler=self._wait,
                timeout_s=tool_timeout_s,
            )
        )
        self.executor = ToolExecutor(self.registry)

    async def _lookup(self, args: LookupArgs, context: ToolContext) -> LookupResult:
        self.calls.append(f"lookup:{args.key}")
        if args.key == "missing":
            raise ToolBusinessError("not_found", "no such key")
        return LookupResult(key=args.key, value=f"value-of-{args.key}")

    async def _wait(self, args: LookupArgs, context: ToolContext) -> LookupResult:
        self.calls.append(f"wait:{args.key}")
        self.started.set()
        if self.barrier is not None:
            await self.barrier.wait()
        else:
            await self.release.wait()
        return LookupResult(key=args.key, value="waited")


def context(turn_id: str = "turn-1") -> ToolContext:
    return ToolContext(caller=Caller(key=42, chat_id=4242), shop=cast(Any, None), turn_id=turn_id)
