"""The command-line programs: the CLI (`support-bot`, `python -m bot`), simulate,
the shop data import and the settings' name check."""
