"""Hostile inputs through every command, as a user (or an attacker) gives them: the totals of what went wrong.

Every case runs `knowledge-build …` as a child process (the real CLI, the real local model) on a small site and
artifact set made here, with broken sites, broken or tampered artifact sets, oversized and malformed queries,
unreachable or misbehaving servers (a chat server that trickles bytes, a closed port), bad settings and
unwritable destinations. Each run is classified:

- traceback: Python's "Traceback (most recent call last)" in its output;
- hang: still running after --timeout seconds (killed);
- unclear: it failed, but no line of its output says `error` (the house rule: one clear line, exit non-zero);
- silent wrong: it exited 0 where the input must be refused, failed where it must work, or its output lacks
  what the case requires (a JSON-RPC parse error for a garbage MCP line, say);
- data loss: something the user had (an artifact set, a site, a store) changed although the command failed.

    python bench/hostile.py [--work DIR] [--timeout 120] [--only PATTERN] [--format json]

Exit 1 when any total is not 0. The figures go to README ("Safe as a public service") when they change.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import REPO, parser

KB = [sys.executable, "-m", "knowledge_build.cli"]
TRACEBACK = "Traceback (most recent call last)"

PAGE = """---
title: {title}
layout: default
---
<h1>{title}</h1>
<div class="rule-box" id="rule-{slug}"><strong>{title}の規則</strong><p>{body}</p></div>
<div class="method-box" id="method-{slug}"><strong>{title}の解き方</strong><p>{body}を順に確かめる。</p></div>
<h2>まとめ</h2><p>{body}について、例を見ながら理解を深める。</p>
"""
PAGES = {
    "kansu.html": ("一次関数", "kansu", "傾きと切片から直線の式を求める"),
    "houteishiki.html": ("連立方程式", "renritsu", "加減法と代入法で二つの式を同時に満たす値を求める"),
    "zukei.html": ("三角形の面積", "menseki", "底辺と高さを掛けて二で割る"),
}


@dataclass
class Case:
    name: str
    args: list[str]
    expect: str = "refuse"  # refuse | ok | either
    env: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None
    protect: list[Path] = field(default_factory=list)  # must be byte-identical after a failed run
    stdout_has: str | None = None  # the output must contain this (else: silent wrong)
    cwd: Path | None = None
    after: Callable[[], str | None] | None = None  # after the run: what the user lost, or None


@dataclass
class Outcome:
    case: str
    verdict: str  # ok | traceback | hang | unclear | silent-wrong | data-loss
    exit: int | None
    seconds: float
    line: str  # the first stderr line that says what happened


# ---------------------------------------------------------------- servers that misbehave

class Trickle:
    """An HTTP server on 127.0.0.1 that sends a 200 header, then one byte every 0.2 s, forever."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n")
            while not self.stop.is_set():
                conn.sendall(b" ")
                time.sleep(0.2)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


class Garbage:
    """An HTTP server on 127.0.0.1 that answers every request with 200 and a body that is not JSON."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.settimeout(5)
                conn.recv(65536)
                body = b"<html>502 Bad Gateway</html>"
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self) -> None:
        self.sock.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- the workspace

def make_site(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "_config.yml").write_text('title: テスト\nbaseurl: "/t"\n', encoding="utf-8")
    for name, (title, slug, body) in PAGES.items():
        (root / name).write_text(PAGE.format(title=title, slug=slug, body=body), encoding="utf-8")
    return root


def tree_digest(path: Path) -> str:
    """A digest of every file's relative name and bytes under path (or of the file); 'absent' if missing."""
    if not path.exists():
        return "absent"
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        digest.update(str(file.relative_to(path) if file != path else file.name).encode())
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def prepare(work: Path, env: dict[str, str]) -> dict[str, Path]:
    site = make_site(work / "site")
    index = work / "index"
    run = subprocess.run([*KB, "build", "--site", str(site), "--output", str(index), "--no-progress"],
                         env=env, capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        sys.exit(f"error: the harness could not build its own site: {run.stderr.strip()[-2000:]}")
    return {"site": site, "index": index}


def copy_index(base: dict[str, Path], work: Path, name: str) -> Path:
    target = work / "cases" / name / "index"
    shutil.copytree(base["index"], target)
    return target


def copy_site(base: dict[str, Path], work: Path, name: str) -> Path:
    target = work / "cases" / name / "site"
    shutil.copytree(base["site"], target)
    return target


# ---------------------------------------------------------------- the cases

def index_variants(base: dict[str, Path], work: Path) -> dict[str, Path]:
    """Broken and tampered artifact sets, one directory each."""
    variants: dict[str, Path] = {"missing": work / "cases" / "nowhere" / "index"}
    a_file = work / "cases" / "a-file"
    a_file.parent.mkdir(parents=True, exist_ok=True)
    a_file.write_text("not a directory\n")
    variants["a-file"] = a_file
    empty = work / "cases" / "empty-index"
    empty.mkdir(parents=True)
    variants["empty"] = empty

    def tampered(name: str, edit) -> None:
        target = copy_index(base, work, f"index-{name}")
        edit(target)
        variants[name] = target

    def manifest(target: Path) -> Path:
        return target / "manifest.json"

    def content_files(target: Path) -> list[Path]:
        return sorted(p for p in target.iterdir() if p.is_file() and p.name != "manifest.json")

    tampered("manifest-not-json", lambda t: manifest(t).write_text("{not json"))
    tampered("manifest-truncated", lambda t: manifest(t).write_bytes(manifest(t).read_bytes()[:40]))
    tampered("manifest-a-list", lambda t: manifest(t).write_text("[]"))
    tampered("manifest-deleted", lambda t: manifest(t).unlink())

    def huge_counts(t: Path) -> None:
        data = json.loads(manifest(t).read_text())
        for key, value in list(data.get("counts", {}).items()):
            data["counts"][key] = 10**12 if isinstance(value, int) else value
        manifest(t).write_text(json.dumps(data))
    tampered("manifest-huge-counts", huge_counts)

    def wrong_dimension(t: Path) -> None:
        data = json.loads(manifest(t).read_text())
        data.get("embedder", {})["dim"] = 7
        manifest(t).write_text(json.dumps(data))
    tampered("manifest-wrong-dimension", wrong_dimension)

    def flip_byte(t: Path) -> None:
        for file in content_files(t):
            data = bytearray(file.read_bytes())
            if data:
                data[len(data) // 2] ^= 0x01
                file.write_bytes(bytes(data))
    tampered("every-file-one-byte-flipped", flip_byte)

    def truncate(t: Path) -> None:
        for file in content_files(t):
            file.write_bytes(file.read_bytes()[: max(1, file.stat().st_size // 2)])
    tampered("every-file-truncated", truncate)

    for name in ("vectors.faiss", "lexical_tf.npy", "knowledge_chunks.jsonl", "rows.npy"):
        tampered(f"{name}-deleted", lambda t, name=name: (t / name).unlink())

    def zero_files(t: Path) -> None:
        for file in content_files(t):
            file.write_bytes(b"")
    tampered("content-files-empty", zero_files)
    return variants


def search_cases(base, work, variants) -> list[Case]:
    cases = []
    for kind, path in variants.items():
        cases.append(Case(f"search/index-{kind}", ["search", "二次方程式", "--index", str(path)]))
        cases.append(Case(f"validate/index-{kind}", ["validate", "--site", str(base["site"]), "--index", str(path)]))
        cases.append(Case(f"report/index-{kind}", ["report", "--site", str(base["site"]), "--index", str(path),
                                                   "--out", str(work / "cases" / f"report-{kind}.html")]))
        cases.append(Case(f"serve-stdio/index-{kind}", ["serve", "--index", str(path)], stdin=""))
        cases.append(Case(f"ask/index-{kind}", ["ask", "二次方程式", "--index", str(path),
                                                "--chat-base-url", f"http://127.0.0.1:{closed_port()}/v1"]))
    index = str(base["index"])
    queries = {
        "empty": "", "spaces": "   \u3000 ", "2001-chars": "あ" * 2001, "90-KB": "数" * 30_000,
        "10000-terms": " ".join(f"w{i}" for i in range(10000)), "control-chars": "二次\x01\x02\x7f方程式",
        "lone-surrogate-escape": "\\ud800", "only-punctuation": "！？。、・「」",
    }
    for name, query in queries.items():
        expect = "either" if name in ("control-chars", "lone-surrogate-escape", "only-punctuation") else "refuse"
        if name == "2001-chars" or name == "90-KB" or name == "10000-terms":
            expect = "refuse"
        cases.append(Case(f"search/query-{name}", ["search", query, "--index", index], expect=expect))
    cases += [
        Case("search/k-0", ["search", "関数", "--index", index, "-k", "0"]),
        Case("search/k-huge", ["search", "関数", "--index", index, "-k", str(10**12)]),
        Case("search/min-similarity-2", ["search", "関数", "--index", index, "--min-similarity", "2"]),
        Case("search/queries-missing", ["search", "--index", index, "--queries", str(work / "nope.jsonl")]),
    ]
    bad_lines = {
        "not-json": "{broken\n", "a-list": "[1, 2]\n", "no-query": '{"qid": "a"}\n',
        "query-a-number": '{"qid": "a", "query": 5}\n', "binary": "\x00\x01\x02\xff\n",
        "huge-query": json.dumps({"qid": "a", "query": "あ" * 100000}) + "\n",
    }
    for name, text in bad_lines.items():
        path = work / "cases" / f"queries-{name}.jsonl"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        cases.append(Case(f"search/queries-{name}", ["search", "--index", index, "--queries", str(path)]))
    cases.append(Case("search/good", ["search", "連立方程式の解き方", "--index", index, "--format", "json"],
                      expect="ok", stdout_has="renritsu"))
    return cases


def site_variants(base, work) -> dict[str, Path]:
    variants: dict[str, Path] = {"missing": work / "cases" / "no-site"}
    a_file = work / "cases" / "site-a-file"
    a_file.write_text("x")
    variants["a-file"] = a_file
    empty = work / "cases" / "empty-site"
    empty.mkdir()
    variants["empty"] = empty

    def edited(name: str, edit) -> None:
        target = copy_site(base, work, f"site-{name}")
        edit(target)
        variants[name] = target

    edited("config-broken-yaml", lambda s: (s / "_config.yml").write_text("baseurl: [unclosed\n"))
    edited("config-a-list", lambda s: (s / "_config.yml").write_text("- a\n- b\n"))
    edited("config-baseurl-a-number", lambda s: (s / "_config.yml").write_text("baseurl: 5\n"))
    edited("page-invalid-utf8", lambda s: (s / "bad.html").write_bytes(b"---\ntitle: x\n---\n<p>\xff\xfe</p>"))
    edited("page-binary", lambda s: (s / "img.html").write_bytes(bytes(range(256)) * 64))
    edited("page-nul-bytes", lambda s: (s / "nul.html").write_bytes(b"---\ntitle: a\n---\n<p>a\x00b</p>"))
    edited("page-deep-nesting", lambda s: (s / "deep.html").write_text(
        "---\ntitle: 深い\n---\n" + "<div>" * 200000 + "本文" + "</div>" * 200000))
    edited("page-5MB-one-line", lambda s: (s / "big.html").write_text(
        "---\ntitle: 大きい\n---\n<div class=\"rule-box\" id=\"rule-big\"><p>" + "長い文。" * 1_300_000 + "</p></div>"))
    edited("front-matter-broken", lambda s: (s / "fm.html").write_text("---\ntitle: [x\n---\n<p>a</p>"))
    edited("front-matter-a-list", lambda s: (s / "fm.html").write_text("---\n- a\n---\n<p>a</p>"))
    edited("permalink-other-host", lambda s: (s / "perm.html").write_text(
        "---\ntitle: 外\npermalink: //evil.example/x/\n---\n<div class=\"tip-box\" id=\"tip-x\"><p>コツ</p></div>"))
    edited("duplicate-ids", lambda s: (s / "dup.html").write_text(
        "---\ntitle: 重複\n---\n<div class=\"rule-box\" id=\"rule-d\">一</div><div class=\"rule-box\" id=\"rule-d\">二</div>"))

    def symlink_loop(s: Path) -> None:
        (s / "loop").mkdir()
        os.symlink("..", s / "loop" / "up")
    edited("symlink-loop", symlink_loop)
    return variants


def site_cases(base, work) -> list[Case]:
    cases = []
    expectations = {  # what each broken site must give `build`; check/report may warn instead
        "missing": "refuse", "a-file": "refuse", "empty": "either", "config-broken-yaml": "refuse",
        "config-a-list": "refuse", "config-baseurl-a-number": "either", "page-invalid-utf8": "refuse",
        "page-binary": "either", "page-nul-bytes": "either", "page-deep-nesting": "either",
        "page-5MB-one-line": "either", "front-matter-broken": "refuse", "front-matter-a-list": "either",
        "permalink-other-host": "either", "duplicate-ids": "refuse", "symlink-loop": "either",
    }
    for kind, site in site_variants(base, work).items():
        existing = copy_index(base, work, f"out-{kind}")  # a good set the failed build must leave as it was
        build = Case(f"build/site-{kind}", ["build", "--site", str(site), "--output", str(existing),
                                             "--no-progress"], expect=expectations[kind])
        if expectations[kind] == "refuse":
            build.protect = [existing]
        cases.append(build)
        soft = "refuse" if kind in ("missing", "a-file", "config-broken-yaml", "config-a-list") else "either"
        cases.append(Case(f"check/site-{kind}", ["check", "--site", str(site)], expect="either" if soft == "either"
                          else "refuse"))
        cases.append(Case(f"suggest-ids-write/site-{kind}", ["suggest-ids", "--site", str(site), "--write"],
                          expect="either" if soft == "either" else "refuse"))
        cases.append(Case(f"install-search/site-{kind}", ["install-search", "--site", str(site)],
                          expect="either" if soft == "either" else "refuse"))
    return cases


def output_cases(base, work) -> list[Case]:
    index, site = str(base["index"]), str(base["site"])
    a_file = work / "cases" / "a-plain-file"
    a_file.write_text("keep me\n")
    return [
        Case("build/output-in-proc", ["build", "--site", site, "--output", "/proc/knowledge/v2", "--no-progress"]),
        Case("build/output-is-a-file", ["build", "--site", site, "--output", str(a_file), "--no-progress"],
             protect=[a_file]),
        Case("report/out-in-proc", ["report", "--site", site, "--index", index, "--out", "/proc/x/r.html"]),
        Case("report/out-is-a-directory", ["report", "--site", site, "--index", index, "--out", str(work)]),
        Case("eval/output-dir-is-a-file", ["eval", "--index", index, "--dataset", str(write_dataset(work)),
                                           "--output-dir", str(a_file)], protect=[a_file]),
        Case("convert-squad/output-in-proc", ["convert-squad", str(write_squad(work)), "--output", "/proc/x"]),
        Case("convert-squad/output-is-a-file", ["convert-squad", str(write_squad(work)), "--output", str(a_file)],
             protect=[a_file]),
        Case("db-start/data-dir-in-proc", ["db", "start", "--data-dir", "/proc/x"]),
        Case("db-start/data-dir-is-a-file", ["db", "start", "--data-dir", str(a_file)], protect=[a_file]),
        Case("serve/notes-in-proc", ["serve", "--index", index, "--notes", "/proc/x/notes.sqlite"], stdin=""),
    ]


def write_dataset(work: Path) -> Path:
    path = work / "cases" / "dataset.jsonl"
    path.write_text(json.dumps({"qid": "q1", "query": "連立方程式", "relevant": ["houteishiki#rule-renritsu"]},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_squad(work: Path) -> Path:
    path = work / "cases" / "squad.json"
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "本文。", "qas": [
        {"id": "1", "question": "何？", "answers": [{"text": "本文", "answer_start": 0}]}]}]}]},
        ensure_ascii=False), encoding="utf-8")
    return path


def data_file_cases(base, work) -> list[Case]:
    index = str(base["index"])
    cases = []
    texts = {"missing": None, "empty": "", "not-json": "{x\n", "a-list": "[1]\n", "no-relevant": '{"qid":"a","query":"b"}\n',
             "binary": "\x00\xff\x01"}
    for name, text in texts.items():
        path = work / "cases" / f"eval-{name}.jsonl"
        if text is not None:
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
        cases.append(Case(f"eval/dataset-{name}", ["eval", "--index", index, "--dataset", str(path),
                                                   "--output-dir", str(work / "cases" / f"eval-out-{name}")]))
        squad = work / "cases" / f"squad-{name}.json"
        if text is not None:
            squad.write_text(text, encoding="utf-8", errors="surrogateescape")
        cases.append(Case(f"convert-squad/input-{name}", ["convert-squad", str(squad), "--output",
                                                          str(work / "cases" / f"squad-out-{name}")]))
    baseline = work / "cases" / "baseline-broken.json"
    baseline.write_text("{oops")
    cases.append(Case("eval/baseline-not-json", ["eval", "--index", index, "--dataset", str(write_dataset(work)),
                                                 "--baseline", str(baseline), "--fail-on-regression",
                                                 "--output-dir", str(work / "cases" / "eval-out-b")],
                      protect=[baseline]))
    return cases


def network_cases(base, work, trickle: Trickle, garbage: Garbage) -> list[Case]:
    index, site = str(base["index"]), str(base["site"])
    store = work / "cases" / "sources.sqlite"
    down = f"http://127.0.0.1:{closed_port()}/v1"
    chat = {"KB_CHAT_TIMEOUT": "3", "KB_CHAT_MODEL": "m", "OPENAI_API_KEY": "k"}
    cases = [
        Case("ask/chat-server-down", ["ask", "連立方程式", "--index", index, "--chat-base-url", down], env=chat),
        Case("ask/chat-server-trickles", ["ask", "連立方程式", "--index", index, "--chat-base-url", trickle.url],
             env=chat),
        Case("ask/chat-server-not-json", ["ask", "連立方程式", "--index", index, "--chat-base-url", garbage.url],
             env=chat),
        Case("learns-generate/chat-server-trickles", ["learns", "generate", "--site", site,
                                                      "--base-url", trickle.url, "--timeout", "3"], env=chat, expect="either"),
        Case("learns-generate/chat-server-down", ["learns", "generate", "--site", site, "--base-url", down, "--timeout", "3"],
             env=chat, expect="either"),
        Case("build/openai-compatible-trickles", ["build", "--site", site, "--output", str(work / "cases" / "oc"),
                                                  "--embedder", "openai-compatible", "--base-url", trickle.url,
                                                  "--embedding-timeout", "3", "--cache-dir",
                                                  str(work / "cases" / "oc-cache"), "--no-progress"],
             env={"OPENAI_API_KEY": "k"}),
        Case("build/openai-compatible-not-json", ["build", "--site", site, "--output", str(work / "cases" / "oc2"),
                                                  "--embedder", "openai-compatible", "--base-url", garbage.url,
                                                  "--embedding-timeout", "3", "--cache-dir",
                                                  str(work / "cases" / "oc2-cache"), "--no-progress"],
             env={"OPENAI_API_KEY": "k"}),
        Case("publish/database-down", ["publish", "--index", index, "--database-url",
                                       f"postgresql://u@127.0.0.1:{closed_port()}/db"]),
        Case("publish/database-url-not-a-url", ["publish", "--index", index, "--database-url", "not a url"]),
        Case("search/database-down-falls-back", ["search", "連立方程式", "--index", index, "--database-url",
                                                  f"postgresql://u@127.0.0.1:{closed_port()}/db", "--format", "json"],
             expect="ok", stdout_has="renritsu"),
    ]
    urls = {
        "100KB": "https://example.com/" + "a" * 100_000, "ftp": "ftp://example.com/x", "file": "file:///etc/passwd",
        "loopback": "http://127.0.0.1/", "v6-loopback": "http://[::1]/", "v4-compatible": "http://[::127.0.0.1]/",
        "v4-mapped": "http://[::ffff:127.0.0.1]/", "zero": "http://0.0.0.0/", "private": "http://10.0.0.1/",
        "link-local-metadata": "http://169.254.169.254/latest/meta-data/", "decimal-ip": "http://2130706433/",
        "not-a-url": "not a url", "empty": "", "localhost": "http://localhost./",
    }
    for name, url in urls.items():
        cases.append(Case(f"sources-add/{name}", ["sources", "add", url, "--store", str(store)]))
    return cases


PAGES_OTHER = {
    "hiritsu.html": ("比と割合", "hiritsu", "もとにする量と比べる量から割合を求める"),
    "kakuritsu.html": ("確率", "kakuritsu", "起こりうる場合の数で割って確率を求める"),
}


def database_cases(base, work, env) -> tuple[list[Case], Callable[[], None]]:
    """Publish the harness's set into a local database (`db start`), then try to replace it with another
    site's set and to search with oversized queries; the first site must still answer afterwards."""
    data_dir = work / "db"
    started = subprocess.run([*KB, "db", "start", "--data-dir", str(data_dir)], env=env, capture_output=True,
                             text=True, timeout=300)
    stop = lambda: subprocess.run([*KB, "db", "stop", "--data-dir", str(data_dir)], env=env,  # noqa: E731
                                  capture_output=True, timeout=120)
    if started.returncode != 0:
        print(f"database cases not run: db start failed: {started.stderr.strip()[-500:]}", file=sys.stderr)
        return [], lambda: None
    url = started.stdout.strip().splitlines()[-1]
    subprocess.run([*KB, "publish", "--index", str(base["index"]), "--database-url", url, "--no-progress"],
                   env=env, capture_output=True, text=True, timeout=600, check=True)
    other = work / "other-site"
    other.mkdir()
    (other / "_config.yml").write_text('title: 別のサイト\nbaseurl: "/other"\n', encoding="utf-8")
    for name, (title, slug, body) in PAGES_OTHER.items():
        (other / name).write_text(PAGE.format(title=title, slug=slug, body=body), encoding="utf-8")
    other_index = work / "other-index"
    subprocess.run([*KB, "build", "--site", str(other), "--output", str(other_index), "--no-progress"],
                   env=env, capture_output=True, text=True, timeout=900, check=True)

    def first_site_answers() -> str | None:
        found = subprocess.run([*KB, "search", "連立方程式の解き方", "--database-url", url, "--index",
                                str(base["index"]), "--format", "json"], env=env, capture_output=True, text=True,
                               timeout=300)
        results = json.loads(found.stdout or "{}").get("results", []) if found.returncode == 0 else []
        if not any("renritsu" in r["id"] and r["source"] == "database" for r in results):
            return "the first site's chunks are no longer in the database"
        return None

    cases = [
        Case("database/publish-another-site", ["publish", "--index", str(other_index), "--database-url", url,
                                               "--no-progress"], after=first_site_answers),
        Case("database/publish-another-site-dry-run", ["publish", "--index", str(other_index), "--dry-run",
                                                       "--database-url", url], after=first_site_answers),
        Case("database/search-90-KB", ["search", "数" * 30_000, "--database-url", url, "--index",
                                       str(base["index"])]),
        Case("database/search-good", ["search", "連立方程式の解き方", "--database-url", url, "--index",
                                      str(base["index"]), "--format", "json"], expect="ok",
             stdout_has='"source": "database"'),
        Case("database/publish-same-site-again", ["publish", "--index", str(base["index"]), "--database-url", url,
                                                  "--no-progress"], expect="ok", after=first_site_answers),
    ]
    return cases, stop


def config_cases(base, work) -> list[Case]:
    index = str(base["index"])
    bad_yml = work / "cases" / "cwd-bad-config"
    bad_yml.mkdir()
    (bad_yml / "knowledge.yml").write_text("k: [unclosed\n")
    typed = work / "cases" / "cwd-typed-config"
    typed.mkdir()
    (typed / "knowledge.yml").write_text("k: many\nunknown_setting: 1\n")
    return [
        Case("config/knowledge-yml-broken", ["search", "関数", "--index", index], cwd=bad_yml,
             protect=[bad_yml / "knowledge.yml"]),
        Case("config/knowledge-yml-wrong-type", ["search", "関数", "--index", index], cwd=typed),
        Case("config/env-count-not-a-number", ["ask", "関数", "--index", index], env={"KB_RETRIEVAL_COUNT": "abc"}),
        Case("config/env-chat-timeout-negative", ["ask", "関数", "--index", index], env={"KB_CHAT_TIMEOUT": "-1"}),
        Case("config/env-index-missing", ["search", "関数"], env={"KB_INDEX": str(work / "nowhere")}),
    ]


def mcp_cases(base) -> list[Case]:
    index = str(base["index"])
    return [
        Case("serve-stdio/garbage-line", ["serve", "--index", index], stdin="this is not json\n", expect="either",
             stdout_has="-32700"),
        Case("serve-stdio/binary-line", ["serve", "--index", index], stdin="\x00\x01\x02\n", expect="either",
             stdout_has="-32700"),
        Case("serve-http/port-in-use", ["serve", "--index", index, "--transport", "http", "--port", "{busy}"]),
        Case("serve-http/host-unresolvable", ["serve", "--index", index, "--transport", "http",
                                              "--host", "no-such-host.invalid"]),
    ]


# ---------------------------------------------------------------- running

def run_case(case: Case, env: dict[str, str], timeout: float) -> Outcome:
    before = {p: tree_digest(p) for p in case.protect}
    start = time.monotonic()
    try:
        run = subprocess.run([*KB, *case.args], env={**env, **case.env}, cwd=case.cwd or REPO,
                             input=case.stdin if case.stdin is not None else "", capture_output=True,
                             text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome(case.name, "hang", None, time.monotonic() - start, f"still running after {timeout:g} s")
    seconds = time.monotonic() - start
    text = run.stdout + run.stderr
    # A failure is clear when a line of its output says error (validate and check report on stdout).
    stderr_lines = [line for line in (run.stderr + "\n" + run.stdout).splitlines() if line.strip()]
    said = next((line for line in stderr_lines if "error" in line.lower()), stderr_lines[-1] if stderr_lines else "")
    verdict = "ok"
    if TRACEBACK in text:
        verdict = "traceback"
    elif any(tree_digest(p) != digest for p, digest in before.items()) and run.returncode != 0:
        verdict = "data-loss"
    elif case.after is not None and (lost := case.after()):
        verdict, said = "data-loss", lost
    elif run.returncode != 0 and not any("error" in line.lower() for line in stderr_lines):
        verdict = "unclear"
    elif case.expect == "refuse" and run.returncode == 0:
        verdict = "silent-wrong"
    elif case.expect == "ok" and run.returncode != 0:
        verdict = "silent-wrong"
    elif case.stdout_has is not None and case.stdout_has not in run.stdout:
        verdict = "silent-wrong"
    return Outcome(case.name, verdict, run.returncode, seconds, said[:300])


def main() -> int:
    args_parser = parser(__doc__)
    args_parser.add_argument("--work", type=Path, help="Working directory (default: a temporary one, removed).")
    args_parser.add_argument("--timeout", type=float, default=120.0, help="Seconds before a run counts as a hang.")
    args_parser.add_argument("--only", default="*", help="Run only cases whose name matches one of these globs "
                             "(comma-separated), e.g. 'search/*,serve-stdio/*'.")
    args_parser.add_argument("--format", choices=("text", "json"), default="text")
    options = args_parser.parse_args()
    work = options.work or Path(tempfile.mkdtemp(prefix="kb-hostile-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "KB_CACHE_DIR": str(work / "cache"), "NO_COLOR": "1"}
    env.pop("KB_INDEX", None)
    env.pop("KB_DATABASE_URL", None)
    trickle, garbage = Trickle(), Garbage()
    stop_database = lambda: None  # noqa: E731
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        base = prepare(work, env)
        variants = index_variants(base, work)
        cases = (search_cases(base, work, variants) + site_cases(base, work) + output_cases(base, work)
                 + data_file_cases(base, work) + network_cases(base, work, trickle, garbage)
                 + config_cases(base, work) + mcp_cases(base))
        if any(glob == "*" or glob.startswith("database") for glob in options.only.split(",")):
            database, stop_database = database_cases(base, work, env)
            cases += database
        for case in cases:
            case.args = [a.replace("{busy}", str(busy.getsockname()[1])) for a in case.args]
        cases = [c for c in cases if any(fnmatch.fnmatch(c.name, glob) for glob in options.only.split(","))]
        outcomes = []
        for number, case in enumerate(cases, 1):
            outcome = run_case(case, env, options.timeout)
            outcomes.append(outcome)
            print(f"[{number}/{len(cases)}] {outcome.verdict:12} {case.name} (exit {outcome.exit}, "
                  f"{outcome.seconds:.1f} s) {outcome.line}", file=sys.stderr, flush=True)
    finally:
        stop_database()
        trickle.close()
        garbage.close()
        busy.close()
        if options.work is None:
            shutil.rmtree(work, ignore_errors=True)
    totals = {verdict: sum(o.verdict == verdict for o in outcomes)
              for verdict in ("ok", "traceback", "hang", "unclear", "silent-wrong", "data-loss")}
    if options.format == "json":
        print(json.dumps({"runs": len(outcomes), "totals": totals,
                          "problems": [o.__dict__ for o in outcomes if o.verdict != "ok"]}, ensure_ascii=False))
    else:
        print(f"{len(outcomes)} runs: " + ", ".join(f"{v} {n}" for v, n in totals.items()))
        for o in outcomes:
            if o.verdict != "ok":
                print(f"  {o.verdict}: {o.case} (exit {o.exit}): {o.line}")
    return 0 if totals["ok"] == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
