"""Answering a query from an artifact set: the loader (knowledge_index.py: KnowledgeIndex and
SearchResult), ranking and fusion settings (ranking.py), the relevance of a result (relevance.py),
filters (filters.py) and the dense channel over groups of rows (dense.py). Imports nothing of the
build side (no lxml, no scanner, no site reader).
"""
