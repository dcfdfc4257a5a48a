"""The PostgreSQL adapter's pure parts: parameters, NUL, row counts, URLs without passwords."""

from __future__ import annotations

import pytest

from storage.postgres import postgres_params, postgres_sql, redact_url, rowcount


@pytest.mark.parametrize(
    ("sqlite", "postgres"),
    [
        ("SELECT 1", "SELECT 1"),
        ("SELECT ?", "SELECT $1"),
        ("INSERT INTO t VALUES (?, ?, ?)", "INSERT INTO t VALUES ($1, $2, $3)"),
        # numbered parameters keep their number and may repeat
        ("WHERE a >= ?1 AND b < ?2 OR c = ?1", "WHERE a >= $1 AND b < $2 OR c = $1"),
        ("?10, ?2", "$10, $2"),
        # SQLite's rule: a bare ? is one more than the largest number so far
        ("?2, ?", "$2, $3"),
        ("?, ?1, ?", "$1, $1, $2"),
        # string literals, quoted identifiers and comments keep their question marks
        ("SELECT '?' , ?", "SELECT '?' , $1"),
        ("SELECT 'it''s ?', ?", "SELECT 'it''s ?', $1"),
        ('SELECT "odd?name" FROM t WHERE x = ?', 'SELECT "odd?name" FROM t WHERE x = $1'),
        ("SELECT ? -- why? because\n, ?", "SELECT $1 -- why? because\n, $2"),
        ("SELECT /* a ? here\n and ?2 */ ?", "SELECT /* a ? here\n and ?2 */ $1"),
        # the dialect's own fragments pass through
        (
            "(message_ids::jsonb || to_jsonb(?::bigint))::text WHERE update_id = ?",
            "(message_ids::jsonb || to_jsonb($1::bigint))::text WHERE update_id = $2",
        ),
        ('ORDER BY 2 DESC, 1 COLLATE "C"', 'ORDER BY 2 DESC, 1 COLLATE "C"'),
        (
            "(payload::jsonb #- '{message,contact}')::text",
            "(payload::jsonb #- '{message,contact}')::text",
        ),
    ],
)
def test_parameters_become_numbered(sqlite: str, postgres: str) -> None:
    assert postgres_sql(sqlite) == postgres


def test_translation_is_cached_per_text() -> None:
    sql = "SELECT ? AS cached_once"
    assert postgres_sql(sql) is postgres_sql(sql)


def test_nul_in_a_string_parameter_becomes_the_replacement_character() -> None:
    assert postgres_params(["a\x00b\x00", "plain", 5, None, 1.5, b"\x00"]) == [
        "a\ufffdb\ufffd",
        "plain",
        5,
        None,
        1.5,
        b"\x00",
    ]


@pytest.mark.parametrize(
    ("status", "count"),
    [
        ("INSERT 0 1", 1),
        ("INSERT 0 0", 0),
        ("UPDATE 3", 3),
        ("DELETE 12", 12),
        ("SELECT 7", 7),
        ("CREATE TABLE", 0),
        ("BEGIN", 0),
    ],
)
def test_rowcount_from_the_command_status(status: str, count: int) -> None:
    assert rowcount(status) == count


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://bot:s3cret@db:5432/shop", "postgresql://bot:***@db:5432/shop"),
        ("postgres://bot@db/shop", "postgres://bot@db/shop"),
        ("postgresql://db/shop?sslmode=require", "postgresql://db/shop?sslmode=require"),
        (
            "postgresql://bot@db/shop?password=s3cret&sslmode=require",
            "postgresql://bot@db/shop?password=***&sslmode=require",
        ),
        ("postgresql://u:p%40ss@/shop?host=/run/pg", "postgresql://u:***@/shop?host=/run/pg"),
    ],
)
def test_urls_are_shown_without_their_password(url: str, shown: str) -> None:
    assert redact_url(url) == shown
