"""Which site a database's chunks belong to, so that `publish` never silently replaces another site's.

A site is its address: the manifest's `site.url` (scheme and host) and `site.baseurl` (the path it is
served under). A rebuild keeps them while its build id, its chunks and even its title change; another
site has its own. Each publish records the set's site in `knowledge_meta` (key `site`: url, baseurl,
name). When the addresses cannot tell (a site with no url and no baseurl, or a database published
before the site was recorded), the chunk ids do: a rebuild of a site shares its pages' chunk ids,
another site shares none.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

from ..errors import KnowledgeBuildError

META_KEY = "site"
_SHOWN_PAGES = 3  # pages named for a database that recorded no site


@dataclass(frozen=True)
class PublishedSite:
    name: str | None = None
    url: str = ""  # scheme and host, "" unknown
    baseurl: str = ""  # "/docs"; "" for the root or unknown

    @classmethod
    def of(cls, manifest: dict) -> PublishedSite:
        site = manifest.get("site") if isinstance(manifest, dict) else None
        return cls.from_dict(site if isinstance(site, dict) else {})

    @classmethod
    def from_dict(cls, site: dict) -> PublishedSite:
        name = " ".join(site["name"].split()) if isinstance(site.get("name"), str) else ""
        return cls(name or None, _origin(site.get("url")), _path(site.get("baseurl")))

    @classmethod
    def recorded(cls, meta: dict[str, str]) -> PublishedSite | None:
        """The site a database's `knowledge_meta` records; None when it records none (or garbage)."""
        try:
            site = json.loads(meta[META_KEY])
        except (KeyError, TypeError, ValueError):
            return None
        return cls.from_dict(site) if isinstance(site, dict) else None

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @property
    def address(self) -> str:
        return self.url + self.baseurl

    def same_as(self, other: PublishedSite) -> bool | None:
        """Whether the two addresses are one site's; None when they cannot tell (neither has a url and
        both are served at the root)."""
        if self.baseurl != other.baseurl or (self.url and other.url and self.url != other.url):
            return False
        return True if self.baseurl or (self.url and other.url) else None

    def label(self) -> str:
        """“数学ノート” (https://example.github.io/math-note), for a message."""
        if self.name:
            return f"“{self.name}” ({self.address or 'no url or baseurl'})"
        return self.address or "a site with no name, url or baseurl"

    def short(self) -> str:
        return f"“{self.name}”" if self.name else self.address or "this site"


class AnotherSite(KnowledgeBuildError):
    """The database holds another site's chunks, which publishing this set would delete."""

    def __init__(self, held: PublishedSite | None, incoming: PublishedSite, held_text: str):
        self.held, self.incoming = held, incoming
        replaced = held.short() if held else "the site published there"
        super().__init__(f"the database holds another site: {held_text}; this artifact set is {incoming.label()}. "
                         "Publishing it would delete those chunks. Fix: publish to the database of "
                         f"{incoming.short()}[[, or pass --replace to replace {replaced} with it]].")


def refusal(conn, manifest: dict, meta: dict[str, str], published: int, shared: int) -> AnotherSite | None:
    """Why publishing the set of `manifest` would replace another site's chunks, or None. `published`:
    the rows the table holds; `shared`: how many of them have an id of the set."""
    if published == 0:
        return None
    incoming, held = PublishedSite.of(manifest), PublishedSite.recorded(meta)
    same = held.same_as(incoming) if held else None
    if same is None:
        same = shared > 0
    if same:
        return None
    if held:
        return AnotherSite(held, incoming, f"{held.label()}, {published} chunks")
    pages = [row[0] for row in conn.execute("select material from knowledge_chunks group by material"
                                            " order by material limit %s", (_SHOWN_PAGES + 1,))]
    count = conn.execute("select count(distinct material) from knowledge_chunks").fetchone()[0]
    shown = ", ".join(pages[:_SHOWN_PAGES]) + (", …" if count > _SHOWN_PAGES else "")
    return AnotherSite(None, incoming, f"one published before sites were recorded, {published} chunks on {count} "
                                       f"page{'s' if count != 1 else ''} ({shown})")


def _origin(value) -> str:
    if not isinstance(value, str):
        return ""
    try:
        parts = urlsplit(value.strip())
    except ValueError:  # "http://[::1" and the like: no address
        return ""
    if parts.scheme and parts.netloc:
        return f"{parts.scheme.lower()}://{parts.netloc.lower()}"
    return ""


def _path(value) -> str:
    if not isinstance(value, str):
        return ""
    path = value.strip().strip("/")
    return "/" + path if path else ""
