"""The shop's knowledge: its web pages, documents and FAQ, searched by meaning and by words.

`embedder.py` turns text into vectors (pluggable: the bundled model, an OpenAI-compatible
endpoint, or none); `fusion.py` merges rankings; `text.py` stems words for the lexical
index; `base.py` (`KnowledgeBase`) adds passages and searches them; the SQL is
storage/knowledge.py. Everything here is data for the model, never instructions.
"""
