"""A page's identity: its material name (the part of every chunk id before `#`) and, with the URL
rules in jekyll.permalink, the address the server gives it.

The rule (README, "Page identity"):
- A page's path is its site-relative path without `.html`, and without a final `/index`
  (`docs/permalinks/index.html` -> `docs/permalinks`; the home page `index.html` -> `index`).
- Its material is its file name without `.html` when no other page of the site has that file name
  and no other page's path is that name (`junior/二次方程式.html` -> `二次方程式`: ids stay short
  and stable on sites whose file names are unique); otherwise its path.
- A permalink is a path on the site's own host (site_path): `permalink: //host/x/` is `/host/x/`.
- Two pages with the same path (`a.html` and `a/index.html`) are an error naming both: their chunk
  ids and links would collide.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

from ..diagnostics import Diagnostic


def site_path(link: str) -> str:
    """`link` (a permalink or baseurl as written) as a path on the site's own host: one leading `/`,
    runs of `/` collapsed to one, as Jekyll's URL#sanitize_url writes the page (so `//host/x/` is the
    path `/host/x/`, not a link to another host), and a backslash or control character percent-encoded
    (a browser reads `/\\host` as `//host` and drops tabs and newlines, which would make one again)."""
    encoded = _UNSAFE_IN_PATH.sub(lambda m: f"%{ord(m.group()):02X}", str(link))
    return re.sub(r"/{2,}", "/", "/" + encoded)


_UNSAFE_IN_PATH = re.compile(r"[\x00-\x1f\x7f\\]")


def page_path(rel: str) -> str:
    """`docs/a/index.html` -> `docs/a`, `docs/b.html` -> `docs/b`, `index.html` -> `index`."""
    path = rel[: -len(".html")] if rel.endswith(".html") else rel[: -len(".htm")] if rel.endswith(".htm") else rel
    if path.endswith("/index"):
        path = path[: -len("/index")]
    return path


def material_names(rels: list[str], root: str) -> tuple[dict[str, str], list[Diagnostic]]:
    """rel -> material for every page (see the module docstring), and an error for each collision."""
    paths = {rel: page_path(rel) for rel in rels}
    stems = Counter(PurePosixPath(rel).stem for rel in rels)
    taken = Counter(paths.values())
    names: dict[str, str] = {}
    for rel, path in paths.items():
        stem = PurePosixPath(rel).stem
        short = stem != "index" and stems[stem] == 1 and (taken[stem] == 0 or path == stem)
        names[rel] = stem if short else path
    diagnostics = []
    first: dict[str, str] = {}
    for rel in rels:
        name = names[rel]
        if name in first:
            diagnostics.append(Diagnostic(f"{root}/{rel}", 1, 1, "error", "duplicate-page",
                                          f"pages '{first[name]}' and '{rel}' both get the page id '{name}', so "
                                          "their chunk ids and links would collide",
                                          f"rename or remove one of the two, or add one to 'exclude'"))
        else:
            first[name] = rel
    return names, diagnostics
