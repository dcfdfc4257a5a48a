"""Writes files/service-centres.pdf, the help centre's one PDF (linked from the warranty
page), byte for byte the committed one: `python -m tests.data.knowledge.help_centre.make_pdf`
from the project folder. A real PDF with a text layer (tests/fakes/documents.py:text_pdf)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.documents import text_pdf

TITLE = "Linen Yard - authorised service centres for garment steamers"

PAGES = [
    [
        "# Authorised service centres for Linen Yard garment steamers",
        "This list applies to the Linen Yard Steam and Steam Pro garment steamers.",
        "Warranty repair is free of charge within the warranty period: 12 months for Steam,",
        "24 months for Steam Pro, from the date on the receipt.",
        "",
        "# What to bring",
        "- the steamer with its hose and head;",
        "- the receipt or the order number;",
        "- the warranty card, if you have it (not required).",
        "Diagnostics and repair take up to 20 days. The centre calls you when it is ready.",
        "",
        "# Out-of-warranty repair",
        "Diagnostics cost 500 roubles and are free if you go on with the repair.",
        "A new heating element for Steam costs 1,900 roubles, for Steam Pro 2,400 roubles.",
        "",
        "# Moscow",
        "Servis-Dom, 14 Profsoyuznaya Street, building 2. Mon-Sat 10:00-20:00.",
        "Phone +7 495 700-10-20.",
        "# Saint Petersburg",
        "TechnoPomosh, 31 Ligovsky Prospekt, office 5. Mon-Fri 10:00-19:00.",
        "Phone +7 812 600-30-40.",
    ],
    [
        "# Kazan",
        "Remont-Plus, 8 Peterburgskaya Street. Mon-Sat 9:00-19:00. Phone +7 843 200-11-22.",
        "# Yekaterinburg",
        "Ural Service, 52 Malysheva Street, 1st floor. Mon-Fri 9:00-18:00.",
        "Phone +7 343 300-44-55.",
        "# Novosibirsk",
        "SibBytService, 17 Krasny Prospekt. Mon-Sat 10:00-19:00. Phone +7 383 210-66-77.",
        "# Nizhny Novgorod",
        "Master-N, 3 Bolshaya Pokrovskaya Street. Mon-Fri 10:00-19:00.",
        "Phone +7 831 410-88-99.",
        "# Krasnodar",
        "YugRemont, 120 Krasnaya Street. Mon-Sat 9:00-18:00. Phone +7 861 250-12-34.",
        "",
        "# No service centre in your city?",
        "Send the steamer to our warehouse by CDEK at our cost: write to support first,",
        "and we will send you a prepaid shipping code. After the repair we send it back free.",
    ],
]

HERE = Path(__file__).resolve().parent
PDF = HERE / "files" / "service-centres.pdf"


def main() -> None:
    PDF.write_bytes(text_pdf(PAGES, title=TITLE))


if __name__ == "__main__":
    main()
