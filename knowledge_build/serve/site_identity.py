"""Who the site is, for the chat model (`ask`, the Slack app) and for an MCP client: its name,
description and language, and the texts that introduce it.

The build writes them into the manifest's `site` object (`name`, `description`, `lang`, from the
generator's own configuration); the settings `site_name` and `site_description` win over it. When
nothing is known the texts say 「このサイト」 / "the site", never another site's words. The language
picks the template: Japanese when the site is Japanese or its language is unknown, English otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import KnowledgeBuildError

MAX_NAME, MAX_DESCRIPTION = 100, 300  # characters of each that reach a prompt (a manifest is not checked for length)
_LANGUAGES = {"ja": "Japanese", "en": "English"}


@dataclass(frozen=True)
class SiteIdentity:
    name: str | None = None
    description: str | None = None
    lang: str | None = None  # as the site gives it: "ja", "en-US", …

    @property
    def japanese(self) -> bool:
        """Whether the Japanese texts fit: a Japanese site, or one whose language is unknown."""
        return self.language in (None, "ja")

    @property
    def language(self) -> str | None:
        """The primary language subtag, lower case ("ja" of "ja-JP" or "ja_JP"); None when unknown."""
        primary = re.split(r"[-_]", self.lang or "", maxsplit=1)[0].lower()
        return primary or None

    def introduction(self) -> str:
        """The system prompt's first line: who the chat model speaks for, and how to answer."""
        if self.japanese:
            site = f"『{self.name}』" if self.name else "このサイト"
            about = f"（{self.description}）" if self.description else ""
            return f"あなたは{site}{about}の案内役です。質問に日本語で、短く正確に答えてください。"
        site = f"“{self.name}”" if self.name else "this site"
        about = f" ({self.description})" if self.description else ""
        return (f"You are the guide to {site}{about}. Answer briefly and accurately, in the language of the "
                "question.")

    def label(self) -> str:
        """The site in an English sentence for an MCP client: the Japanese site “数学ノート” (…)."""
        language = _LANGUAGES.get(self.language or "")
        site = "the " + (f"{language} " if language else "") + "site"
        named = f"{site} “{self.name}”" if self.name else f"{site} this server indexes"
        return named + (f" ({self.description})" if self.description else "")


def site_identity(config=None, manifest: dict | None = None) -> SiteIdentity:
    """The settings `site_name` / `site_description` over the manifest's `site` name / description / lang."""
    site = manifest.get("site") if isinstance(manifest, dict) else None
    site = site if isinstance(site, dict) else {}
    return SiteIdentity(name=_text(getattr(config, "site_name", None), MAX_NAME) or _text(site.get("name"), MAX_NAME),
                        description=(_text(getattr(config, "site_description", None), MAX_DESCRIPTION)
                                     or _text(site.get("description"), MAX_DESCRIPTION)),
                        lang=_text(site.get("lang"), 35))  # BCP 47 tags are short


def identity_of(config, index=None) -> SiteIdentity:
    """The identity of the site `index` searches (a KnowledgeIndex or a SearchService over one), or,
    with no index, of the set `config` names, from its manifest alone (no model is loaded); the
    settings alone when that set cannot be read."""
    if index is not None:
        return site_identity(config, getattr(getattr(index, "index", index), "manifest", None))
    return site_identity(config, _read_manifest(config))


def _read_manifest(config) -> dict | None:
    from ..config import index_dir
    from ..index.verify import load_manifest, locate

    try:
        return load_manifest(locate(index_dir(config))[0])[0]
    except (KnowledgeBuildError, OSError):  # the answer still comes, introducing "this site"
        return None


def _text(value, limit: int) -> str | None:
    """One line of at most `limit` characters; None for anything but a non-blank string."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return (text[:limit - 1] + "…" if len(text) > limit else text) or None
