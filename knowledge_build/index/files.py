"""Reading the files of an artifact set with care (verify.py, verify_v2.py):
reads bounded by what the manifest says, sizes checked before a byte is read, and the checks of the
chunk records (shape, counts) that do not depend on how the schema stores them, and the check of
a JSON document against the shipped schemas (`schema_problem`)."""

from __future__ import annotations

import json
import stat
from functools import lru_cache
from pathlib import Path

from ..errors import ArtifactTooLarge, ArtifactUnreadable, ChecksumMismatch, CountMismatch
from .layout import V2_CHUNKS as CHUNKS

# No real set comes near this (1,000 chunks of 384 dims are 1.5 MB); it bounds what a
# tampered manifest can make a reader load into memory.
MAX_FILE_BYTES = 4 << 30


def chunk_shape_problem(chunks) -> str | None:
    """Required fields, types and enums of knowledge_chunks.schema.json, read from the schema.

    Not jsonschema itself: on the reference corpus (1,046 chunks) it took 0.4 s of a 0.9 s
    open; this takes milliseconds and covers what the code relies on (the id/url patterns are
    checked by `validate`'s comparison with the HTML)."""
    if not isinstance(chunks, list):
        return "top level: not a JSON array of chunks"
    required, properties = _chunk_fields()
    for row, chunk in enumerate(chunks):
        if not isinstance(chunk, dict):
            return f"{row}: not an object"
        for name in required:
            if name not in chunk:
                return f"{row}: {name!r} is a required property"
        for name, value in chunk.items():
            spec = properties.get(name)
            if spec is None:
                return f"{row}: unexpected field {clip(name)!r}"
            if not _has_type(value, spec):
                return f"{row}/{name}: {short(repr(value))} is not a valid {spec.get('type') or 'value'}"
    return None


_JSON_TYPES = {"string": str, "array": list, "integer": int, "object": dict}


def _has_type(value, spec: dict) -> bool:
    expected = _JSON_TYPES.get(spec.get("type"))
    if expected is not None and (not isinstance(value, expected) or isinstance(value, bool)):
        return False
    if "enum" in spec and value not in spec["enum"]:
        return False
    items = spec.get("items")
    return not (expected is list and items and not all(_has_type(item, items) for item in value))


@lru_cache(maxsize=1)
def _chunk_fields() -> tuple[tuple[str, ...], dict]:
    from importlib import resources

    text = resources.files("knowledge_build.schemas").joinpath("knowledge_chunks.schema.json").read_text(encoding="utf-8")
    item = json.loads(text)["items"]
    return tuple(item["required"]), item["properties"]


def read_bounded(file: Path, path: Path, name: str, limit: int) -> bytes:
    """At most `limit` bytes of `file` (the callers know how large it may be)."""
    try:
        with open(file, "rb") as handle:
            return handle.read(limit)
    except FileNotFoundError:
        raise ChecksumMismatch(path, name, "file missing") from None
    except OSError as exc:
        raise ArtifactUnreadable(path, name, exc.strerror or exc) from exc


def check_size(path: Path, name: str, expected: int) -> None:
    if expected > MAX_FILE_BYTES:
        raise ArtifactTooLarge(path, name, expected, MAX_FILE_BYTES)
    try:
        info = (path / name).stat()
    except FileNotFoundError:
        raise ChecksumMismatch(path, name, "file missing") from None
    except OSError as exc:
        raise ArtifactUnreadable(path, name, exc.strerror or exc) from exc
    if not stat.S_ISREG(info.st_mode):
        raise ArtifactUnreadable(path, name, "not a regular file")
    if info.st_size != expected:
        raise ChecksumMismatch(path, name, f"size {info.st_size} bytes, manifest says {expected}")


def check_counts(path: Path, counts: dict, chunks: list[dict]) -> None:
    if len(chunks) != counts["chunks"]:
        raise CountMismatch(path, CHUNKS, counts["chunks"], len(chunks))
    ids = [c["id"] for c in chunks]
    if any(a >= b for a, b in zip(ids, ids[1:])):
        raise ArtifactUnreadable(path, CHUNKS, "chunk ids are not unique and sorted")
    materials = len({c["material"] for c in chunks})
    if materials != counts["materials"]:
        raise CountMismatch(path, f"{CHUNKS} (materials)", counts["materials"], materials)
    by_type: dict[str, int] = {}
    for chunk in chunks:
        by_type[chunk["type"]] = by_type.get(chunk["type"], 0) + 1
    for kind in sorted(by_type.keys() | counts["by_type"].keys()):
        if by_type.get(kind, 0) != counts["by_type"].get(kind, 0):
            raise CountMismatch(path, f"{CHUNKS} (type {kind!r})", counts["by_type"].get(kind, 0), by_type.get(kind, 0))


def clip(value):
    """A value to show in a message: itself, or the start of its repr when that is long."""
    try:
        text = repr(value)
    except RecursionError:
        return "(nested too deeply)"
    return value if len(text) <= 60 else short(text)


def short(text: str, limit: int = 60) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "…"


def schema_problem(data, schema_name: str) -> str | None:
    """The first JSON Schema violation as 'where: what', or None.

    The subset of JSON Schema the shipped manifest schemas use (type, required, properties,
    additionalProperties, propertyNames, items, const, enum, pattern, minimum, minItems), checked
    here rather than by jsonschema, whose import took 0.28 s of every loader's start; integers are
    real ints (JSON Schema would count 3.0)."""
    try:
        found = _violation(data, _schema(schema_name), ())
    except RecursionError:
        return "nested too deeply"
    if found is None:
        return None
    where, what = found
    return f"{'/'.join(str(p) for p in where) or 'top level'}: {short(what, 160)}"


_SCHEMA_TYPES = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool}


def _violation(value, schema: dict, where: tuple) -> tuple[tuple, str] | None:
    import re

    expected = schema.get("type")
    if expected is not None:
        kind = _SCHEMA_TYPES[expected]
        if not isinstance(value, kind) or (isinstance(value, bool) and expected != "boolean"):
            return where, f"{clip(value)!r} is not of type {expected!r}"
    if "const" in schema and (value != schema["const"] or type(value) is not type(schema["const"])):
        return where, f"{schema['const']!r} was expected"
    if "enum" in schema and value not in schema["enum"]:
        return where, f"{clip(value)!r} is not one of {schema['enum']!r}"
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        return where, f"{clip(value)!r} does not match {schema['pattern']!r}"
    if isinstance(value, (int, float)) and "minimum" in schema and value < schema["minimum"]:
        return where, f"{value!r} is less than the minimum of {schema['minimum']}"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            return where, f"{clip(value)!r} should be non-empty"
        for index, item in enumerate(value):
            found = _violation(item, schema.get("items", {}), (*where, index))
            if found:
                return found
    if isinstance(value, dict):
        return _object_violation(value, schema, where)
    return None


def _object_violation(value: dict, schema: dict, where: tuple) -> tuple[tuple, str] | None:
    for name in schema.get("required", ()):
        if name not in value:
            return where, f"{name!r} is a required property"
    properties, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
    for name, item in value.items():
        found = _violation(name, schema["propertyNames"], where) if "propertyNames" in schema else None
        if found:
            return found
        if name in properties:
            found = _violation(item, properties[name], (*where, name))
        elif extra is False:
            return where, f"Additional properties are not allowed ({clip(name)!r} was unexpected)"
        elif isinstance(extra, dict):
            found = _violation(item, extra, (*where, name))
        if found:
            return found
    return None


@lru_cache(maxsize=None)
def _schema(schema_name: str) -> dict:
    from importlib import resources

    return json.loads(resources.files("knowledge_build.schemas").joinpath(schema_name).read_text(encoding="utf-8"))
