"""Simulations: scenarios run through the real chat service against a model, scored.

`scenario` reads scenario files, `runner` plays them on a throwaway database,
`expectations` judges a transcript, `customer` plays a customer with a goal, `report`
scores the trials and writes the table and the Markdown report, `drafts` turns 👎-rated
conversations into scenario drafts. The CLI and the wiring live in `bot/programs/simulate.py`.
"""
