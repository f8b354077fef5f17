"""Search and listing filters as people write them.

A filter value is matched against what the index holds: the stored value itself, or a name the
site shows for it: a category's display name from `_data/categories.yml` (kept in the manifest as
`site.categories`), a material's page title, a type's id prefix or plural (`def`, `rules`), a version with or
without its `v` or by its alias (`latest`), `all` for every version or language (ranking/facets.py). Width,
case, spaces and punctuation do not matter. A value that names nothing raises `UnknownFilterValue`
listing the values that exist: an empty answer would read like "the site does not teach this".
"""

from __future__ import annotations

import difflib
import re

from ..errors import UnknownFilterValue
from ..kinds import KINDS, LEVELS
from ..ranking.facets import ALL, FACET_FILTERS
from ..text.ja import nfkc

FILTERS = ("type", "category", "material", "level", "version", "language")
# An error lists at most this many materials (the reference site has about a hundred): the
# closest to what was asked.
_SHOWN = 12


def _key(value: str) -> str:
    """What two spellings of one name share: 一次方程式：式の立て方 = 一次方程式_式の立て方."""
    return re.sub(r"[\W_]+", "", nfkc(value).casefold())


class FilterVocabulary:
    """Every value each filter accepts, and the stored value it stands for."""

    def __init__(self, chunks=(), categories: dict[str, str] | None = None, columns=None,
                 version_aliases: dict[str, str] | None = None):
        """From the chunks, or from an index's columns (index_rows.Columns: the distinct values only);
        `version_aliases`: the site's (latest -> 1.7, the manifest's site.facets)."""
        self.categories = dict(categories or {})
        self._stored: dict[str, dict[str, str]] = {name: {} for name in FILTERS}  # value -> label
        self._aliases: dict[str, dict[str, set[str]]] = {name: {} for name in FILTERS}
        for kind in KINDS:
            self._add("type", kind.type, kind.type, kind.prefix, kind.type + "s")
        for level in LEVELS:
            self._add("level", level, level)
        if columns is not None:
            pairs = [(c, None, None) for c in columns.values["category"]]
            pairs += [(None, m, t) for m, t in zip(columns.values["material"], columns.material_titles)]
        else:
            pairs = [(c.category, c.material, c.material_title) for c in chunks]
        for name in FACET_FILTERS:
            found = columns.facet_values(name) if columns is not None else sorted({getattr(c, name, "") for c in chunks} - {""})
            if found:
                self._add(name, ALL, f"{ALL} (every {name})")
            for value in found:
                aliases = [a for a, v in (version_aliases or {}).items() if v == value] if name == "version" else []
                self._add(name, value, value, *aliases, value[1:] if value[:1] in "vV" else "v" + value)
        for category, material, title in pairs:
            if category:
                name = self.categories.get(category, "")
                self._add("category", category, f"{category} ({name})" if name else category, name)
            if material is not None:
                self._add("material", material, material, title)

    def _add(self, name: str, stored: str, label: str, *aliases: str) -> None:
        self._stored[name][stored] = label
        for alias in (stored, *aliases):
            if alias and _key(alias):
                self._aliases[name].setdefault(_key(alias), set()).add(stored)

    def resolve(self, name: str, value) -> str | None:
        """The stored value `value` names (None: no filter); UnknownFilterValue when it names none
        or several."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        value = str(value).strip()
        if name in FACET_FILTERS and value.casefold() == ALL:
            return ALL
        if value in self._stored[name]:
            return value
        found = sorted(self._aliases[name].get(_key(value), ()))
        if len(found) == 1:
            return found[0]
        if found:
            raise UnknownFilterValue(name, value, found, f" It names {len(found)} {name}s: give one of them.")
        raise UnknownFilterValue(name, value, *self._known(name, value))

    def resolve_all(self, **filters) -> dict:
        return {name: self.resolve(name, value) for name, value in filters.items()}

    def _known(self, name: str, value: str) -> tuple[list[str], str]:
        labels = self._stored[name]
        if len(labels) <= _SHOWN:
            return sorted(labels.values()), ""
        closest = difflib.get_close_matches(value, list(labels), n=_SHOWN, cutoff=0.3) or sorted(labels)[:_SHOWN]
        return [labels[v] for v in closest], f" ({len(labels)} {name}s in all; these are the closest.)"
