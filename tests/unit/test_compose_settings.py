"""The compose files as the README runs them: `cp .env.example .env`, the values the
README says to fill in, `docker compose [--profile P] up`. What each bot container
really gets is resolved here as the Compose Specification defines it (interpolation of
`${VAR}`, `${VAR:-default}`, `${VAR:?error}`… from the project's `.env`, over the whole
file before profiles are applied; then the image's `ENV`, overridden by `env_file`,
overridden by `environment`) and read by the bot's own settings loader. Where a
`docker compose` is installed, its own `config` output is compared with this model.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from bot.runtime.config import BotMode, Settings, SettingsError, load_settings
from tests.conftest import SETTING_NAMES
from tests.unit.test_container import ROOT, final_stage

README = (ROOT / "README.md").read_text()
ENV_EXAMPLE = (ROOT / ".env.example").read_text()

# What a person types for each value the README asks for (shapes the bot accepts).
FILLED_IN = {
    "BOT_TOKEN": "123456789:AAEexampleTokenFromBotFather_0123456789",
    "OPENAI_API_KEY": "sk-example-key-0123456789",
    "BOT_DOMAIN": "bot.example.com",
    "WEBHOOK_SECRET": "3f9c2a7b1d8e4f60a5b9c3d7e1f2a4b6",
    "POSTGRES_PASSWORD": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
}


class InterpolationError(Exception):
    """What `docker compose` stops with (exit 15): a `${VAR:?…}` with VAR unset."""


# --- the Compose Specification, the parts these files use -----------------------------

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[^}]*)\}|(?P<named>[A-Za-z_][A-Za-z0-9_]*))"
)
_BRACED = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?", re.S)


def _substitute(match: re.Match[str], env: dict[str, str]) -> str:
    if match["escaped"]:
        return "$"
    if match["named"]:
        return env.get(match["named"], "")
    braced = _BRACED.fullmatch(match["braced"])
    assert braced is not None, f"not a Compose variable: ${{{match['braced']}}}"
    name, op, arg = braced["name"], braced["op"], braced["arg"] or ""
    assert "${" not in arg, "nested interpolation is not modelled here"
    value = env.get(name)
    unset_or_empty = value is None or (value == "" and op is not None and op.startswith(":"))
    if op in ("-", ":-"):
        return arg if unset_or_empty else str(value)
    if op in ("?", ":?"):
        if unset_or_empty:
            raise InterpolationError(f"required variable {name} is missing a value: {arg}")
        return str(value)
    if op in ("+", ":+"):
        return "" if unset_or_empty else arg
    return value or ""


def interpolate(node: Any, env: dict[str, str]) -> Any:
    """Every string of the file, services of every profile included (as compose does)."""
    if isinstance(node, str):
        return _VARIABLE.sub(lambda m: _substitute(m, env), node)
    if isinstance(node, dict):
        return {key: interpolate(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(value, env) for value in node]
    return node


def dotenv(text: str) -> dict[str, str]:
    """KEY=VALUE lines as compose reads them (comments, blank lines, quotes)."""
    found: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        assert sep, f"not KEY=VALUE: {raw!r}"
        value = value.strip()
        if value[:1] in ("'", '"'):
            value = value[1 : value.index(value[0], 1)]
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        found[key.strip()] = value
    return found


def image_environment() -> dict[str, str]:
    """The final stage's ENV of the Dockerfile: the base every container starts from."""
    env: dict[str, str] = {}
    for keyword, rest in final_stage():
        if keyword == "ENV":
            for pair in rest.split():
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def _as_mapping(environment: Any) -> dict[str, str | None]:
    if environment is None:
        return {}
    if isinstance(environment, list):
        pairs = [item.partition("=") for item in environment]
        return {key: (value if sep else None) for key, sep, value in pairs}
    return {key: (None if value is None else str(value)) for key, value in environment.items()}


def _env_files(service: dict[str, Any]) -> list[str]:
    files = service.get("env_file") or []
    files = [files] if isinstance(files, str) else files
    return [item if isinstance(item, str) else item["path"] for item in files]


@dataclass
class Project:
    """A compose project as `docker compose` would load it from `folder`."""

    folder: Path
    file: str
    profiles: tuple[str, ...] = ()

    def model(self) -> dict[str, Any]:
        loaded = yaml.safe_load((self.folder / self.file).read_text())  # merges `<<`
        project_env = dotenv((self.folder / ".env").read_text())
        resolved: dict[str, Any] = interpolate(loaded, project_env)
        return resolved

    def services(self) -> dict[str, dict[str, Any]]:
        """The services the profiles enable (no `profiles`: always)."""
        return {
            name: service
            for name, service in self.model()["services"].items()
            if not service.get("profiles") or set(service["profiles"]) & set(self.profiles)
        }

    def declared_environment(self, service: dict[str, Any]) -> dict[str, str]:
        """env_file, then environment over it: what `docker compose config` prints."""
        env: dict[str, str] = {}
        for name in _env_files(service):
            env.update(dotenv((self.folder / name).read_text()))
        for key, value in _as_mapping(service.get("environment")).items():
            if value is None:
                env.pop(key, None)  # taken from the shell, which sets nothing here
            else:
                env[key] = value
        return env

    def container_environment(self, service: dict[str, Any]) -> dict[str, str]:
        """What the process sees: the image's ENV, then the service's own variables."""
        return {**image_environment(), **self.declared_environment(service)}


# --- the README's steps ------------------------------------------------------------------


def readme_names_to_fill(command: str) -> list[str]:
    """The settings the README's block with `command` says to fill in after
    `cp .env.example .env` (the names in its comments)."""
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        if command in block:
            lines = block.splitlines()
            start = next(i for i, line in enumerate(lines) if line.startswith("cp .env.example"))
            comments = [lines[start].partition("#")[2]]
            for line in lines[start + 1 :]:
                if not line.lstrip().startswith("#"):
                    break
                comments.append(line)
            return re.findall(r"\b[A-Z][A-Z0-9_]{2,}\b", " ".join(comments))
    raise AssertionError(f"the README shows no block with {command!r}")


def filled_in_env(names: list[str]) -> str:
    """.env.example with `names` set as a person would: the line edited, or added."""
    text = ENV_EXAMPLE
    for name in names:
        assert name in FILLED_IN, f"the README asks for {name}: give this test a value"
        line = f"{name}={FILLED_IN[name]}"
        pattern = re.compile(rf"^(# )?{name}=.*$", flags=re.M)
        if pattern.search(text):
            text = pattern.sub(line, text, count=1)
        else:
            text += f"\n{line}\n"
    return text


def project_folder(tmp_path: Path, env_text: str) -> Path:
    """A copy of the checkout's deployment files with the filled-in `.env`."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    for name in ("compose.yaml", "compose.instances.yaml", "Dockerfile"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "deploy", folder / "deploy")
    (folder / ".env").write_text(env_text)
    return folder


def bot_settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The bot's own settings loader over exactly `env` (no shell variables, no .env)."""
    for name in list(os.environ):
        if name.upper() in SETTING_NAMES:
            monkeypatch.delenv(name)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_settings(_env_file=None)


def volume_targets(service: dict[str, Any]) -> list[Path]:
    targets = []
    for volume in service.get("volumes", []):
        target = volume.split(":")[1] if isinstance(volume, str) else volume["target"]
        targets.append(Path(target))
    return targets


def caddy_upstream_ports(name: str) -> set[int]:
    text = (ROOT / "deploy" / name).read_text()
    return {int(port) for port in re.findall(r"\bbot(?:-\d|-polling)?:(\d+)", text)}


def assert_reachable_in_the_container(settings: Settings, service: dict[str, Any]) -> None:
    assert settings.web_host == "0.0.0.0"  # 127.0.0.1 would refuse Caddy's connections
    assert settings.health_enabled  # the image's HEALTHCHECK asks /healthz
    assert str(settings.web_port) in [str(port) for port in service.get("expose", ["8080"])]


# --- the tests ---------------------------------------------------------------------------


def test_polling_profile_as_the_readme_says_without_bot_domain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = readme_names_to_fill("docker compose --profile polling up")
    assert "BOT_DOMAIN" not in names
    project = Project(project_folder(tmp_path, filled_in_env(names)), "compose.yaml", ("polling",))
    services = project.services()  # interpolation must not stop on the webhook's BOT_DOMAIN
    assert set(services) == {"bot-polling"}
    service = services["bot-polling"]
    settings = bot_settings(project.container_environment(service), monkeypatch)
    assert settings.bot_mode is BotMode.POLLING
    database = settings.database
    assert database.setting == "DATABASE_PATH"
    path = Path(database.target)
    assert path.is_absolute() and any(
        path.is_relative_to(target) for target in volume_targets(service)
    ), f"{path} is not on a volume: the container's file system is read-only"
    assert settings.health_enabled and settings.web_host == "0.0.0.0"


def test_polling_with_pushes_as_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Long polling, and Caddy takes the shop's pushes to the bot's health server (where
    the push routes are served in polling mode)."""
    names = readme_names_to_fill("docker compose --profile polling-pushes up")
    project = Project(
        project_folder(tmp_path, filled_in_env(names)), "compose.yaml", ("polling-pushes",)
    )
    services = project.services()
    assert set(services) == {"bot-polling", "caddy-pushes"}
    bot = services["bot-polling"]
    settings = bot_settings(project.container_environment(bot), monkeypatch)
    assert settings.bot_mode is BotMode.POLLING
    assert_reachable_in_the_container(settings, bot)
    assert caddy_upstream_ports("Caddyfile.pushes") == {settings.web_port}
    caddy = project.declared_environment(services["caddy-pushes"])
    assert caddy["BOT_DOMAIN"] == "bot.example.com"


def test_webhook_profile_as_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = readme_names_to_fill("docker compose --profile webhook up")
    project = Project(project_folder(tmp_path, filled_in_env(names)), "compose.yaml", ("webhook",))
    services = project.services()
    assert set(services) == {"bot", "caddy"}
    bot = services["bot"]
    settings = bot_settings(project.container_environment(bot), monkeypatch)
    assert settings.bot_mode is BotMode.WEBHOOK
    assert settings.webhook_full_url == "https://bot.example.com/telegram/webhook"
    assert_reachable_in_the_container(settings, bot)
    assert caddy_upstream_ports("Caddyfile") == {settings.web_port}
    path = Path(settings.database.target)
    assert any(path.is_relative_to(target) for target in volume_targets(bot))
    caddy = project.declared_environment(services["caddy"])
    assert caddy["BOT_DOMAIN"] == "bot.example.com"
    assert caddy["WEBHOOK_PATH"] == settings.webhook_path  # Caddy routes the bot's path


def test_webhook_profile_without_bot_domain_stops_the_bot_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [n for n in readme_names_to_fill("--profile webhook up") if n != "BOT_DOMAIN"]
    project = Project(project_folder(tmp_path, filled_in_env(names)), "compose.yaml", ("webhook",))
    bot = project.services()["bot"]
    with pytest.raises(SettingsError, match="WEBHOOK_URL: expected an https:// URL"):
        bot_settings(project.container_environment(bot), monkeypatch)


def test_several_instances_as_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = readme_names_to_fill("docker compose -f compose.instances.yaml up")
    folder = project_folder(tmp_path, filled_in_env(names))
    services = Project(folder, "compose.instances.yaml").services()
    assert {"postgres", "bot-1", "bot-2", "caddy"} <= set(services)
    project = Project(folder, "compose.instances.yaml")
    for name in ("bot-1", "bot-2"):
        settings = bot_settings(project.container_environment(services[name]), monkeypatch)
        assert settings.instance_id == name
        assert settings.bot_mode is BotMode.WEBHOOK
        assert settings.webhook_full_url == "https://bot.example.com/telegram/webhook"
        assert_reachable_in_the_container(settings, services[name])
        url = urlparse(str(settings.database.target))
        assert settings.database.setting == "DATABASE_URL"
        assert (url.hostname, url.password) == ("postgres", FILLED_IN["POSTGRES_PASSWORD"])
    assert caddy_upstream_ports("Caddyfile.instances") == {8080}


LOCAL_RUN_ENV = """
DATABASE_PATH=data/bot.sqlite3
WEB_HOST=127.0.0.1
WEB_PORT=9000
HEALTH_ENABLED=false
"""


@pytest.mark.parametrize(
    ("file", "profiles", "service", "command"),
    [
        ("compose.yaml", ("polling",), "bot-polling", "--profile polling up"),
        ("compose.yaml", ("polling-pushes",), "bot-polling", "--profile polling-pushes up"),
        ("compose.yaml", ("webhook",), "bot", "--profile webhook up"),
        ("compose.instances.yaml", (), "bot-1", "compose.instances.yaml up"),
    ],
)
def test_a_dotenv_made_for_a_local_run_does_not_move_the_container(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    file: str,
    profiles: tuple[str, ...],
    service: str,
    command: str,
) -> None:
    """An older .env (or one also used for `make run`) sets the local values; through
    `env_file` they must not reach the container, where the file system is read-only
    and Caddy connects from another container."""
    env_text = filled_in_env(readme_names_to_fill(command)) + LOCAL_RUN_ENV
    project = Project(project_folder(tmp_path, env_text), file, profiles)
    bot = project.services()[service]
    settings = bot_settings(project.container_environment(bot), monkeypatch)
    assert_reachable_in_the_container(settings, bot)
    if settings.database.setting == "DATABASE_PATH":
        path = Path(settings.database.target)
        assert any(path.is_relative_to(target) for target in volume_targets(bot))


@pytest.mark.parametrize("name", ["compose.yaml", "compose.instances.yaml"])
def test_no_fixed_project_name(name: str) -> None:
    """Named after the folder: two checkouts do not share containers and volumes."""
    loaded = yaml.safe_load((ROOT / name).read_text())
    assert "name" not in loaded
    assert not any(
        "image" in service for service in loaded["services"].values() if "build" in service
    )


# --- the real `docker compose`, where there is one --------------------------------------


def docker_compose() -> list[str]:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker CLI on this machine: the model above is the check")
    probe = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        reason = (probe.stderr or probe.stdout).strip().splitlines()[:1]
        pytest.skip(f"no docker compose plugin here ({' '.join(reason)}): the model is the check")
    return [docker, "compose"]


@pytest.mark.parametrize(
    ("file", "profiles", "command"),
    [
        ("compose.yaml", ("polling",), "docker compose --profile polling up"),
        ("compose.yaml", ("polling-pushes",), "docker compose --profile polling-pushes up"),
        ("compose.yaml", ("webhook",), "docker compose --profile webhook up"),
        ("compose.instances.yaml", (), "docker compose -f compose.instances.yaml up"),
    ],
)
def test_docker_compose_config_agrees_with_the_model(
    tmp_path: Path, file: str, profiles: tuple[str, ...], command: str
) -> None:
    compose = docker_compose()
    folder = project_folder(tmp_path, filled_in_env(readme_names_to_fill(command)))
    args = [*compose, "--project-directory", str(folder), "-f", str(folder / file)]
    for profile in profiles:
        args += ["--profile", profile]
    result = subprocess.run(
        [*args, "config", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    real = json.loads(result.stdout)["services"]
    project = Project(folder, file, profiles)
    model = project.services()
    assert set(real) == set(model)
    for name, service in model.items():
        declared = {k: str(v) for k, v in (real[name].get("environment") or {}).items()}
        assert declared == project.declared_environment(service), name
