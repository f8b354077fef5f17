"""Logging of retrievals, for seeing why an answer cited what it cited (setting debug_log).

`debug_log: info` logs each retrieval's query and every result's rank, score and source (the site's
backend, or the web page's URL); `debug` adds a preview of each result's text (100 characters).
Lines go to stderr through the logger `knowledge_build.retrieval`, which stays at WARNING (silent)
whatever the root logger's level until enable() turns it on, e.g.

    INFO retrieve: query="しれんのしろ アイテム"
    INFO result 1: score=0.734 source="https://example.com/page1" id=…
    DEBUG result 1 text: "しれんのしろには以下のアイテムがあります…"
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger("knowledge_build.retrieval")
# Off until enable(): queries are the users' words, and a host that sets the root logger to INFO
# (the MCP SDK does) must not put them in its logs.
log.setLevel(logging.WARNING)
PREVIEW_CHARS = 100


def enable(level: str) -> None:
    """Log retrievals at `level` (off, info, debug) to stderr, once per process."""
    if level == "off":
        log.setLevel(logging.WARNING)
        return
    log.setLevel(logging.DEBUG if level == "debug" else logging.INFO)
    if not any(getattr(h, "_retrieval", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        handler._retrieval = True
        log.addHandler(handler)
        log.propagate = False  # not twice through the CLI's warning handler


def log_retrieval(query: str, results: list[dict]) -> None:
    """One line for the query, one per result (score, source, id), and a preview at DEBUG."""
    if not log.isEnabledFor(logging.INFO):
        return
    log.info('retrieve: query="%s" results=%d', query, len(results))
    for rank, result in enumerate(results, 1):
        source = result.get("source_url") or result.get("source") or ""
        score = result.get("score")
        log.info('result %d: score=%s source="%s" id=%s', rank, f"{score:.3f}" if isinstance(score, float) else score,
                 source, result.get("id", ""))
        if log.isEnabledFor(logging.DEBUG):
            text = result.get("text") or result.get("excerpt") or result.get("content") or ""
            log.debug('result %d text: "%s"', rank, " ".join(str(text).split())[:PREVIEW_CHARS])
