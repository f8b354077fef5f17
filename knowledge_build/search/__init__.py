"""The artifacts engine: answering a query from an artifact set. The loader (knowledge_index.py:
KnowledgeIndex and SearchResult), filters (filters.py) and the dense channel over groups of rows
(dense.py); the ranking rules it applies are ranking/'s, as every engine's are. Imports nothing of the
build side (no lxml, no scanner, no site reader).
"""
