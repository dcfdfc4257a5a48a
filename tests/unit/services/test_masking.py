"""Customers' personal data masked in what an owner reads (services/masking.py), on
real-looking messages in Russian and English."""

from __future__ import annotations

import re

import pytest

from services.masking import mask

# (text, what must not remain, what must remain)
RU = [
    ("Мой телефон +7 (912) 345-67-89, перезвоните", ["912", "345-67-89"], ["перезвоните"]),
    ("звоните 8 912 345 67 89 после шести", ["912 345"], ["звоните", "после шести"]),
    ("номер 89123456789", ["89123456789"], []),
    ("городской 345-67-89", ["345-67-89"], ["городской"]),
    ("Пишите на ivan.petrov@mail.ru или в телеграм @ivan_petrov88", ["ivan", "mail.ru"], []),
    ("Где мой заказ №10234?", ["10234"], ["Где мой заказ"]),
    ("заказ 8041 не пришёл", ["8041"], ["не пришёл"]),
    ("по заказу A-10023 ничего", ["A-10023", "10023"], []),
    ("Меня зовут Анна Смирнова, где посылка?", ["Анна", "Смирнова"], ["где посылка"]),
    ("Получатель: Петров Сергей", ["Петров", "Сергей"], []),
    ("оформлено на имя Ольга Кузнецова", ["Ольга", "Кузнецова"], []),
    (
        "Иванов Иван Иванович, доставка на ул. Ленина, д. 5, кв. 12",
        ["Иванов", "Ленина", "12"],
        ["доставка"],
    ),
    ("С уважением, Мария", ["Мария"], []),
    ("Карта 4276 1600 1234 5678 списали дважды", ["4276", "5678"], ["списали дважды"]),
    ("Доставка в Казань за 2 дня?", [], ["Доставка в Казань за 2 дня?"]),
    ("Передайте Ольге, что заказ у Дмитрия", ["Ольге", "Дмитрия"], ["Передайте"]),
    ("самовывоз (Ольга, +7 912 345-67-89)", ["Ольга", "912"], ["самовывоз"]),
    ("Спросите господина Соколова у кассы", ["Соколова"], ["Спросите", "у кассы"]),
]
EN = [
    ("Call me at +1 (415) 555-0132 please", ["415", "555-0132"], ["please"]),
    ("My email is john.smith@example.com", ["john.smith", "example.com"], []),
    ("Where is order #1001?", ["1001"], ["Where is order"]),
    ("order number SO-482213 still not shipped", ["482213"], ["still not shipped"]),
    ("Hi, my name is Emily Clarke and I need help", ["Emily", "Clarke"], ["and I need help"]),
    ("I'm Robert, I ordered a mug", ["Robert"], ["I ordered a mug"]),
    ("I'm not sure where my parcel is", [], ["I'm not sure where my parcel is"]),
    ("Ship to 221 Baker Street, apt 4", ["221", "Baker"], ["Ship to"]),
    ("Regards, Tom", ["Tom"], []),
    ("Do you deliver on weekends?", [], ["Do you deliver on weekends?"]),
    ("Please tell Sarah the parcel is late", ["Sarah"], ["Please tell", "the parcel is late"]),
    ("Call Sarah Johnson at (415) 555-0132", ["Sarah", "Johnson", "415", "("], ["Call", " at "]),
    ("Ask for Mr Johnson or Dr. Emily Clarke", ["Johnson", "Emily", "Clarke"], ["Ask for Mr"]),
    ("Tom Baker asked about order A-10234", ["Tom", "Baker", "10234"], ["asked about order"]),
]


@pytest.mark.parametrize(("text", "hidden", "kept"), RU)
def test_russian(text: str, hidden: list[str], kept: list[str]) -> None:
    masked = mask(text, "ru")
    for part in hidden:
        assert part not in masked, (text, masked)
    for part in kept:
        assert part in masked, (text, masked)


@pytest.mark.parametrize(("text", "hidden", "kept"), EN)
def test_english(text: str, hidden: list[str], kept: list[str]) -> None:
    masked = mask(text, "en")
    for part in hidden:
        assert part not in masked, (text, masked)
    for part in kept:
        assert part in masked, (text, masked)


def test_placeholders_say_what_was_there_in_the_readers_language() -> None:
    assert mask("заказ 8041, тел. +7 912 345-67-89", "ru") == "заказ [заказ], тел. [телефон]"
    assert mask("order 8041, phone +7 912 345-67-89", "en") == "order [order], phone [phone]"


def test_no_phone_or_order_number_survives_in_a_long_message() -> None:
    """Any run of four digits or more (a phone, an order, a reference) is gone."""
    text = (
        "Добрый день! Это Алексей Воронцов, мой номер +7 999 123 45 67, почта "
        "a.voroncov@yandex.ru. Заказ 55012 от 03.05 пришёл без крышки, второй заказ "
        "№ 55019 тоже. Адрес: ул. Садовая, д. 10, кв. 7. Перезвоните на 8(999)1234567."
    )
    masked = mask(text, "ru")
    assert not re.search(r"\d{4,}", masked.replace(" ", "").replace("-", "")), masked
    assert "Воронцов" not in masked and "yandex" not in masked and "Садовая" not in masked
    assert "пришёл без крышки" in masked
