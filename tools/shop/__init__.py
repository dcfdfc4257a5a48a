"""The shop's domain: its data rules, the import document and the demo shop.

One place answers "what is a valid order number, which statuses exist, how is a product
name matched": `rules`. The tools, the `import-data` command (`import_document`) and the
demo data (`demo`) all use it, so what is imported or seeded is what the tools find.
Storage only keeps the rows it is given.
"""
