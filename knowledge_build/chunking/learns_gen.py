"""Generated `learns`: a chat model (OpenAI or compatible) writes 3–5 action-oriented items for
boxes that have none, cached by the box's text in a YAML file for a person to review.

Human-written learns (`_data/learns.yml`, `data-learns`) are never sent or overwritten.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..deadline import openai_http_client
from ..diagnostics import Diagnostic
from ..errors import KnowledgeBuildError
from ..yamlfile import load_file as load_yaml_file

log = logging.getLogger("knowledge_build.learns")
DEFAULT_MODEL = "gpt-4o-mini"
ATTEMPTS = 3
FAILED_IN_A_ROW = 3  # boxes without a usable answer, one after another: the model will not answer JSON
CHECKPOINT = 20  # answers between saves: a crash loses at most this many paid-for answers
PROMPT = (
    "あなたは学習サイトの編集者です。次のページの一部（箱）を読み、読者がここで学べることを3〜5項目、"
    "行動を表す短い日本語で書いてください（例:「〜する方法」「〜のルール」「〜の計算」「〜を説明できる」）。"
    '出力は JSON のみ: {"learns": ["…", "…", "…"]}'
)


def source_hash(title: str, content: str) -> str:
    """What a generated entry was written for: the box's title and text."""
    return hashlib.sha256(f"{title}\n{content}".encode("utf-8")).hexdigest()


class GeneratedLearnsError(KnowledgeBuildError):
    """The generated-learns file has entries of the wrong shape; each is named by file:line."""


class GenerationInterrupted(KnowledgeBuildError):
    """The chat model stopped answering; what it answered before is saved."""


def load_generated(path: Path) -> dict:
    """material -> anchor -> {"source_hash", "learns"}; {} when the file does not exist."""
    path = Path(path)
    if not path.is_file():
        return {}
    data = load_yaml_file(path).data or {}
    _check_shape(path, data)
    return data


def _check_shape(path: Path, data) -> None:
    """Raise GeneratedLearnsError naming every entry that is not material -> anchor -> {source_hash, learns}."""
    problems = list(_shape_problems(data))
    if not problems:
        return
    import yaml  # here: search imports this module (source_hash), and never needs YAML

    root = yaml.compose(path.read_text(encoding="utf-8"))  # only to find the lines of the problems
    found = [Diagnostic(str(path), _line_of(root, keys), 1, "error", "generated-learns", message, fix)
             for keys, message, fix in problems]
    raise GeneratedLearnsError(f"{len(found)} entr{'y' if len(found) == 1 else 'ies'} of {path} cannot be used:\n"
                               + "\n".join(d.format() for d in found))


def _shape_problems(data):
    """(path of keys, message, fix) for every misshapen part."""
    layout = "page name -> anchor -> {source_hash, learns}, as 'learns generate' writes it"
    if not isinstance(data, dict):
        yield (), f"the file must map page names to anchors, found a {type(data).__name__}", f"write it as {layout}"
        return
    for material, anchors in data.items():
        if not isinstance(anchors, dict):
            yield ((material,), f"'{material}' must map anchors to entries, found a {type(anchors).__name__}",
                   f"write it as {layout}")
            continue
        for anchor, entry in anchors.items():
            where = (material, anchor)
            if not isinstance(entry, dict):
                yield (where, f"'{material}#{anchor}' must be a mapping with source_hash and learns, found a "
                       f"{type(entry).__name__}", "give it source_hash and learns, or delete it to generate it again")
            elif not isinstance(entry.get("source_hash"), str):
                yield where, f"'{material}#{anchor}' has no source_hash", "delete the entry to generate it again"
            elif not isinstance(entry.get("learns"), list) or not all(isinstance(i, str) for i in entry["learns"]):
                yield ((*where, "learns"), f"the learns of '{material}#{anchor}' must be a list of strings",
                       "write one item per line as '- …'")


def _line_of(node, keys) -> int:
    """1-based line of the value at `keys` in a composed YAML tree (the deepest one found)."""
    import yaml

    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            break
        node = next((value for name, value in node.value if name.value == str(key)), None)
        if node is None:
            return 1
    return node.start_mark.line + 1 if node is not None else 1


def valid_learns(value) -> list[str] | None:
    items = value.get("learns") if isinstance(value, dict) else None
    if not isinstance(items, list) or not 3 <= len(items) <= 5:
        return None
    items = [str(i).strip() for i in items]
    return items if all(items) else None


@dataclass
class GenerationReport:
    generated: list[str] = field(default_factory=list)
    cached: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    requests: int = 0
    stopped: str | None = None  # why the run stopped early (the answers before it are saved)


def generate(chunks, path: Path, model: str | None = None, base_url: str | None = None,
             only_missing: bool = True, api_key: str | None = None, max_retries: int = 3,
             timeout: float = 60.0) -> GenerationReport:
    """Ask the model for each chunk whose learns are heuristic (or all non-human ones). Answers are
    saved as they come (every CHECKPOINT, and whatever happens at the end)."""
    import openai

    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    if not base_url and not api_key:
        raise KnowledgeBuildError("no model to ask: set OPENAI_API_KEY, or pass --base-url for an OpenAI-compatible "
                                  "server. Without one, chunks keep their heuristic learns.")
    client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url, max_retries=max_retries,
                           timeout=timeout, http_client=openai_http_client(openai))
    stored = load_generated(path)
    report = GenerationReport()
    try:
        _ask_all(client, model or DEFAULT_MODEL, chunks, only_missing, stored, report, path)
    except openai.APIError as exc:
        _write(path, stored)
        saved = len(report.generated)
        raise GenerationInterrupted(_interrupted(exc, str(client.base_url), saved, path, timeout)) from exc
    except BaseException:
        if report.generated:
            _write(path, stored)  # interrupted (Ctrl-C…): keep the answers already paid for
        raise
    _write(path, stored)
    return report


def _ask_all(client, model: str, chunks, only_missing: bool, stored: dict, report: GenerationReport,
             path: Path) -> None:
    in_a_row = 0
    for chunk in chunks:
        if chunk.learns_source in ("yaml", "attribute") or (only_missing and chunk.learns_source == "generated"):
            continue
        entry = stored.get(chunk.material, {}).get(chunk.anchor) or {}
        key = source_hash(chunk.title, chunk.content)
        # --all (only_missing=False) exists to replace earlier answers, so it does not reuse them.
        if only_missing and entry.get("source_hash") == key and valid_learns(entry):
            report.cached += 1
            continue
        learns, problem = _ask(client, model, chunk, report)
        if learns is None:
            report.failed[chunk.id] = problem
            log.warning("no learns for %s: %s", chunk.id, problem)
            in_a_row += 1
            if in_a_row >= FAILED_IN_A_ROW:
                report.stopped = (f"stopped after {in_a_row} boxes in a row got no usable answer (last: {problem}). "
                                  "Fix: use a --model that answers JSON ({\"learns\": [...]}), then run again; "
                                  f"{len(report.generated)} new answer(s) are saved in {path}")
                return
            continue
        in_a_row = 0
        stored.setdefault(chunk.material, {})[chunk.anchor] = {"source_hash": key, "learns": learns}
        report.generated.append(chunk.id)
        if len(report.generated) % CHECKPOINT == 0:
            _write(path, stored)


def _interrupted(exc, url: str, saved: int, path: Path, timeout: float) -> str:
    import openai

    kept = f"{saved} new answer(s) already saved in {path}"
    if isinstance(exc, openai.APITimeoutError):
        return (f"the chat model at {url} did not answer within {timeout:g} s. Fix: check that the server is "
                f"working, or allow longer with --timeout, then run again; {kept}")
    if isinstance(exc, openai.APIConnectionError):
        return (f"cannot reach the chat model at {url} ({exc.__cause__ or exc}). Fix: start the server or check "
                f"--base-url, then run again; {kept}")
    status = getattr(exc, "status_code", None)
    return (f"the chat model at {url} refused the request ({f'HTTP {status}: ' if status else ''}{exc.message}). "
            f"Fix: check OPENAI_API_KEY, --model and --base-url, then run again; {kept}")


def _ask(client, model: str, chunk, report: GenerationReport) -> tuple[list[str] | None, str]:
    problem = ""
    for _ in range(ATTEMPTS):
        report.requests += 1
        try:
            response = client.chat.completions.create(
                model=model, response_format={"type": "json_object"}, temperature=0,
                messages=[{"role": "system", "content": PROMPT},
                          {"role": "user", "content": f"題名: {chunk.title}\n本文: {chunk.content[:2000]}"}])
        except json.JSONDecodeError:  # the HTTP body itself, labelled JSON, is not
            problem = "the server's response body is not JSON"
            continue
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content if choices and choices[0].message else "") or ""
        try:
            learns = valid_learns(json.loads(text))
        except json.JSONDecodeError:
            problem = f"the model's answer is not JSON: {text[:80]!r}"
            continue
        if learns is None:
            problem = f"the model did not give 3-5 items: {text[:80]!r}"
            continue
        return learns, ""
    return None, f"{problem} (after {ATTEMPTS} attempts)"


def _write(path: Path, stored: dict) -> None:
    import yaml

    header = "# Generated by `knowledge-build learns generate`: review, then keep or move entries to _data/learns.yml.\n"
    from ..fsutil import atomic_write

    try:
        atomic_write(path, (header + yaml.safe_dump(stored, allow_unicode=True, sort_keys=True, width=1000)).encode())
    except OSError as exc:
        raise KnowledgeBuildError(f"cannot write {path} ({exc.strerror or exc}). Fix: make its directory writable, "
                                  "or set generated_learns to a writable path") from exc


OLD_DEFAULT = Path("data") / "learns.generated.yml"  # before generated learns lived in the site's _data


def old_generated_learns(target: Path) -> list[Diagnostic]:
    """A warning when generated learns sit at the old default (data/ of the current directory), which
    is no longer read: without it they would silently fall back to heuristic learns."""
    old = Path.cwd() / OLD_DEFAULT
    if not old.is_file():
        return []
    return [Diagnostic(str(old), 1, 1, "warning", "generated-learns-moved",
                       f"generated learns are read from {target} now; this file is not read",
                       f"move it there (mv {OLD_DEFAULT} {target}), or set generated_learns: {OLD_DEFAULT}")]
