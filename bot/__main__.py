"""`python -m bot` — same as the `support-bot` console script."""

from bot.programs.cli import main

if __name__ == "__main__":
    main()
