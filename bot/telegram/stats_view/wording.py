"""Every word of `/stats` in Russian and English, and how numbers are written in each.

Written for a shop owner reading on a phone: questions answered and not (by a reason in
plain words), satisfaction, what the model cost, then the tools for the curious (by what
an owner calls them) — no raw codes, counts in their plural forms (Russian has three).
One typed table per language, like `bot.telegram.texts`: a missing word is an error at import time.
The period titles live here once; the table header, the photo caption and the chart title
all take them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.telegram.texts import Language
from services.stats import NOT_ANSWERED_REASONS, StatsReport
from tools.my_orders import LIST_MY_ORDERS
from tools.order_status import GET_ORDER_STATUS
from tools.request_human import REQUEST_HUMAN
from tools.return_policy import GET_RETURN_POLICY
from tools.shop_info import GET_SHOP_INFO

TOOL_NAMES = (GET_ORDER_STATUS, LIST_MY_ORDERS, GET_RETURN_POLICY, GET_SHOP_INFO, REQUEST_HUMAN)


@dataclass(frozen=True, slots=True)
class StatsWords:
    periods: dict[str, str]  # period key ("24h", "7d", "30d", "all") -> its title
    no_data: str
    usage: str
    chart_caption: str  # {period} {asked} {answered}
    # questions
    questions: str
    answered: str
    not_answered: str
    reasons: dict[str, str]  # NOT_ANSWERED_REASONS -> words
    customers: str
    reply_typical: str
    reply_slow: str
    # satisfaction
    satisfaction: str
    helpful: str
    not_helpful: str
    rated: str
    rated_value: str  # {rated} {answered}
    no_ratings: str
    # cost
    cost: str
    cost_value: str  # {amount} {currency}
    no_prices: str
    input_tokens: str
    cached_tokens: str
    output_tokens: str
    uncounted: str
    per_resolved: str  # the cost per resolved question
    per_resolved_definition: str  # {resolved}: how it is counted, under the figure
    questions_count: tuple[str, ...]  # "{n} question" in the plural forms of `plural`
    # tools
    tools: str
    tool_calls_total: str
    tool_names: dict[str, str]  # a tool's code name -> what an owner calls it
    calls: str
    done: str
    said_no: str
    shop_unavailable: str  # lookups the shop's own system could not answer (SHOP_BACKEND)
    failed: str
    tool_time: str
    invented_tools: str  # {n}
    ms: str
    s: str
    # chart
    chart_questions: str
    chart_tools: str  # {tool} {calls}
    chart_other_tools: str
    chart_invented_tools: str
    chart_no_data: str


def _check_reasons(words: StatsWords) -> StatsWords:
    if set(words.reasons) != set(NOT_ANSWERED_REASONS):
        raise ValueError("every reason a question goes unanswered needs its words")
    if set(words.tool_names) != set(TOOL_NAMES):
        raise ValueError("every tool needs its words")
    return words


EN = _check_reasons(
    StatsWords(
        periods={
            "24h": "last 24 hours",
            "7d": "last 7 days",
            "30d": "last 30 days",
            "all": "all time",
        },
        no_data="No data for this period yet.",
        usage="Usage: /stats [24h|7d|30d|all] (default 24h)",
        chart_caption="Questions, {period}: {asked}, answered {answered}",
        questions="QUESTIONS",
        answered="answered",
        not_answered="not answered",
        reasons={
            "unavailable": "AI service was down",
            "declined": "declined, off-topic",
            "withheld": "held back: repeated the bot's rules",
            "failure": "technical failure",
        },
        customers="customers",
        reply_typical="typical reply time",
        reply_slow="5% of replies over",
        satisfaction="SATISFACTION",
        helpful="helpful",
        not_helpful="not helpful",
        rated="rated answers",
        rated_value="{rated} of {answered}",
        no_ratings="no ratings yet",
        cost="MODEL COST",
        cost_value="≈ {amount} {currency}",
        no_prices="prices not set",
        input_tokens="input tokens",
        cached_tokens="from cache",
        output_tokens="output tokens",
        uncounted="not counted",
        per_resolved="per resolved question",
        per_resolved_definition="all of it ÷ {resolved} resolved",
        questions_count=("{n} question", "{n} questions"),
        tools="TOOLS, for the curious",
        tool_calls_total="calls of all tools",
        tool_names={
            GET_ORDER_STATUS: "Order status",
            LIST_MY_ORDERS: "My orders (by phone)",
            GET_RETURN_POLICY: "Return policy",
            GET_SHOP_INFO: "Shop info (FAQ)",
            REQUEST_HUMAN: "Handoff to a person",
        },
        calls="calls",
        done="done",
        said_no="said no",
        shop_unavailable="shop unavailable",
        failed="failed",
        tool_time="typical / slow",
        invented_tools="made-up tool names: {n}",
        ms="ms",
        s="s",
        chart_questions="Questions: answered / not answered",
        chart_tools="{tool} — calls: {calls}",
        chart_other_tools="other tools",
        chart_invented_tools="made-up tool names",
        chart_no_data="no questions in this period",
    )
)

RU = _check_reasons(
    StatsWords(
        periods={
            "24h": "за 24 часа",
            "7d": "за 7 дней",
            "30d": "за 30 дней",
            "all": "за всё время",
        },
        no_data="Пока нет данных за этот период.",
        usage="Использование: /stats [24h|7d|30d|all] (по умолчанию 24h)",
        chart_caption="Вопросы {period}: {asked}, с ответом {answered}",
        questions="ВОПРОСЫ",
        answered="с ответом",
        not_answered="без ответа",
        reasons={
            "unavailable": "ИИ-сервис недоступен",
            "declined": "отказ, не по теме",
            "withheld": "скрыт: повторял правила бота",
            "failure": "технический сбой",
        },
        customers="покупателей",
        reply_typical="обычное время ответа",
        reply_slow="5% ответов дольше",
        satisfaction="ОЦЕНКИ",
        helpful="полезно",
        not_helpful="не помогло",
        rated="оценено ответов",
        rated_value="{rated} из {answered}",
        no_ratings="оценок пока нет",
        cost="СТОИМОСТЬ МОДЕЛИ",
        cost_value="≈ {amount} {currency}",
        no_prices="цены не заданы",
        input_tokens="токены запросов",
        cached_tokens="из кэша",
        output_tokens="токены ответов",
        uncounted="не учтено",
        per_resolved="за решённый вопрос",
        per_resolved_definition="вся стоимость ÷ решено ({resolved})",
        questions_count=("{n} вопрос", "{n} вопроса", "{n} вопросов"),
        tools="ИНСТРУМЕНТЫ, подробности",
        tool_calls_total="вызовов всех инструментов",
        tool_names={
            GET_ORDER_STATUS: "Статус заказа",
            LIST_MY_ORDERS: "Мои заказы (по телефону)",
            GET_RETURN_POLICY: "Условия возврата",
            GET_SHOP_INFO: "Справка о магазине",
            REQUEST_HUMAN: "Передача человеку",
        },
        calls="вызовов",
        done="выполнено",
        said_no="отказ",
        shop_unavailable="магазин недоступен",
        failed="сбой",
        tool_time="обычно / долго",
        invented_tools="выдуманные названия: {n}",
        ms="мс",
        s="с",
        chart_questions="Вопросы: с ответом / без ответа",
        chart_tools="{tool} — вызовов: {calls}",
        chart_other_tools="другие инструменты",
        chart_invented_tools="выдуманные названия",
        chart_no_data="вопросов за этот период нет",
    )
)

_BY_LANGUAGE: dict[Language, StatsWords] = {"ru": RU, "en": EN}


def words_for(language: Language) -> StatsWords:
    return _BY_LANGUAGE[language]


def usage_hint(language: Language) -> str:
    """The one-line reply to `/stats` with an argument that is not a period."""
    return words_for(language).usage


def chart_caption(report: StatsReport, language: Language) -> str:
    """One line under the chart photo, and the chart's own title."""
    words = words_for(language)
    questions = report.questions
    return words.chart_caption.format(
        period=words.periods[report.period.key],
        asked=format_int(questions.asked, language),
        answered=format_int(questions.answered, language),
    )


def tool_title(name: str, language: Language) -> str:
    """What an owner calls the tool `name`; a name without words (a new tool) as it is."""
    return words_for(language).tool_names.get(name, name)


def plural(n: int, forms: tuple[str, ...], language: Language) -> str:
    """`forms` filled with `n` in the form its number takes: English (one, other);
    Russian (one: 1, 21, 101; few: 2-4, 22-24; many: 0, 5-20, 25-30, 11-14)."""
    if language == "ru":
        if n % 10 == 1 and n % 100 != 11:
            form = forms[0]
        elif 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
            form = forms[1]
        else:
            form = forms[2]
    else:
        form = forms[0] if n == 1 else forms[1]
    return form.format(n=format_int(n, language))


def format_int(value: int, language: Language) -> str:
    """`12,345` in English, `12 345` in Russian."""
    text = f"{value:,}"
    return text.replace(",", " ") if language == "ru" else text


def format_decimal(value: float, language: Language, digits: int = 2) -> str:
    """`1.67` in English, `1,67` in Russian."""
    text = f"{value:.{digits}f}"
    return text.replace(".", ",") if language == "ru" else text


def format_money(value: float, language: Language) -> str:
    """Two decimals, or more significant digits for a sum under one cent."""
    digits = 2 if value == 0 or value >= 0.01 else 4
    text = f"{value:,.{digits}f}"
    if language == "ru":
        text = text.replace(",", " ").replace(".", ",")
    return text
