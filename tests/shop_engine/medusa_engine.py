"""The real Medusa v2 engine for the live-shop tests: one per pytest session, from npm.

`medusa_engine` (session-scoped; booted in the background from the end of collection when
the session's tests need it, see `EngineBoot` and `BootPlugin`, else when a test asks):
1. Node.js 20+ or skip.
2. The pinned packages (tests/shop_engine/medusa/package.json + lock) installed once per
   machine into `${XDG_CACHE_HOME:-~/.cache}/shop-support-bot/medusa-<lock hash>/`
   (outside git; under a file lock, so parallel sessions install once). An unreachable npm
   registry skips with one line; any other install failure is an error.
3. Its own PostgreSQL over TCP on 127.0.0.1 (Medusa cannot use tests/pg.py's socket-only
   server, docs/plans/issue-31-live-shop.md §5.1) from pgserver's binaries, run as the
   `pgserver` user when we are root, as pgserver itself does.
4. `medusa db:migrate`, `medusa user`, `medusa start` on 127.0.0.1 and a free port (its
   own process group), then the seed (seed.mjs) through the Admin API.
Everything but the install cache is stopped, reaped and deleted at the session's end,
whatever happened (a failed start, a boot no test waited for, an interrupted run included).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).parent / "medusa"
SKIP_PREFIX = "Medusa engine tests skipped"
ADMIN_EMAIL = "admin@example.com"
ADMIN_PASSWORD = "supersecret"
_REGISTRY_ERRORS = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "ECONNRESET",
    "ENETUNREACH",
)


@dataclass
class MedusaEngine:
    """A running engine: its URL, the bot's secret key, the seeded orders and customers,
    and an admin client for the tests' own changes (ship an order, add one)."""

    url: str
    api_key: str
    orders: dict[str, int]
    customers: dict[str, dict[str, str]]
    location_id: str = ""
    _ids: dict[int, str] = field(default_factory=dict)

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        """One Admin API call with the secret key (as the bot authenticates); the JSON."""
        data = None if body is None else json.dumps(body).encode()
        token = base64.b64encode(f"{self.api_key}:".encode()).decode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"authorization": f"Basic {token}", "content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"{method} {path}: {exc.code} {exc.read()[:500]!r}") from exc

    def order_id(self, display_id: int) -> str:
        """The engine's `order_…` id of an order number."""
        if display_id not in self._ids:
            found = self.admin(
                "GET", f"/admin/orders?q={display_id}&fields=id,display_id&limit=100"
            )
            for order in found["orders"]:
                self._ids[int(order["display_id"])] = order["id"]
        return self._ids[display_id]

    def ship(self, display_id: int, tracking: str) -> None:
        """Fulfil and ship every item of an order, as the shop's staff would."""
        order_id = self.order_id(display_id)
        order = self.admin("GET", f"/admin/orders/{order_id}?fields=id,*items")
        items = [{"id": i["id"], "quantity": i["quantity"]} for i in order["order"]["items"]]
        location = self.location()
        self.admin(
            "POST",
            f"/admin/orders/{order_id}/fulfillments",
            {"location_id": location, "items": items},
        )
        got = self.admin("GET", f"/admin/orders/{order_id}?fields=*fulfillments")
        fulfillment = got["order"]["fulfillments"][-1]["id"]
        label = {
            "tracking_number": tracking,
            "tracking_url": f"https://track.example/{tracking}",
            "label_url": "https://track.example/label",
        }
        self.admin(
            "POST",
            f"/admin/orders/{order_id}/fulfillments/{fulfillment}/shipments",
            {"items": items, "labels": [label]},
        )

    def place_order(self, customer: str, quantity: int = 1) -> int:
        """A new order for a seeded customer ("anna", "boris"), as the shop's checkout
        would make it (a draft order converted); its number."""
        region = self.admin("GET", "/admin/regions?fields=id")["regions"][0]["id"]
        channel = self.admin("GET", "/admin/sales-channels?fields=id")["sales_channels"][0]["id"]
        option = self.admin("GET", "/admin/shipping-options?fields=id")["shipping_options"][0]["id"]
        draft = self.admin(
            "POST",
            "/admin/draft-orders",
            {
                "email": f"{customer}@example.com",
                "customer_id": self.customers[customer]["id"],
                "region_id": region,
                "sales_channel_id": channel,
                "items": [{"title": "USB-C cable", "quantity": quantity, "unit_price": 995}],
                "shipping_methods": [
                    {"shipping_option_id": option, "name": "Courier", "amount": 500}
                ],
                "shipping_address": {
                    "first_name": customer,
                    "address_1": "Tverskaya 1",
                    "city": "Moscow",
                    "country_code": "ru",
                    "postal_code": "125009",
                },
            },
        )["draft_order"]
        order = self.admin("POST", f"/admin/draft-orders/{draft['id']}/convert-to-order", {})[
            "order"
        ]
        self._ids[int(order["display_id"])] = order["id"]
        return int(order["display_id"])

    def deliver(self, display_id: int) -> None:
        """Mark the (shipped) order's last fulfilment delivered."""
        order_id = self.order_id(display_id)
        got = self.admin("GET", f"/admin/orders/{order_id}?fields=*fulfillments")
        fulfillment = got["order"]["fulfillments"][-1]["id"]
        self.admin(
            "POST", f"/admin/orders/{order_id}/fulfillments/{fulfillment}/mark-as-delivered", {}
        )

    def add_product(
        self,
        title: str,
        handle: str,
        description: str,
        option: str,
        stock: dict[str, int],
        price: int,
    ) -> str:
        """A published product with one option, a variant per value (its price in RUB,
        its inventory managed, `stock[value]` held at the warehouse), as the admin makes
        one; its id. Idempotent by handle (the session's engine is shared)."""
        found = self.admin("GET", f"/admin/products?handle={handle}&fields=id")["products"]
        if found:
            return str(found[0]["id"])
        channel = self.admin("GET", "/admin/sales-channels?fields=id")["sales_channels"][0]["id"]
        product = self.admin(
            "POST",
            "/admin/products",
            {
                "title": title,
                "handle": handle,
                "description": description,
                "status": "published",
                "options": [{"title": option, "values": list(stock)}],
                "sales_channels": [{"id": channel}],
                "variants": [
                    {
                        "title": value,
                        "options": {option: value},
                        "prices": [{"amount": price, "currency_code": "rub"}],
                        "manage_inventory": True,
                    }
                    for value in stock
                ],
            },
        )["product"]
        variants = self.admin(
            "GET",
            f"/admin/products/{product['id']}?fields=variants.title,"
            "variants.inventory_items.inventory_item_id",
        )["product"]["variants"]
        for variant in variants:
            item = variant["inventory_items"][0]["inventory_item_id"]
            self.admin(
                "POST",
                f"/admin/inventory-items/{item}/location-levels",
                {"location_id": self.location(), "stocked_quantity": stock[variant["title"]]},
            )
        return str(product["id"])

    def location(self) -> str:
        if not self.location_id:
            self.location_id = self.admin("GET", "/admin/stock-locations?fields=id")[
                "stock_locations"
            ][0]["id"]
        return self.location_id


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "shop-support-bot"


def _node_ok() -> None:
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        pytest.skip(f"{SKIP_PREFIX}: Node.js 20+ and npm not found")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    major = version.stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 20:
        pytest.skip(f"{SKIP_PREFIX}: Node.js 20+ not found ({version.stdout.strip()})")


class BootStopped(RuntimeError):
    """The boot was stopped (the session ended) before the engine was ready."""


class _Steps:
    """The boot's commands, each in its own process group, so that stopping the boot
    midway (the session ended first) ends the step that runs, its children included."""

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._current: subprocess.Popen[str] | None = None

    def run(
        self, command: list[str], cwd: Path, env: dict[str, str] | None, timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """Like `subprocess.run(capture_output=True, text=True)`; a timeout ends the
        whole group and raises `subprocess.TimeoutExpired`."""
        with self._lock:
            if self.stopped.is_set():
                raise BootStopped(f"stopped before {command[:2]}")
            process = subprocess.Popen(
                command,
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            self._current = process
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            process.communicate()
            raise
        finally:
            with self._lock:
                self._current = None
        if self.stopped.is_set():
            raise BootStopped(f"stopped during {command[:2]}")
        return subprocess.CompletedProcess(command, process.returncode, out, err)

    def stop(self) -> None:
        with self._lock:
            self.stopped.set()
            if self._current is not None:
                _kill_group(self._current)


def _kill_group(process: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def install_dir(steps: _Steps | None = None) -> Path:
    """The pinned packages, installed once per machine and lock (npm ci under a file lock)."""
    lock = (SOURCE / "package-lock.json").read_bytes()
    target = _cache_root() / f"medusa-{hashlib.sha256(lock).hexdigest()[:16]}"
    stamp = target / ".installed"
    if stamp.exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if stamp.exists():
            return target
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(SOURCE / name, target / name)
        try:
            done = (steps or _Steps()).run(
                ["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"],
                cwd=target,
                env=None,
                timeout=900,
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"{SKIP_PREFIX}: npm ci did not finish in 15 min (registry unreachable?)")
        output = done.stdout + done.stderr
        if done.returncode != 0:
            unreachable = [code for code in _REGISTRY_ERRORS if code in output]
            if unreachable:
                pytest.skip(f"{SKIP_PREFIX}: npm registry unreachable ({unreachable[0]})")
            raise RuntimeError(f"npm ci of the Medusa engine failed:\n{output[-3000:]}")
        stamp.write_text("ok\n")
    return target


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Postgres:
    """A small PostgreSQL cluster on 127.0.0.1 from pgserver's binaries (TCP: Medusa's
    driver cannot use a unix socket)."""

    def __init__(self, folder: Path) -> None:
        with warnings.catch_warnings():
            # platformdirs, imported by pgserver: "XDG_RUNTIME_DIR is not set" (harmless)
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            import pgserver
            from pgserver import utils
            from pgserver._commands import POSTGRES_BIN_PATH

        self._pg = pgserver
        self.data = folder / "pgdata"
        self.sockets = folder / "sock"
        self.user: str | None = None
        self.data.mkdir()
        self.sockets.mkdir()
        if os.geteuid() == 0:
            # PostgreSQL refuses to run as root; pgserver's own user and permission helpers
            import pwd

            self.user = "pgserver"
            utils.ensure_user_exists(self.user)
            utils.ensure_prefix_permissions(self.data)
            utils.ensure_folder_permissions(POSTGRES_BIN_PATH, 0o055)
            utils.ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o044)
            entry = pwd.getpwnam(self.user)
            for path in (self.data, self.sockets):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self.port = _free_port()
        self._started = False

    def start(self) -> None:
        self._pg.initdb(
            ["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=self.data, user=self.user
        )
        options = f"-h 127.0.0.1 -p {self.port} -k {self.sockets}"
        self._pg.pg_ctl(
            ["-w", "-o", options, "-l", str(self.data / "log"), "start"],
            pgdata=self.data,
            user=self.user,
            timeout=60,
        )
        self._started = True
        self._pg.psql(
            [
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-c",
                "CREATE DATABASE medusa",
            ],
            user=self.user,
            timeout=60,
        )

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/medusa?sslmode=disable"

    def stop(self) -> None:
        if self._started:
            with contextlib.suppress(Exception):
                self._pg.pg_ctl(
                    ["-w", "-m", "fast", "stop"], pgdata=self.data, user=self.user, timeout=60
                )


def _run(
    steps: _Steps, command: list[str], cwd: Path, env: dict[str, str], what: str, timeout: float
) -> str:
    done = steps.run(command, cwd, env, timeout)
    if done.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}"
        )
    return done.stdout


def _wait_healthy(
    steps: _Steps, url: str, process: subprocess.Popen[bytes], log: Path, within: float
) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"medusa start exited ({process.returncode}):\n{log.read_text()[-3000:]}"
            )
        with contextlib.suppress(OSError, urllib.error.URLError):
            with urllib.request.urlopen(url + "/health", timeout=5) as response:
                if response.status == 200:
                    return
        if steps.stopped.wait(0.25):
            raise BootStopped("stopped while medusa start came up")
    raise RuntimeError(f"medusa start never became healthy:\n{log.read_text()[-3000:]}")


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the engine's process group, SIGKILL after 10 s, and reap it."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(10)


@contextlib.contextmanager
def running_engine(steps: _Steps | None = None) -> Iterator[MedusaEngine]:
    """Install (once), start, seed; stop and delete everything on the way out. `steps`
    lets another thread stop the start midway (`EngineBoot.stop`)."""
    steps = steps or _Steps()
    _node_ok()
    packages = install_dir(steps)
    folder = Path(tempfile.mkdtemp(prefix="medusa-engine-"))
    postgres: _Postgres | None = None
    process: subprocess.Popen[bytes] | None = None
    try:
        try:
            postgres = _Postgres(folder)
        except ImportError as exc:
            pytest.skip(f"{SKIP_PREFIX}: pgserver is not installed ({exc})")
        postgres.start()
        project = folder / "project"
        project.mkdir()
        (project / "node_modules").symlink_to(packages / "node_modules")
        for name in ("package.json", "medusa-config.js"):
            shutil.copyfile(SOURCE / name, project / name)
        port = _free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("NODE_", "npm_"))},
            "DATABASE_URL": postgres.url,
            "MEDUSA_DISABLE_TELEMETRY": "true",
            "NODE_ENV": "development",
            "HOST": "127.0.0.1",
            "PORT": str(port),
        }
        cli = ["node", str(project / "node_modules" / "@medusajs" / "cli" / "cli.js")]
        _run(steps, [*cli, "db:migrate"], project, env, "medusa db:migrate", 600)
        _run(
            steps,
            [*cli, "user", "-e", ADMIN_EMAIL, "-p", ADMIN_PASSWORD],
            project,
            env,
            "medusa user",
            300,
        )
        log = folder / "medusa.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [*cli, "start", "--host", "127.0.0.1", "--port", str(port)],
                cwd=project,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(steps, url, process, log, 300)
        seed_env = {**env, "MEDUSA_URL": url, "MEDUSA_ADMIN_EMAIL": ADMIN_EMAIL}
        seed_env["MEDUSA_ADMIN_PASSWORD"] = ADMIN_PASSWORD
        out_text = _run(
            steps, ["node", str(SOURCE / "seed.mjs")], project, seed_env, "seed.mjs", 300
        )
        seeded = json.loads(out_text.strip().splitlines()[-1])
        yield MedusaEngine(
            url=url,
            api_key=seeded["api_key"],
            orders={k: int(v) for k, v in seeded["orders"].items()},
            customers=seeded["customers"],
        )
    finally:
        if process is not None:
            _end_group(process)
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)


# The outer limit on waiting for a boot: a first-ever install (npm ci, up to 15 min) plus
# the start (migrate up to 10 min, then start and seed) on a loaded machine.
BOOT_LIMIT_S = 1800.0
# How long the session's end waits for the boot's thread to stop and reap everything.
STOP_LIMIT_S = 180.0


class EngineBoot:
    """One engine booting in a daemon thread (`running_engine`), held until `stop`.

    The thread only drives subprocesses, so it hardly competes with the tests for the
    interpreter; the fixture waits on `ready` (an event, with an outer limit)."""

    def __init__(self) -> None:
        self._steps = _Steps()
        self.ready = threading.Event()
        self._release = threading.Event()
        self._engine: MedusaEngine | None = None
        self._error: BaseException | None = None
        self.began = time.monotonic()
        self.ready_after_s: float | None = None  # from the boot's start
        self.waited_s = 0.0  # by tests, in total
        self._thread = threading.Thread(target=self._main, name="medusa-engine-boot", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            with running_engine(self._steps) as engine:
                self._engine = engine
                self.ready_after_s = time.monotonic() - self.began
                self.ready.set()
                self._release.wait()
        except BaseException as exc:  # pytest.skip's exception included: the fixture raises it
            self._error = exc
        finally:
            self.ready.set()

    def wait(self, within: float = BOOT_LIMIT_S) -> bool:
        """Wait until the engine is ready or its boot ended; whether it did in time."""
        if self.ready.is_set():
            return True
        waiting = time.monotonic()
        try:
            return self.ready.wait(within)
        finally:
            self.waited_s += time.monotonic() - waiting

    def engine(self) -> MedusaEngine:
        """The running engine, or the boot's skip or error raised here."""
        if not self.wait():
            raise RuntimeError(f"the Medusa engine was not ready within {BOOT_LIMIT_S:.0f} s")
        if self._error is not None:
            raise self._error
        assert self._engine is not None
        return self._engine

    def stop(self, within: float = STOP_LIMIT_S) -> bool:
        """End the boot wherever it is and everything it started; whether it finished.
        Idempotent."""
        self._release.set()
        self._steps.stop()
        self._thread.join(within)
        return not self._thread.is_alive()


_BOOT = pytest.StashKey[EngineBoot]()


def _needs_engine(item: pytest.Item) -> bool:
    return "medusa_engine" in getattr(item, "fixturenames", ())


def _kept_engine() -> bool:
    return bool(os.environ.get("MEDUSA_TEST_ENGINE"))


def _boot(config: pytest.Config) -> EngineBoot:
    """The session's boot, begun now if it has not been."""
    boot = config.stash.get(_BOOT, None)
    if boot is None:
        boot = config.stash[_BOOT] = EngineBoot()
    return boot


def stop_engine_boot(config: pytest.Config) -> str | None:
    """(session end, tests/conftest.py) Stop the boot if one began, whether or not a test
    used it; a problem line if it did not stop in time."""
    boot = config.stash.get(_BOOT, None)
    if boot is None or boot.stop():
        return None
    return f"the Medusa engine's boot did not stop within {STOP_LIMIT_S:.0f} s"


# An xdist worker's figures for the summary line (its workeroutput's key)
_FIGURES = "medusa_engine_boot"
_WORKER_FIGURES = pytest.StashKey[list[tuple[float, float]]]()


class BootPlugin:
    """Begins the engine's boot right after collection when a selected test needs it, so
    it runs while the tests before the first `medusa` one do, and keeps the wait for it
    out of that test's pytest-timeout budget (registered by tests/conftest.py).

    Under pytest-xdist the tests that use the engine are one `xdist_group` (with
    `--dist loadgroup`, pyproject's addopts, one worker runs them all, so one engine
    boots); that worker boots it when the first of them starts."""

    @pytest.hookimpl(tryfirst=True)  # before xdist's own reads the groups
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if _needs_engine(item):
                item.add_marker(pytest.mark.xdist_group("medusa-engine"))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        config = session.config
        if config.option.collectonly or _kept_engine():
            return
        # an xdist worker collects every test but runs only some: boot when one asks
        if hasattr(config, "workerinput"):
            return
        if any(_needs_engine(item) for item in session.items):
            _boot(config)

    # tryfirst: outside pytest-timeout's own wrapper, so the wait is not the test's time
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        if _needs_engine(item) and not _kept_engine():
            _boot(item.config).wait()  # the fixture reports a skip, an error or a time-out
        return (yield)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """(xdist worker) Hand this worker's boot figures to the controller's summary."""
        boot = session.config.stash.get(_BOOT, None)
        output = getattr(session.config, "workeroutput", None)
        if output is not None and boot is not None and boot.ready_after_s is not None:
            output[_FIGURES] = (boot.ready_after_s, boot.waited_s)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """(xdist controller) A worker ended: keep its boot figures, if it booted."""
        figures = (getattr(node, "workeroutput", None) or {}).get(_FIGURES)
        if figures is not None:
            node.config.stash.setdefault(_WORKER_FIGURES, []).append(tuple(figures))

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        figures = list(config.stash.get(_WORKER_FIGURES, []))
        boot = config.stash.get(_BOOT, None)
        if boot is not None and boot.ready_after_s is not None:
            figures.append((boot.ready_after_s, boot.waited_s))
        for ready_after_s, waited_s in figures:
            terminalreporter.write_line(
                f"Medusa engine: ready {ready_after_s:.0f} s after its boot began; "
                f"tests waited {waited_s:.0f} s for it"
            )


@pytest.fixture(scope="session")
def medusa_engine(request: pytest.FixtureRequest) -> Iterator[MedusaEngine]:
    """The session's running, seeded Medusa engine (see the module docstring).

    MEDUSA_TEST_ENGINE=<file> reuses an engine a developer keeps running between runs
    (the JSON `python -m tests.shop_engine.medusa_engine <file>` writes): no start-up."""
    kept = os.environ.get("MEDUSA_TEST_ENGINE")
    if kept:
        seeded = json.loads(Path(kept).read_text())
        yield MedusaEngine(
            url=seeded["url"],
            api_key=seeded["api_key"],
            orders=seeded["orders"],
            customers=seeded["customers"],
        )
        return
    boot = _boot(request.config)
    try:
        yield boot.engine()
    finally:
        boot.stop()


def _hold(target: Path) -> None:
    """Start an engine, write its JSON to `target`, keep it until SIGTERM or Ctrl-C."""
    stop: list[int] = []
    signal.signal(signal.SIGTERM, lambda number, _frame: stop.append(number))
    with running_engine() as engine:
        target.write_text(
            json.dumps(
                {
                    "url": engine.url,
                    "api_key": engine.api_key,
                    "orders": engine.orders,
                    "customers": engine.customers,
                }
            )
        )
        print(f"Medusa at {engine.url}; MEDUSA_TEST_ENGINE={target}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while not stop:
                time.sleep(1)


if __name__ == "__main__":
    import sys

    _hold(Path(sys.argv[1]))
