"""How `/stats` reads and looks: the words, the phone table and the PNG chart.

`services.stats` computes the figures as typed data; this package turns them into
what an admin sees. `wording` holds every word and number format per language (the
period titles among them, defined once for the table, the caption and the chart),
`table` lays the figures out for a phone, `chart` draws the picture with Pillow.
"""
