"""Prometheus metrics: `GET /metrics` on the web port (both modes, METRICS_ENABLED).

Two kinds of numbers, chosen so the hot path stays cheap:

- **Observed when a record is stored.** `Metrics` is the `RecordObserver` of the turn
  recorder (storage/records.py): a turn's duration by outcome, each model call's latency
  and error by model, each tool call by tool and status are counted once their rows are
  committed — a few microseconds per turn, no new code in the loop or the executor.
- **Read at scrape time.** Everything that is a state rather than an event (inbox rows per
  status, requests waiting in the sender's pacing queue, busy chats, flood-control waits
  the sender counted) is read by callbacks when Prometheus asks: `register_gauge` and
  `register_counter`. They are also the way to add a number owned elsewhere (e.g. open
  handoffs): one call with a name, a help text and a function, sync or async.

Label values are bounded: a tool name the model invented is `unknown`, a model that is not
configured is `other`, any code that is not a short identifier is `other`. No label ever
carries an id, a name or text.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from storage.records import AuditRecord, ModelCallRecord, TurnRecord

log = logging.getLogger(__name__)

PREFIX = "support_bot"
# A turn is one or more model round trips (about a second each) plus tools.
TURN_BUCKETS_S = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
MODEL_CALL_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)
UNKNOWN_TOOL = "unknown"
OTHER = "other"
_CODE_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")

Value = float | Mapping[str, float]
Read = Callable[[], Value | Awaitable[Value]]


def _code(value: str | None, default: str) -> str:
    """A short identifier as a label value; anything else is `other`."""
    if value is None:
        return default
    return value if _CODE_RE.match(value) else OTHER


@dataclass(frozen=True, slots=True)
class _Source:
    name: str
    documentation: str
    read: Read
    kind: str  # "gauge" | "counter"
    label: str | None


class _ScrapeTimeCollector(Collector):
    """Yields the values the last `refresh` read from the registered callbacks."""

    def __init__(self) -> None:
        self.sources: list[_Source] = []
        self.values: dict[str, Value] = {}

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            value = self.values.get(source.name)
            if value is None:
                continue
            family: GaugeMetricFamily | CounterMetricFamily
            labels = [source.label] if source.label else None
            if source.kind == "counter":
                family = CounterMetricFamily(source.name, source.documentation, labels=labels)
            else:
                family = GaugeMetricFamily(source.name, source.documentation, labels=labels)
            if isinstance(value, Mapping):
                for label_value, number in sorted(value.items()):
                    family.add_metric([label_value], float(number))
            else:
                family.add_metric([], float(value))
            yield family


class Metrics:
    """The bot's metrics registry; see the module docstring."""

    def __init__(self, *, tool_names: Iterable[str], model_names: Iterable[str]) -> None:
        self._tools = frozenset(tool_names)
        self._models = frozenset(model_names)
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._turns = Histogram(
            f"{PREFIX}_turn_duration_seconds",
            "Duration of a customer message's turn (model and tools), by outcome: the stop "
            "reason of an answered turn (completed, truncated, refused, withheld) or the "
            "error code of a failed one.",
            ["outcome"],
            buckets=TURN_BUCKETS_S,
            registry=self.registry,
        )
        self._model_calls = Histogram(
            f"{PREFIX}_model_call_duration_seconds",
            "Latency of one model request (fallbacks included), by configured model and "
            "purpose (chat, summary).",
            ["model", "purpose"],
            buckets=MODEL_CALL_BUCKETS_S,
            registry=self.registry,
        )
        self._model_errors = Counter(
            f"{PREFIX}_model_call_errors",
            "Model requests that failed, by configured model, purpose and error code.",
            ["model", "purpose", "error"],
            registry=self.registry,
        )
        self._tool_calls = Counter(
            f"{PREFIX}_tool_calls",
            "Tool calls proposed by the model, by tool (unknown: not on the allow-list) "
            "and status (success, business_error, rejected, timeout, technical_error).",
            ["tool", "status"],
            registry=self.registry,
        )
        self._scraped = _ScrapeTimeCollector()
        self.registry.register(self._scraped)
        # labelled children by label values: `labels()` costs as much as the observation,
        # and the label values are bounded (see the module docstring)
        self._children: dict[tuple[object, ...], Any] = {}

    def _child(self, metric: Histogram | Counter, *values: str) -> Any:
        key = (metric, *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    # --- RecordObserver (storage/records.py): called once a record is committed ---------

    def turn_saved(
        self,
        turn: TurnRecord,
        audit_records: Sequence[AuditRecord],
        model_calls: Sequence[ModelCallRecord],
    ) -> None:
        outcome = turn.error_code if turn.status == "failed" else turn.stop_reason
        self._child(self._turns, _code(outcome, OTHER)).observe(turn.duration_ms / 1000.0)
        for audit in audit_records:
            tool = audit.tool_name if audit.tool_name in self._tools else UNKNOWN_TOOL
            self._child(self._tool_calls, tool, str(audit.status)).inc()
        for call in model_calls:
            self.model_call_saved(call)

    def model_call_saved(self, call: ModelCallRecord) -> None:
        model = call.requested_model if call.requested_model in self._models else OTHER
        purpose = _code(call.purpose, OTHER)
        self._child(self._model_calls, model, purpose).observe(call.latency_ms / 1000.0)
        if call.status == "error":
            error = _code(call.error_code, "error")
            self._child(self._model_errors, model, purpose, error).inc()

    # --- read at scrape time ---------------------------------------------------------

    def register_gauge(
        self, name: str, documentation: str, read: Read, *, label: str | None = None
    ) -> None:
        """A gauge read when /metrics is scraped: `read()` (sync or async) returns a
        number, or with `label` a mapping of label value → number."""
        self._add(_Source(name, documentation, read, "gauge", label))

    def register_counter(
        self, name: str, documentation: str, read: Read, *, label: str | None = None
    ) -> None:
        """Like `register_gauge` for a total that only grows (kept by its owner)."""
        self._add(_Source(name, documentation, read, "counter", label))

    def _add(self, source: _Source) -> None:
        if any(s.name == source.name for s in self._scraped.sources):
            raise ValueError(f"metric {source.name} is registered twice")
        self._scraped.sources.append(source)

    async def refresh(self) -> None:
        """Read every registered callback; one that fails is left out of this scrape."""
        for source in self._scraped.sources:
            try:
                value = source.read()
                if inspect.isawaitable(value):
                    value = await value
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # e.g. the database: /healthz reports that
                log.warning("metric %s could not be read (%s)", source.name, type(exc).__name__)
                self._scraped.values.pop(source.name, None)
                continue
            self._scraped.values[source.name] = value

    async def render(self) -> bytes:
        """The Prometheus text exposition of every metric, read now."""
        await self.refresh()
        return generate_latest(self.registry)


def add_metrics_route(app: web.Application, metrics: Metrics) -> None:
    """`GET /metrics` in the Prometheus text format."""

    async def serve(_request: web.Request) -> web.Response:
        body = await metrics.render()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/metrics", serve)
