"""The MCP server: the tutor's gateway to the site's knowledge and its own notes.

Tools: search_knowledge, get_chunk_by_id, list_concepts (the site's chunks, database first and
the artifacts as fallback), save_knowledge, delete_knowledge, knowledge_import, knowledge_query
(the writable store), crawl_site, add_page, source_status, delete_source (web sources, in the same
store: mcp_sources.py). Over HTTP (streamable HTTP at /mcp) it also answers GET /health.
Uses only the public API; every limit (query, note and document size, chunks per import, top_k)
is the library's, and a call over one gets the library's message as its tool error.
"""

from __future__ import annotations

import inspect
import json
import typing
from functools import lru_cache
from pathlib import Path

import knowledge_build as kb

MAX_TOP_K = 50  # results per search call; larger top_k values are clamped to it, below 1 is an error
DEFAULT_CONCEPTS, MAX_CONCEPTS = 100, 500  # list_concepts page size; larger limits are clamped, below 1 an error

# {site}: SiteIdentity.label(), e.g. the Japanese site “数学ノート” (…), from the manifest and the settings
INSTRUCTIONS = (
    "Search {site}. search_knowledge finds the boxes (rules, methods, definitions, examples, tips) and the "
    "sections and tables that answer a question and links straight to them; tell the reader what they will "
    "learn there (learns). save_knowledge / knowledge_import keep your own notes and documents, "
    "knowledge_query searches them."
)
SEARCH_DESCRIPTION = """Find what {site} says about a question (Japanese, kana, romaji or English).

Returns results best first with url (a link to the exact box, from the site root),
absolute_url (the same on the site's host, when known), title, learns (what the reader
learns there), excerpt, similarity (0-1), relevance (calibrated 0-1) and relevant (true
when relevance >= 0.5), type (rule, method, definition, example, tip; section: a page's text
under a heading, linked to the heading; table: rows of a table with its header), source (database
or artifacts), locations (other pages teaching the same concept) and sub_results (the other
chunks of the same place, e.g. more rows of the same table: id, url, title, excerpt, score,
similarity, relevance, relevant). top_k counts places: chunks sharing a url are one result.
Top-level `relevant` is false when no result is relevant: the site has nothing on the
question, do not cite these results. min_relevance (0-1, e.g. 0.5) drops results below it.
Filters: type, category (id or the name the site gives it), material (page name or
title), level (基礎, 標準, 発展); on a site with versions or languages, version (default: the
newest; "all": every version, each place once, other_versions linking the rest) and language
(default: ja for a question in Japanese script). A filter value the site does not have is an
error naming the values it has. include_sources (default: true when web sources are stored, and no filter
is given) mixes chunks of crawled web pages into the list (source "web", source_url, heading;
with relevance and relevant measured the same way)."""


def create_server(service, notes, sources=None, crawl_settings=None, site=None, on_search=None):
    """An MCPServer over a SearchService (site chunks), a NoteStore (writable knowledge) and, when
    given, a SourceStore (web pages: the source tools, and web chunks mixed into search_knowledge).
    `site`: the SiteIdentity its instructions and search tool name; default: the one the service's
    manifest gives (serve() adds the settings). `on_search(query, results)`: called after each search_knowledge
    (serve() gives the gap log's, store/gaps.py)."""
    from .mcp_sources import register_source_tools
    from .site_identity import identity_of

    label = (site or identity_of(None, service)).label()
    server = _strict_server_class()("knowledge-build", instructions=INSTRUCTIONS.format(site=label),
                                    version=kb.__version__)
    _register_search(server, service, sources, SEARCH_DESCRIPTION.format(site=label), on_search)
    _register_chunk_tools(server, service)
    _register_teaching_tools(server, service)
    _register_note_tools(server, notes)
    _register_document_tools(server, notes)
    if sources is not None:
        register_source_tools(server, sources, crawl_settings, _ok, _error)
    _register_health(server, service, notes)
    return server


def _register_search(server, service, sources, description: str, on_search=None) -> None:
    """search_knowledge: the site's chunks, with web chunks mixed in when a source store is given."""
    from .mcp_sources import mixed, web_results
    from .retrieval_log import log_retrieval

    @server.tool(description=description)  # SEARCH_DESCRIPTION, naming the site
    def search_knowledge(query: str, top_k: int = 5, type: str | None = None, category: str | None = None,
                         material: str | None = None, level: str | None = None, min_relevance: float | None = None,
                         include_sources: bool | None = None, version: str | None = None,
                         language: str | None = None):
        if not query or not query.strip():
            return _error("query is required")
        if top_k < 1:
            return _error(_TOP_K_ERROR)
        if min_relevance is not None and not 0 <= min_relevance <= 1:
            return _error("min_relevance must be between 0 and 1")
        try:
            results = service.search(query, k=_top_k(top_k), type=type, category=category, material=material,
                                     level=level, min_relevance=min_relevance, version=version, language=language)
        except (kb.InputTooLarge, kb.UnknownFilterValue) as exc:
            return _error(str(exc))
        if on_search is not None:
            on_search(query, results)
        site = [r.to_dict() for r in results]
        filtered = any(v is not None for v in (type, category, material, level, min_relevance, version, language))
        if sources is not None and (include_sources or (include_sources is None and not filtered)):
            site = mixed(site, web_results(sources, query, _top_k(top_k), min_relevance), _top_k(top_k))
        log_retrieval(query, site)
        return _ok({"results": site, "total": len(site), "relevant": any(r["relevant"] for r in site)})


def _register_chunk_tools(server, service) -> None:
    """get_chunk_by_id and list_concepts: one chunk whole, the chunks a page at a time."""
    @server.tool()
    def get_chunk_by_id(id: str, part: str | None = None):
        """The full knowledge box for an id as search_knowledge gives it, 'material#anchor' (content, learns, url…).
        `part`: "problem" for an exercise without its answer (to set it to a student), "solution" for the answer
        alone, on a box whose answer the page marks (answer_marked)."""
        if not id or not id.strip():
            return _error("id is required")
        try:
            return _ok(_jsonable(service.get(id, part)))
        except kb.ChunkNotFound:
            return _error("knowledge not found")
        except kb.KnowledgeBuildError as exc:
            return _error(str(exc))

    @server.tool()
    def list_concepts(category: str | None = None, type: str | None = None, limit: int = DEFAULT_CONCEPTS,
                      offset: int = 0):
        """The knowledge boxes (id, title, type, url, absolute_url, learns, material, category) in id
        order, optionally of one category or type, one page at a time: `limit` (default 100, at most
        500) from `offset`. Returns `total` (all that match) and `next_offset` (null on the last page)."""
        if offset < 0:
            return _error("offset must be 0 or more")
        if limit < 1:
            return _error(f"limit must be 1 or more (larger than {MAX_CONCEPTS} gives {MAX_CONCEPTS})")
        try:
            return _ok(service.concept_page(type=type, category=category, offset=offset,
                                            limit=min(limit, MAX_CONCEPTS)))
        except kb.UnknownFilterValue as exc:
            return _error(str(exc))


def _register_teaching_tools(server, service) -> None:
    """outline and learning_path: what a tutor plans a lesson with (teaching.py)."""
    @server.tool()
    def outline(material: str | None = None):
        """The site's pages, or one page (`material`: its file name without .html), each with its sections and
        their boxes and tables in page order: id, title, type, level, url. For planning a lesson or a walk through
        a page."""
        try:
            return _ok({"pages": service.outline(material)})
        except kb.PageNotFound as exc:
            return _error(str(exc))

    @server.tool()
    def learning_path(id: str | None = None, query: str | None = None):
        """What a student should know first and what comes next: for a page or a box (`id`: a page's name or a
        box id) or for the page that best answers `query`, its prerequisites, transitively, in an order a student
        can follow (`before`), the page itself, then the pages that build on it (`after`), each with its link and
        boxes. Prerequisites that are no page of the site are listed in `missing`, loops in `cycles`."""
        if not (id or "").strip() and not (query or "").strip():
            return _error("give id (a page or a box id) or query")
        try:
            return _ok(service.learning_path(id.strip() if (id or "").strip() else None, query))
        except kb.KnowledgeBuildError as exc:
            return _error(str(exc))


def _register_note_tools(server, notes) -> None:
    """save_knowledge and delete_knowledge: the tutor's own notes."""
    @server.tool()
    def save_knowledge(content: str, title: str | None = None, tags: list[str] | None = None):
        """Save a note of your own (searchable with knowledge_query). Title defaults to the first 30 characters."""
        if not content or not content.strip():
            return _error("content is required")
        try:
            return _ok(notes.save(content, title, tags))
        except kb.InputTooLarge as exc:
            return _error(str(exc))

    @server.tool()
    def delete_knowledge(id: str):
        """Delete a saved note, or an imported document with all its chunks, by id."""
        if not id or not id.strip():
            return _error("id is required")
        try:
            notes.delete(id)
        except kb.KnowledgeBuildError:
            return _error("knowledge not found")
        return _ok({"deleted": id})


def _register_document_tools(server, notes) -> None:
    """knowledge_import and knowledge_query: documents cut into chunks, and a search over notes and them."""
    @server.tool()
    def knowledge_import(title: str, content: str, source: str | None = None, category: str | None = None,
                         chunk_size: int = 500, chunk_overlap: int = 50, metadata: dict | None = None):
        """Import a document: split by paragraph, then sentence, then characters into overlapping chunks."""
        if not title or not title.strip():
            return _error("title is required")
        if not content or not content.strip():
            return _error("content is required")
        if not 100 <= chunk_size <= 10000:
            return _error("chunk_size must be between 100 and 10000")
        if not 0 <= chunk_overlap < chunk_size:
            return _error("chunk_overlap must be >= 0 and < chunk_size")
        try:
            return _ok(notes.import_document(title, content, source or "", category or "", chunk_size,
                                             chunk_overlap, metadata))
        except kb.InputTooLarge as exc:
            return _error(str(exc))

    @server.tool()
    def knowledge_query(query: str, top_k: int = 5, category: str | None = None, document_id: str | None = None,
                        include_document_info: bool = True):
        """Search your saved notes and imported documents by meaning."""
        if not query or not query.strip():
            return _error("query is required")
        if top_k < 1:
            return _error(_TOP_K_ERROR)
        try:
            found = notes.search(query, top_k=_top_k(top_k), category=category, document_id=document_id)
        except kb.InputTooLarge as exc:
            return _error(str(exc))
        results = []
        for item in found:
            entry = {"chunk_id": item["id"], "content": item["content"], "similarity": item["similarity"],
                     "title": item["title"]}
            if include_document_info:
                entry["document"] = notes.document(item["document_id"]) if item["document_id"] else None
            results.append(entry)
        return _ok({"results": results, "total": len(results)})


def _register_health(server, service, notes) -> None:
    """GET /health over HTTP: the version, the search's backends and the notes' backend."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    @server.custom_route("/health", methods=["GET"])
    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "healthy", "version": kb.__version__, **service.health(),
                             "notes": notes.backend})


@lru_cache(maxsize=1)
def _strict_server_class():
    """MCPServer that refuses arguments a tool does not take. The SDK drops them silently, so a
    misspelt filter (`categroy`) would widen the search without a word."""
    from mcp.server.mcpserver import MCPServer

    class StrictServer(MCPServer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.tool_arguments: dict[str, tuple[str, ...]] = {}
            self.numeric_arguments: dict[str, frozenset[str]] = {}

        def tool(self, *args, **kwargs):
            register = super().tool(*args, **kwargs)

            def decorator(fn):
                name = kwargs.get("name") or fn.__name__
                self.tool_arguments[name] = tuple(inspect.signature(fn).parameters)
                self.numeric_arguments[name] = _numeric_arguments(fn)
                return register(fn)

            return decorator

        async def call_tool(self, name, arguments, context=None):
            allowed = self.tool_arguments.get(name)
            unknown = sorted(set(arguments) - set(allowed)) if allowed is not None else []
            if unknown:
                return _error(f"{name} does not take {', '.join(map(repr, unknown))}; "
                              f"its arguments are: {', '.join(allowed)}")
            # The SDK's validation turns true into 1: a boolean would silently become a count.
            booleans = sorted(k for k in self.numeric_arguments.get(name, ()) if isinstance(arguments.get(k), bool))
            if booleans:
                return _error(f"{booleans[0]} must be a number, not {json.dumps(arguments[booleans[0]])}")
            return await super().call_tool(name, arguments, context)

        async def list_tools(self):
            tools = await super().list_tools()
            for tool in tools:  # say so in the published schema too
                tool.input_schema["additionalProperties"] = False
            return tools

    return StrictServer


_TOP_K_ERROR = f"top_k must be 1 or more (larger than {MAX_TOP_K} gives {MAX_TOP_K})"


def _top_k(value: int) -> int:
    return min(value, MAX_TOP_K)


def _numeric_arguments(fn) -> frozenset[str]:
    """The arguments of a tool annotated int or float (optional or not)."""
    hints = typing.get_type_hints(fn)
    return frozenset(name for name, hint in hints.items()
                     if name != "return" and {int, float} & {hint, *typing.get_args(hint)})


def _ok(data: dict):
    """A tool result with the data both as JSON text and as structured content."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
                          structured_content=data)


def _error(message: str):
    """A tool error whose text is exactly `message` (the SDK's ToolError would prefix it)."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _jsonable(row: dict) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v.isoformat() if hasattr(v, "isoformat") else v)
            for k, v in row.items() if k != "embedding"}


def serve(config, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765, token: str | None = None,
          allowed_hosts: tuple[str, ...] = (), **stream_limits) -> None:
    """Serve the site's index and the writable store resolved from one Config (index, database_url,
    database_timeout, base_url, embedding_timeout, store/notes, the crawl settings). stream_limits:
    run_http's max_streams and stream_idle_seconds."""
    from ..config import is_database_url, store_target
    from ..store.sources import SourceStore
    from ..web.ingest import crawler_settings
    from .mcp_transport import run_http, run_stdio
    from .retrieval_log import enable
    from .service import service_for
    from .site_identity import identity_of

    enable(config.debug_log)
    index = kb.open_search(config, use_database=False)
    service = service_for(index, config)
    target = store_target(config)
    notes = (kb.NoteStore(index.embedder, None, target) if is_database_url(target)
             else kb.NoteStore(index.embedder, Path(target)))
    sources = SourceStore(index.embedder, target)
    from ..store.gaps import gap_hook

    server = create_server(service, notes, sources, crawler_settings(config), identity_of(config, index),
                           on_search=gap_hook(config)("mcp"))
    if transport == "http":
        run_http(server, host, port, token, allowed_hosts, **stream_limits)
    else:
        run_stdio(server)
