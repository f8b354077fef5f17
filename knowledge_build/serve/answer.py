"""Grounded answers (`ask`): retrieve from the site index and the web sources, hand the results to a
chat model (OpenAI or an OpenAI-compatible server) as context, and return its answer with the
sources it was given. The system prompt introduces the site by its own name, description and
language (site_identity.py), in Japanese or English.

Retrieval: the site's k best places whose relevance reaches `relevance_threshold`, and, when the
store holds web sources, its k best places whose relevance reaches it too (and whose similarity
reaches `similarity_threshold` when set), mixed by reciprocal rank as search_knowledge mixes them.
A place (ranking/places.py: chunks sharing a url, such as a table's rows) is one numbered context
block: its lead's text, then its sub-results'. With retrieval disabled (`rag_enabled: false`),
nothing relevant, or retrieval failing, the model is asked without context, told that no relevant
passage was found, and `Answer.note` says why. A chat model that fails (HTTP error, timeout,
nobody listening) raises ChatFailed.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import asdict, dataclass, field

from ..deadline import openai_http_client
from ..errors import ConfigError, InputTooLarge, KnowledgeBuildError, needs_extra
from .site_identity import SiteIdentity, identity_of

log = logging.getLogger("knowledge_build.answer")
DEFAULT_MODEL = "gpt-4o-mini"
CHAT_RETRIES = 1  # one more try for a transient failure; a person is waiting for the answer
TEXT_CHARS = 1500  # of each chunk's text in the context: a few boxes fit any model's window
PLACE_CHARS = 4000  # of a place's block: its lead and as many of its sub-results as fit
NOTE_DISABLED = "retrieval disabled (rag_enabled: false)"
NOTE_NOTHING = "nothing relevant found"


@dataclass(frozen=True)
class PromptTexts:
    """The system prompt's fixed words in one language; the first line comes from SiteIdentity."""
    with_context: str
    without_context: str  # {note}: why there is no context
    heading: str
    learns: str
    text: str


JAPANESE = PromptTexts(
    with_context=("次の「資料」だけを根拠に答えてください。"
                  "資料に書かれていないことは推測せず、わからないと伝えてください。"
                  "答えの最後に参考にした資料の URL を挙げる必要はありません（システムが付けます）。\n\n資料:\n"),
    without_context=("このサイトの資料からは関連する内容が見つかりませんでした（{note}）。一般的な知識で答え、"
                     "その旨を最初に一言伝えてください。"),
    heading="見出し", learns="学べること", text="本文")
ENGLISH = PromptTexts(
    with_context=("Answer from the sources below only. Do not guess what they do not say: say that you do not "
                  "know. Do not list the sources' URLs at the end (the system adds them).\n\nSources:\n"),
    without_context=("Nothing relevant was found in this site's material ({note}). Answer from general knowledge, "
                     "and say so first, in a few words."),
    heading="Heading", learns="You learn", text="Text")


class ChatFailed(KnowledgeBuildError):
    """The chat model did not answer: the message names its URL, the cause and the fix."""


@dataclass
class Answer:
    answer: str
    sources: list[str]  # unique URLs in rank order (absolute_url where known, else url)
    context_used: bool
    retrieval: list[dict] = field(default_factory=list)  # {rank, id, title, url, source, [similarity,] relevance, score}
    note: str | None = None  # why no context was used

    def to_dict(self) -> dict:
        return asdict(self)


def ask(question: str, config, *, index=None, sources=None, client=None, channel: str = "ask") -> Answer:
    """Answer `question` from the site (`index`: a KnowledgeIndex or SearchService, default
    open_search(config)) and the web sources (`sources`: a SourceStore, default the configured store
    when it exists) through the chat model (`client`: an openai.OpenAI, default one for
    chat_base_url / OPENAI_API_KEY). Each given object stays open; those opened here are closed.
    `channel` (ask, slack): what the gap log records the question under when the owner turned it on."""
    question = (question or "").strip()
    if not question:
        raise KnowledgeBuildError("the question is empty. Fix: ask a question about the site, as a sentence.")
    if client is None:
        client = chat_client(config)
    results, note = _retrieve(question, config, index, sources, channel)
    messages = build_messages(question, results, note, identity_of(config, index))
    text = _chat(client, config.chat_model or DEFAULT_MODEL, messages)
    retrieval = [_summary(rank, r) for rank, r in enumerate(results, 1)]
    urls = list(dict.fromkeys(r["url"] for r in retrieval if r["url"]))
    return Answer(text, urls, bool(results), retrieval, note)


def format_answer(answer: Answer, show_sources: bool = True) -> str:
    """The answer, a line saying so when no context was used, then the sources (the seed's format)."""
    text = answer.answer.strip()
    if not answer.context_used:
        text += f"\n\n※ 登録された資料を使わずに回答しました（{answer.note or NOTE_NOTHING}）。"
    if show_sources and answer.sources:
        text += "\n\n---\n参照元:\n" + "\n".join(f"• {url}" for url in answer.sources)
    return text


# the chat model --------------------------------------------------------------------------------

def chat_client(config):
    """An openai.OpenAI for the configured chat model (as learns generate creates it)."""
    openai = _openai()
    api_key = os.environ.get("OPENAI_API_KEY")
    if not config.chat_base_url and not api_key:
        raise ChatFailed("no chat model to ask: OPENAI_API_KEY is not set and no chat server is given. Fix: export "
                         "OPENAI_API_KEY, or [[pass --chat-base-url or ]]set chat_base_url (KB_CHAT_BASE_URL, else OPENAI_BASE_URL) for an "
                         "OpenAI-compatible server such as http://127.0.0.1:8080/v1.")
    return openai.OpenAI(api_key=api_key or "not-needed", base_url=config.chat_base_url, max_retries=CHAT_RETRIES,
                         timeout=config.chat_timeout, http_client=openai_http_client(openai))


def _openai():
    try:
        import openai
    except ImportError as exc:
        raise ChatFailed(needs_extra("openai", "asking a chat model")) from exc
    return openai


def _chat(client, model: str, messages: list[dict]) -> str:
    openai = _openai()
    url = str(getattr(client, "base_url", "") or "the OpenAI API")
    try:
        response = client.chat.completions.create(model=model, messages=messages)
    except openai.APITimeoutError as exc:
        raise ChatFailed(f"the chat model at {url} did not answer within {_timeout(client)}. Fix: check that the "
                         "server is working, or allow longer with chat_timeout (KB_CHAT_TIMEOUT, seconds).") from exc
    except openai.APIConnectionError as exc:
        raise ChatFailed(f"the chat model at {url} cannot be reached ({exc.__cause__ or exc}). Fix: start the "
                         "server, or check [[--chat-base-url / ]]the setting chat_base_url (KB_CHAT_BASE_URL).") from exc
    except openai.APIStatusError as exc:
        raise ChatFailed(f"the chat model at {url} failed: HTTP {exc.status_code} ({_message(exc)}). Fix: check "
                         "[[--chat-model / ]]the setting chat_model and OPENAI_API_KEY; for a 5xx, the server's log, then ask again.") from exc
    except openai.APIError as exc:
        raise ChatFailed(f"the chat model at {url} failed ({exc.message}). Fix: check that [[--chat-base-url / ]]chat_base_url is an "
                         "OpenAI-compatible server (POST …/chat/completions).") from exc
    except ValueError as exc:  # the SDK parses a body labelled application/json that is not JSON
        raise ChatFailed(f"the chat model at {url} answered HTTP 200 with a body that is not JSON ({exc}). Fix: check "
                         "that [[--chat-base-url / ]]chat_base_url is an OpenAI-compatible server (POST …/chat/completions), not a "
                         "proxy's or a web server's page.") from exc
    choices = getattr(response, "choices", None) or []
    content = choices[0].message.content if choices and choices[0].message else None
    if not isinstance(content, str) or not content.strip():
        raise ChatFailed(f"the chat model at {url} answered without any text. Fix: check --chat-model names a chat "
                         "model of that server.")
    return content.strip()


def _timeout(client) -> str:
    timeout = getattr(client, "timeout", None)
    seconds = getattr(timeout, "read", timeout)
    return f"{seconds:g} s" if isinstance(seconds, (int, float)) else "its timeout"


def _message(exc) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else body
    return str(error.get("message") or exc.message)[:200]


# retrieval -------------------------------------------------------------------------------------

def _retrieve(question: str, config, index, sources, channel: str = "ask") -> tuple[list[dict], str | None]:
    """(context results best first, note) — the note says why there is no context."""
    from .retrieval_log import log_retrieval

    if not config.rag_enabled:
        return [], NOTE_DISABLED
    try:
        results = _search(question, config, index, sources, channel)
    except InputTooLarge:
        raise
    except (KnowledgeBuildError, OSError) as exc:
        log.warning("retrieval failed, answering without context: %s", exc)
        return [], f"retrieval failed: {exc}"
    log_retrieval(question, results)
    return results, None if results else NOTE_NOTHING


def _search(question: str, config, index, sources, channel: str = "ask") -> list[dict]:
    from ..store.gaps import note
    from .mcp_sources import mixed, web_result
    from .service import open_search

    opened = index is None
    searcher = open_search(config) if opened else index
    try:
        found = searcher.search(question, k=config.retrieval_count, min_relevance=config.relevance_threshold)
        note(config, channel, question, found)  # the gap log, when the owner turned it on
        site = [_site_result(searcher, r) for r in found]
        web = _web(question, config, searcher, sources)
    finally:
        if opened and hasattr(searcher, "close"):
            searcher.close()
    web = [{**web_result(row), "text": _place_text([row["text"], *(sub["text"] for sub in row["sub_results"])])}
           for row in web]
    return mixed(site, web, config.retrieval_count)


def _site_result(searcher, result) -> dict:
    data = result.to_dict()
    base = getattr(searcher, "index", searcher)  # a SearchService answers over a KnowledgeIndex
    chunks = (data, *data["sub_results"])
    data["text"] = _place_text([_content(base, chunk["id"], chunk["excerpt"]) for chunk in chunks])
    return data


def _content(base, chunk_id: str, excerpt: str) -> str:
    try:
        return base.get(chunk_id).content
    except KnowledgeBuildError:
        return excerpt


def _place_text(texts: list[str]) -> str:
    """A place's text for its context block: each chunk's text (cut at TEXT_CHARS), lead first, while
    the block stays within PLACE_CHARS."""
    kept: list[str] = []
    for text in texts:
        text = str(text or "").strip()
        text = text[:TEXT_CHARS] + "…" if len(text) > TEXT_CHARS else text
        if kept and sum(len(t) + 2 for t in kept) + len(text) > PLACE_CHARS:
            break
        kept.append(text)
    return "\n\n".join(kept)


def _web(question: str, config, searcher, sources) -> list[dict]:
    """The web sources' k best, or [] when the store has none (a missing SQLite file is not created) or
    cannot be read (a warning says why; the site's results still answer)."""
    try:
        store = sources if sources is not None else _open_sources(config, searcher)
    except (KnowledgeBuildError, OSError, sqlite3.Error) as exc:
        log.warning("the web sources were not searched (%s); answering from the site", exc)
        return []
    if store is None:
        return []
    try:
        if not store.status()["chunks"]:
            return []
        return store.query(question, k=config.retrieval_count, threshold=config.similarity_threshold,
                           min_relevance=config.relevance_threshold)
    except InputTooLarge:
        raise
    except (KnowledgeBuildError, OSError, sqlite3.Error) as exc:
        log.warning("the web sources were not searched (%s); answering from the site", exc)
        return []
    finally:
        if sources is None:
            store.close()


def _open_sources(config, searcher):
    from pathlib import Path

    from ..config import is_database_url, store_target
    from ..store.sources import SourceStore

    try:
        target = store_target(config)
    except ConfigError:
        return None
    if not is_database_url(target) and not Path(target).is_file():
        return None
    return SourceStore(getattr(searcher, "index", searcher).embedder, target)


# the prompt ------------------------------------------------------------------------------------

def build_messages(question: str, results: list[dict], note: str | None,
                   site: SiteIdentity | None = None) -> list[dict]:
    """The system prompt (who speaks for which site, the instructions and, when there are results, the
    context; in the site's language, Japanese when unknown) and the question."""
    site = site or SiteIdentity()
    words = JAPANESE if site.japanese else ENGLISH
    system = site.introduction() + "\n"
    if results:
        system += words.with_context + "\n\n".join(_context_block(n, r, words) for n, r in enumerate(results, 1))
    else:
        system += words.without_context.format(note=note or NOTE_NOTHING)
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def _context_block(number: int, result: dict, words: PromptTexts) -> str:
    lines = [f"[{number}] {result.get('title') or ''}", f"URL: {_url(result)}"]
    heading = " › ".join([*result.get("parents", []), result.get("heading") or ""]).strip(" ›")
    if heading:
        lines.append(f"{words.heading}: {heading}")
    if result.get("learns"):
        lines.append(f"{words.learns}: " + " / ".join(result["learns"]))
    text = str(result.get("text") or result.get("excerpt") or "").strip()
    lines.append(f"{words.text}: " + (text[:PLACE_CHARS] + "…" if len(text) > PLACE_CHARS else text))
    return "\n".join(lines)


def _url(result: dict) -> str:
    return result.get("absolute_url") or result.get("url") or ""


def _summary(rank: int, result: dict) -> dict:
    web = result.get("source") == "web"
    row = {"rank": rank, "id": result["id"], "title": result.get("title") or "", "url": _url(result),
           "source": "web" if web else "site"}
    if web:
        row["similarity"] = result.get("similarity")
    row["relevance"] = result.get("relevance")
    row["score"] = result.get("score")
    return row
