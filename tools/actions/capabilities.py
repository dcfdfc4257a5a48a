"""Which actions the connected shop carries out, as far as the bot knows now.

Nothing until the shop has said (`learn`: the backend's `supported_actions` — what it
implements, or for http what the shop declares at `GET /capabilities`), so the model is
never offered an action the shop may not do. An action the shop answers "not supported"
(501/405) is withdrawn at once, for every customer, until the shop is asked again.
"""

from __future__ import annotations

import logging

from tools.shop.backend import OrderActions, ShopUnavailable

log = logging.getLogger(__name__)


class ActionCapabilities:
    def __init__(self, actions: OrderActions, known: frozenset[str] | None = None) -> None:
        self._actions = actions
        self._known = known

    @property
    def known(self) -> frozenset[str] | None:
        """The actions the shop carries out; None until it has said."""
        return self._known

    def supports(self, name: str) -> bool:
        return self._known is not None and name in self._known

    async def learn(self) -> frozenset[str] | None:
        """Ask the shop; what it said, or None when it could not say now (kept as it was)."""
        try:
            said = await self._actions.supported_actions()
        except ShopUnavailable as exc:
            log.warning("the shop could not say which actions it carries out (%s)", exc.kind)
            return None
        if said != self._known:
            log.info("the shop carries out: %s", ", ".join(sorted(said)) or "no actions")
        self._known = said
        return said

    def withdraw(self, name: str) -> None:
        """The shop answered that it does not do `name`: offer it no more."""
        if self.supports(name):
            log.warning("the shop answered that it does not carry out %s: no longer offered", name)
            assert self._known is not None
            self._known = self._known - {name}
