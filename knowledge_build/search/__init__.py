"""The artifacts engine: answering a query from an artifact set. The loader (loader.py), the query
analyser (query.py, the only part that needs the Japanese tokenizer), the channels (channels.py: FAISS and
BM25, with dense.py and filters.py) and the ranker (ranker.py), joined by KnowledgeIndex (knowledge_index.py);
the rules the ranker applies are ranking/'s, as every engine's are. Imports nothing of the build side (no
lxml, no scanner, no site reader). Other packages use the names below, not the modules.
"""

from .knowledge_index import MODES, KnowledgeIndex
from .ranker import SearchResult

__all__ = ["KnowledgeIndex", "MODES", "SearchResult"]
