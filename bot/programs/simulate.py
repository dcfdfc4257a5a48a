"""`support-bot simulate [FILE …]`: test the bot on the shop's own model before customers do.

Runs scenarios (services/simulation; the default suite when no file is named) through
the bot's own chat service, tool loop, tools, prompts and output guard, wired here
exactly as the running bot wires them (bot/telegram/wiring/core.py), against the configured
model endpoint (OPENAI_BASE_URL, OPENAI_API_KEY; `--model` to override, several to
compare), each run on a throwaway SQLite copy of the shop plus the scenario's own data —
the shop's own data from its database (DATABASE_PATH / DATABASE_URL, read once, never
written: `read_own_shop`) when it has some, else the demo — never the shop's database
itself, never a live shop (SHOP_BACKEND is ignored), never Telegram. `request_human` is
always offered, as with OPERATOR_CHAT_ID set, so handoff scenarios can be judged. Actions
(ACTIONS_ENABLED, or a scenario's own `actions_enabled`) are offered as in the bot; a
scenario's customer may press the card, carried out by the bot's own ActionService on
the throwaway orders.

`--from-feedback` writes scenario drafts from the answers rated 👎 in the bot's database
(DATABASE_PATH / DATABASE_URL; read only) instead.

Bounds: one run (scenario × model × trial) is stopped and failed after
`--scenario-timeout` seconds; no run starts after `--time-limit` seconds; a model whose
endpoint answered nothing in three runs in a row is not run further. The terminal and
the report say what was left out, so a model endpoint that hangs costs minutes, not an
hour.

Exit status: 0 every scenario met `--min-pass`; 1 some did not, or runs were left out;
2 bad settings or scenario files.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from bot.programs.data_import import describe_target
from bot.runtime.config import (
    Settings,
    SettingsError,
    load_database_choice,
    load_settings,
    load_shop_settings,
)
from bot.runtime.exit_codes import ExitCode
from bot.runtime.feature_catalog import (
    FeatureSpec,
    Needs,
    build_chat_parts,
    own_of,
    system_prompt,
    tools_of,
    words_of,
)
from bot.telegram.features.actions import ACTIONS
from bot.telegram.features.knowledge import KNOWLEDGE
from bot.telegram.features.registry import FEATURES
from bot.telegram.replies import customer_text
from bot.telegram.routers.actions import result_words
from bot.telegram.texts import TextsError, TextTable, load_text_table
from bot.telegram.wiring.core import (
    build_core,
    build_model,
    build_shop_directory,
    build_storage_retry,
    build_tools,
    build_turn_slots,
)
from services.actions import Outcome
from services.gaps import GapsService
from services.llm.client import OpenAIChatModel
from services.llm.errors import LLMAuthenticationError, LLMError
from services.llm.types import ChatModel
from services.loop_types import TurnReply
from services.simulation.drafts import drafts_document, gap_scenarios
from services.simulation.own_shop import OwnKnowledge, OwnShop, read_own_knowledge, read_own_shop
from services.simulation.report import (
    below,
    markdown_report,
    runs_jsonl,
    scores,
    terminal_table,
)
from services.simulation.runner import ModelTarget, Progress, RunResult, SimulatedBot, Simulator
from services.simulation.scenario import (
    Scenario,
    ScenarioError,
    ScenarioSettings,
    default_suite_files,
    load_scenarios,
)
from services.stats import Prices
from storage.database import Database, DatabaseOpenError, is_database_error, open_database
from storage.feedback import disliked_conversations
from storage.knowledge import KnowledgeRepository
from storage.migrations import MigrationError
from storage.outcomes import OutcomeRepository
from storage.shop import ShopRepository
from tools.shop.orders import FOUR_DIGITS

# the simulation never talks to Telegram: any well-formed token will do
UNUSED_BOT_TOKEN = "0:simulation-needs-no-telegram-token"
# request_human is always offered, as with OPERATOR_CHAT_ID set (never written to)
SIMULATED_OPERATOR_CHAT_ID = -1000000000000


def add_parser(sub: Any) -> None:
    """The `simulate` subcommand's arguments (bot/programs/cli.py)."""
    parser = sub.add_parser(
        "simulate",
        help="run test conversations against your model before going live (see README)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="*", type=Path, help="scenario files (TOML; default: the bundled suite)"
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        help="model name (repeat to compare); default OPENAI_MODEL",
    )
    parser.add_argument(
        "--trials", type=int, default=1, help="runs of each scenario per model (pass^k), default 1"
    )
    parser.add_argument(
        "--min-pass",
        type=float,
        default=1.0,
        help="pass^1 every scenario needs for exit 0 (0..1), default 1.0",
    )
    parser.add_argument(
        "--report", type=Path, default=Path("simulation-report.md"), help="Markdown report path"
    )
    parser.add_argument(
        "--runs", type=Path, help="also write every run as JSON Lines (for measurements)"
    )
    parser.add_argument(
        "--customer-model", help="model playing simulated customers; default the first --model"
    )
    parser.add_argument(
        "--only", action="append", default=[], help="run only scenarios with this id (repeatable)"
    )
    _add_bounds(parser)
    _add_draft_writing(parser)


def _add_bounds(parser: argparse.ArgumentParser) -> None:
    """How long a run and the whole simulation may take: a model endpoint that hangs
    costs minutes, not an hour."""
    parser.add_argument(
        "--scenario-timeout",
        type=_seconds,
        default=DEFAULT_SCENARIO_TIMEOUT_S,
        help="seconds one run (scenario × model × trial) may take before it is stopped and "
        f"failed; 0 for no bound (default {DEFAULT_SCENARIO_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--time-limit",
        type=_seconds,
        default=DEFAULT_TIME_LIMIT_S,
        help="seconds the whole simulation may take: no run starts after it, the report "
        f"says how many did not; 0 for no limit (default {DEFAULT_TIME_LIMIT_S:g})",
    )


def _add_draft_writing(parser: argparse.ArgumentParser) -> None:
    """Instead of running: scenario drafts written from what customers disliked or the
    bot could not answer."""
    parser.add_argument(
        "--from-feedback", action="store_true", help="write scenario drafts from 👎-rated answers"
    )
    parser.add_argument(
        "--from-gaps",
        action="store_true",
        help="write scenarios from the questions the bot could not answer (last 30 days)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="with --from-feedback or --from-gaps: the file to write (default: print)",
    )


# a scenario takes seconds on a hosted model, minutes for a long one on a small local
# model on a CPU; a model endpoint that hangs costs the bot's whole turn timeout per turn
# (services/simulation/runner.py also stops a model whose endpoint answers nothing)
DEFAULT_SCENARIO_TIMEOUT_S = 600.0
DEFAULT_TIME_LIMIT_S = 3600.0


def _seconds(text: str) -> float:
    """A bound in seconds from the command line: a number >= 0 (0: none)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0")
    return value


def _error(text: str) -> int:
    print(f"error: {text}", file=sys.stderr)
    return ExitCode.CANNOT_START


def _prices(settings: Settings) -> Prices | None:
    if settings.model_price_input_per_1m is None or settings.model_price_output_per_1m is None:
        return None
    return Prices(
        input_per_1m=settings.model_price_input_per_1m,
        output_per_1m=settings.model_price_output_per_1m,
        cached_input_per_1m=settings.model_price_cached_input_per_1m,
        currency=settings.model_price_currency,
    )


class BotWiring:
    """Builds the bot's chat service over a throwaway database from the bot's own feature
    list (bot/telegram/features/registry.py): the features' parts in a turn, never Telegram's."""

    def __init__(
        self, settings: Settings, specs: Sequence[FeatureSpec[Any, Any, Any]] = FEATURES
    ) -> None:
        self._settings = settings
        self._specs = specs
        self._retry = build_storage_retry(settings)

    def settings_for(self, settings: ScenarioSettings) -> Settings:
        """The bot's settings as a scenario runs them: its own changes, the throwaway
        database's orders (never a live shop), and handoff on."""
        changes = {k: v for k, v in settings.model_dump().items() if v is not None}
        changes.pop("actions_enabled", None)  # the actions feature's (`groups_for`)
        operator = self._settings.operator_chat_id or SIMULATED_OPERATOR_CHAT_ID
        return self._settings.model_copy(
            update={**changes, "shop_backend": "local", "operator_chat_id": operator}
        )

    def __call__(self, db: Database, model: ChatModel, settings: ScenarioSettings) -> SimulatedBot:
        bot = self.settings_for(settings)
        shop = build_shop_directory(bot, db)
        needs = Needs(bot, db, shop, self._retry)
        built = build_chat_parts(self._specs, needs, groups_for(settings))
        registry = build_tools(bot, extra=tools_of(built), shop=shop)
        core = build_core(
            bot,
            db,
            model=model,
            registry=registry,
            turn_slots=build_turn_slots(bot),
            storage_retry=self._retry,
            record_observer=None,
            shop=shop,
            system_prompt=system_prompt(built),
        )
        # with actions on, a scenario's customer may press the card (bot's ActionService)
        actions = own_of(built, ACTIONS)
        knowledge = own_of(built, KNOWLEDGE)
        return SimulatedBot(
            core.chat_service,
            actions.service if actions else None,
            knowledge.knowledge if knowledge else None,
        )


def groups_for(settings: ScenarioSettings) -> dict[str, dict[str, Any]]:
    """A scenario's changes to features' settings groups, by feature name."""
    if settings.actions_enabled is None:
        return {}
    return {ACTIONS.name: {"actions_enabled": tuple(settings.actions_enabled)}}


def _shown(texts: TextTable) -> Any:
    def shown(reply: TurnReply, language: str) -> str:
        return customer_text(reply, texts.choose(language)[1])

    return shown


def _action_words(texts: TextTable) -> Any:
    def words(outcome: Outcome, language: str) -> str:
        return result_words(outcome, texts.choose(language)[1], language)

    return words


def _progress(progress: Progress) -> None:
    last = progress.last
    mark = "pass" if last.passed else "FAIL"
    line = (
        f"[{progress.done}/{progress.total}] {last.model} {last.scenario.id} #{last.trial}: {mark}"
    )
    if sys.stderr.isatty():  # one line, rewritten in place
        end = "" if progress.done < progress.total else "\n"
        print(f"\r{line[:110]:<110}", end=end, file=sys.stderr, flush=True)
    else:  # a log or CI: one line per run
        print(line, file=sys.stderr, flush=True)


def _scenarios(args: argparse.Namespace) -> list[Scenario]:
    files = list(args.files) or default_suite_files()
    scenarios = load_scenarios(files)
    if args.only:
        wanted = set(args.only)
        unknown = wanted - {s.id for s in scenarios}
        if unknown:
            raise ScenarioError(f"no scenario with id {', '.join(sorted(unknown))}")
        scenarios = [s for s in scenarios if s.id in wanted]
    return scenarios


def _model(settings: Settings, name: str) -> OpenAIChatModel:
    return build_model(
        settings.model_copy(update={"openai_model": name, "openai_fallback_models": ()})
    )


async def endpoint_problem(models: dict[str, OpenAIChatModel], settings: Settings) -> str | None:
    """One `GET /models` (free) before anything runs: a rejected key, an endpoint that
    cannot be reached or a model it does not offer is one line, not 38 failed runs."""
    if not settings.openai_startup_check:
        return None
    host = (
        urlparse(settings.openai_base_url).netloc if settings.openai_base_url else "api.openai.com"
    )
    for name, model in models.items():
        try:
            result = await model.check()
        except LLMAuthenticationError:
            return f"OPENAI_API_KEY was rejected by the model endpoint {host}"
        except LLMError as exc:
            kind = type(exc).__name__
            return f"the model endpoint {host} (OPENAI_BASE_URL) cannot be used now: {kind}"
        if result.listed and result.missing:
            return f"the model endpoint {host} does not offer the model {name!r}"
    return None


async def own_shop(settings: Settings) -> tuple[OwnShop | None, OwnKnowledge | None, str]:
    """The shop's own data and own knowledge (pages, files, answers) in the bot's
    database (read only),
    and one line saying which shop the scenarios run on; DatabaseOpenError when the
    database cannot be read."""
    choice = settings.database
    path = Path(choice.target)
    if choice.setting == "DATABASE_PATH" and not await asyncio.to_thread(path.exists):
        return None, None, f"shop: the demo (no database at {describe_target(choice)} yet)"
    db = await open_database(choice.target, migrate=False, pool_size=1)
    try:
        own = await read_own_shop(ShopRepository(db))
        knowledge = await read_own_knowledge(KnowledgeRepository(db))
    except Exception as exc:
        if not is_database_error(exc):
            raise
        raise DatabaseOpenError(f"cannot be read: {exc}") from None
    finally:
        await db.close()
    held = knowledge.describe()
    if own is None:
        where = f"{describe_target(choice)} holds no data of your shop"
        return None, knowledge, f"shop: the demo ({where}){held}"
    line = f"shop: a copy of your data in {describe_target(choice)}: {own.describe()}{held}"
    return own, knowledge, line


def _write_outputs(args: argparse.Namespace, report: str, results: list[RunResult]) -> bool:
    """The Markdown report, and with --runs every run as JSON Lines; False (said on stderr)
    when one cannot be written."""
    try:
        args.report.write_text(report, encoding="utf-8")
    except OSError as exc:
        print(
            f"error: the report cannot be written to {args.report}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return False
    if args.runs is not None:
        try:
            args.runs.write_text(runs_jsonl(results), encoding="utf-8")
        except OSError as exc:
            print(f"error: the runs cannot be written to {args.runs}: {exc}", file=sys.stderr)
            return False
    return True


async def run_simulation(args: argparse.Namespace, settings: Settings, texts: TextTable) -> int:
    """The scenarios, the shop they run on, the models (checked before anything runs),
    the runs, the report; a step that cannot go on is one `error:` line."""
    try:
        scenarios = _scenarios(args)
    except ScenarioError as exc:
        return _error(str(exc))
    own, shop_line = None, "shop: the demo"
    knowledge: OwnKnowledge | None = None
    if any(scenario.shop == "own" for scenario in scenarios):
        try:
            own, knowledge, shop_line = await own_shop(settings)
        except (DatabaseOpenError, MigrationError) as exc:
            return _error(f"{settings.database.setting} {settings.database.shown}: {exc}")
    models = _Models.of(args, settings)
    problem = await endpoint_problem(models.checked, settings)
    if problem is not None:
        await models.close()
        return _error(problem)
    simulator = Simulator(
        build_bot=BotWiring(settings),
        shown=_shown(texts),
        action_words=_action_words(texts),
        customer_model=models.customer,
        progress=_progress,
        run_timeout_s=args.scenario_timeout or None,
        time_limit_s=args.time_limit or None,
        own_shop=own,
        own_knowledge=knowledge,
        number_rule=settings.order_number_rule() or FOUR_DIGITS,
    )
    print(shop_line, file=sys.stderr)
    interrupted = await _run(simulator, scenarios, models, args.trials)
    return _report(args, settings, simulator, interrupted=interrupted, shop_line=shop_line)


class _Models:
    """The models under test (each named once) and the one playing the customer (the
    first tested model unless --customer-model names another)."""

    def __init__(
        self, by_name: dict[str, OpenAIChatModel], customer_name: str, customer: OpenAIChatModel
    ) -> None:
        self.by_name = by_name
        self.customer_name = customer_name
        self.customer = customer

    @classmethod
    def of(cls, args: argparse.Namespace, settings: Settings) -> _Models:
        names = list(dict.fromkeys(args.model or [settings.openai_model]))
        by_name = {name: _model(settings, name) for name in names}
        customer_name = args.customer_model or names[0]
        customer = by_name.get(customer_name) or _model(settings, customer_name)
        return cls(by_name, customer_name, customer)

    @property
    def checked(self) -> dict[str, OpenAIChatModel]:
        """Every model the run asks, by name (the endpoint must offer each)."""
        return {**self.by_name, self.customer_name: self.customer}

    async def close(self) -> None:
        for model in {*self.by_name.values(), self.customer}:
            await model.aclose()


async def _run(
    simulator: Simulator, scenarios: Sequence[Scenario], models: _Models, trials: int
) -> bool:
    """Every scenario × model × trial; True when Ctrl-C cut it short (the runs finished
    so far are still reported). The models are closed either way."""
    names = models.by_name
    print(
        f"simulating {len(scenarios)} scenarios × {len(names)} model(s) × {trials} trial(s)",
        file=sys.stderr,
    )
    try:
        await simulator.run(scenarios, [ModelTarget(n, m) for n, m in names.items()], trials)
    except asyncio.CancelledError:  # Ctrl-C: the runs done so far are still reported
        print("\ninterrupted: reporting the runs finished so far", file=sys.stderr)
        return True
    finally:
        await models.close()
    return False


def _report(
    args: argparse.Namespace,
    settings: Settings,
    simulator: Simulator,
    *,
    interrupted: bool,
    shop_line: str,
) -> int:
    """The table on the terminal, the Markdown report (and the runs, if asked); the exit
    status: failed when interrupted, not started, or a scenario is below --min-pass."""
    results = simulator.results
    prices = _prices(settings)
    model_scores = scores(results, prices)
    print(terminal_table(model_scores, prices))
    command = "./support-bot simulate " + shlex.join(
        sys.argv[2:] if sys.argv[1:2] == ["simulate"] else sys.argv[1:]
    )
    if interrupted:
        command += f"  (interrupted after {len(results)} runs)"
    for line in simulator.stopped_because:
        print(f"stopped early: {line}", file=sys.stderr)
    report = markdown_report(
        results,
        model_scores,
        trials=args.trials,
        min_pass=args.min_pass,
        prices=prices,
        command=command,
        stopped_because=simulator.stopped_because,
        shop=shop_line,
    )
    if not _write_outputs(args, report, results):
        return ExitCode.FAILED
    failing = below(model_scores, args.min_pass)
    print(
        f"report: {args.report} ({len(failing)} scenario result(s) below "
        f"--min-pass {args.min_pass:.2f})"
    )
    if interrupted or simulator.not_started:
        return ExitCode.FAILED
    return ExitCode.OK if not failing else ExitCode.FAILED


async def write_drafts(args: argparse.Namespace) -> int:
    """`--from-feedback` / `--from-gaps`: drafts from the bot's own database (read, never
    written)."""
    try:
        choice = load_database_choice()
        db = await open_database(choice.target, migrate=False, pool_size=1)
    except SettingsError as exc:
        return _error(str(exc))
    except (DatabaseOpenError, MigrationError) as exc:
        return _error(f"the database cannot be opened: {exc}")
    try:
        if args.from_gaps:
            language = load_shop_settings().default_language
            report = await GapsService(OutcomeRepository(db)).report("30d", language)
            text, count = gap_scenarios(report.groups, language), len(report.groups)
        else:
            conversations = await disliked_conversations(db)
            text, count = drafts_document(conversations), len(conversations)
    finally:
        await db.close()
    if args.out is None:
        sys.stdout.write(text)
        return ExitCode.OK
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        return _error(f"{args.out} cannot be written: {exc.strerror or exc}")
    print(f"{count} draft(s) written to {args.out}", file=sys.stderr)
    return ExitCode.OK


def _valid(args: argparse.Namespace) -> str | None:
    if not 1 <= args.trials <= 100:
        return "--trials must be between 1 and 100"
    if not 0.0 <= args.min_pass <= 1.0:
        return "--min-pass must be between 0 and 1 (the share of trials that must pass)"
    return None


def simulate(args: argparse.Namespace) -> int:
    """The command: settings (no bot token needed), texts, then the run or the drafts."""
    if args.from_feedback or args.from_gaps:
        return asyncio.run(write_drafts(args))
    problem = _valid(args)
    if problem is not None:
        return _error(problem)
    try:
        settings = load_settings(bot_token=UNUSED_BOT_TOKEN)
        texts = load_text_table(
            texts_file=settings.texts_file,
            shop_name=settings.shop_name,
            default_language=settings.default_language,
            features=words_of(FEATURES),
        )
    except (SettingsError, TextsError) as exc:
        return _error(str(exc))
    try:
        return asyncio.run(run_simulation(args, settings, texts))
    except KeyboardInterrupt:  # Ctrl-C: the report of the finished runs is written
        return ExitCode.FAILED
