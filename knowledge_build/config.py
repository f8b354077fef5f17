"""One resolved `Config`: knowledge.yml / [tool.knowledge-build] < KB_* env < CLI flags.

Flags the user did not give arrive as None and never override a lower layer.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from .errors import ConfigError
from .kinds import BOX_CLASSES
from .yamlfile import load_file as load_yaml_file

DEFAULT_BOX_CLASSES = BOX_CLASSES
EMBEDDERS = ("local", "openai", "openai-compatible")


@dataclass(frozen=True)
class Config:
    site: Path | None = None
    output: Path | None = None  # default: <site output>/knowledge/v1
    baseurl: str | None = None  # default: from _config.yml
    embedder: str = "local"
    embedding_model: str | None = None  # openai: text-embedding-3-small by default
    embedding_dimensions: int | None = None
    base_url: str | None = None  # an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1
    batch_size: int | None = None  # per model call or request; None: the embedder's own (16 local, 256 OpenAI)
    embedding_timeout: float | None = None  # seconds per request to a remote embedder; None: 600
    cache_dir: Path = field(default_factory=lambda: _default_cache_dir())
    box_classes: tuple[str, ...] = DEFAULT_BOX_CLASSES
    exclude: tuple[str, ...] = ()  # glob patterns, relative to the site
    glossary: Path | None = None  # extra term -> slug file for suggest-ids
    generated_learns: Path = Path("data/learns.generated.yml")  # `learns generate` writes, build reads
    missing_id: str = "warning"  # severity of a knowledge box without an id: error | warning | off
    prefix_mismatch: str = "warning"  # severity of an id prefix that contradicts its box
    sources: tuple[str, ...] = ()  # where each value came from, for --debug output

    def with_overrides(self, **values) -> "Config":
        given = {k: v for k, v in values.items() if v is not None}
        return replace(self, **_coerce(given, "command line")) if given else self


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "knowledge-build"


_FIELDS = {f.name for f in fields(Config)} - {"sources"}
_ENV = {
    "KB_SITE": "site",
    "KB_OUTPUT": "output",
    "KB_BASEURL": "baseurl",
    "KB_EMBEDDER": "embedder",
    "KB_BATCH_SIZE": "batch_size",
    "KB_CACHE_DIR": "cache_dir",
    "KB_GLOSSARY": "glossary",
    "KB_GENERATED_LEARNS": "generated_learns",
    "KB_EMBEDDING_MODEL": "embedding_model",
    "KB_EMBEDDING_DIMENSIONS": "embedding_dimensions",
    "KB_BASE_URL": "base_url",
    "KB_EMBEDDING_TIMEOUT": "embedding_timeout",
}
_PATHS = ("site", "output", "cache_dir", "glossary", "generated_learns")
_SEVERITIES = ("error", "warning", "off")


def load_config(cwd: Path | None = None, env: dict | None = None, **flags) -> Config:
    """Resolve the configuration once: file < environment < flags."""
    cwd = Path(cwd or Path.cwd())
    env = os.environ if env is None else env
    config = Config()
    file_values, file_name = _read_file(cwd)
    sources = []
    if file_values:
        config = replace(config, **_coerce(file_values, file_name))
        sources.append(file_name)
    env_values = {_ENV[k]: v for k, v in env.items() if k in _ENV and v != ""}
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
    return values


def _coerce(values: dict, origin: str) -> dict:
    out = {}
    for key, value in values.items():
        if key not in _FIELDS:
            known = ", ".join(sorted(_FIELDS))
            raise ConfigError(f"{origin}: unknown setting '{key}'. Known settings: {known}.")
        out[key] = _coerce_one(key, value, origin)
    return out


def _coerce_one(key: str, value, origin: str):
    if key in _PATHS:
        return Path(value).expanduser()
    if key in ("missing_id", "prefix_mismatch"):
        if value not in _SEVERITIES:
            raise ConfigError(f"{origin}: {key} must be one of {', '.join(_SEVERITIES)}, got {value!r}.")
        return value
    if key == "embedding_dimensions":
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{origin}: embedding_dimensions must be an integer, got {value!r}.") from None
    if key == "batch_size":
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = 0
        if number < 1:
            raise ConfigError(f"{origin}: batch_size must be a positive integer, got {value!r}.")
        return number
    if key == "embedding_timeout":
        return positive_seconds(value, origin)
    if key == "embedder":
        if value not in EMBEDDERS:
            raise ConfigError(
                f"{origin}: unknown embedder {value!r}. Choose one of: {', '.join(EMBEDDERS)}."
            )
        return value
    if key in ("box_classes", "exclude"):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        return tuple(value)
    return value


def positive_seconds(value, origin: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = 0.0
    if not seconds > 0 or seconds == float("inf"):
        raise ConfigError(f"{origin}: embedding_timeout must be a positive number of seconds, got {value!r}.")
    return seconds
