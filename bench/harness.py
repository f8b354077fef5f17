"""What the bench scripts share: where things are, timing, statistics, child processes, output, set-up.

Speed scripts sit in bench/ and `import harness` directly (Python puts a script's own folder on
sys.path). Scripts in bench/retrieval/ and bench/data/ put bench/ there first, in one line:

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/: the shared harness

Nothing here imports knowledge_build at import time (a fresh process times its own imports), and
nothing here reaches a private name of the library.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Self

# ---------------------------------------------------------------- where things are

REPO = Path(__file__).resolve().parent.parent
# The shared directory beside the repository (`make test` passes it as KB_SHARED_DIR).
SHARED = Path(os.environ.get("KB_SHARED_DIR") or REPO.parent / "shared")
CORPUS = SHARED / "corpus" / "school_asset"  # the reference corpus (a Jekyll site), only ever read
JSQUAD = SHARED / "corpus" / "jsquad" / "valid-v1.3.json"
DEV_QUERIES = SHARED / "eval" / "dev_queries.jsonl"
EVAL_DATA = REPO / "data" / "eval"  # the project's own labelled queries
SAMPLE_SITE = REPO / "site"
DIM = 384  # the local model's dimension


def parser(doc: str | None) -> argparse.ArgumentParser:
    """An argument parser whose --help prints the script's docstring as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


# ---------------------------------------------------------------- timing

class Timer:
    """`with Timer() as t: ...`, then `t.seconds` (`t.ms`); read inside the block: the time so far."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.end: float | None = None

    def __enter__(self) -> Self:
        self.start, self.end = time.perf_counter(), None
        return self

    def __exit__(self, *exc) -> None:
        self.end = time.perf_counter()

    @property
    def seconds(self) -> float:
        return (self.end if self.end is not None else time.perf_counter()) - self.start

    @property
    def ms(self) -> float:
        return self.seconds * 1000


def timed(func: Callable, *args, **kwargs) -> tuple[float, object]:
    """(wall-clock seconds of one call, what it returned)."""
    start = time.perf_counter()
    result = func(*args, **kwargs)
    return time.perf_counter() - start, result


def latencies_ms(func: Callable, items: Iterable, rounds: int = 1) -> list[float]:
    """Milliseconds of `func(item)` for every item, `rounds` times over."""
    items = list(items)
    return interleaved_ms({"": func}, items, rounds)[""]


def interleaved_ms(funcs: Mapping[str, Callable], items: Iterable, rounds: int = 1) -> dict[str, list[float]]:
    """Milliseconds of each `funcs[name](item)`, the calls interleaved item by item (a burst of load
    from other processes hits every one alike), `rounds` times over."""
    items = list(items)
    found: dict[str, list[float]] = {name: [] for name in funcs}
    for _ in range(rounds):
        for item in items:
            for name, func in funcs.items():
                start = time.perf_counter()
                func(item)
                found[name].append((time.perf_counter() - start) * 1000)
    return found


# ---------------------------------------------------------------- statistics

def median(values: Iterable[float]) -> float:
    return statistics.median(values)


def percentile(values: Iterable[float], q: int, method: str = "exclusive") -> float:
    """The q-th percentile (1..99) as `statistics.quantiles` cuts it; 50 is the median. "exclusive"
    (statistics' default) is what the latency lines print; "inclusive" equals numpy's default."""
    values = list(values)
    if q == 50:
        return statistics.median(values)
    return statistics.quantiles(values, n=100, method=method)[q - 1]


def p95(values: Iterable[float]) -> float:
    return percentile(values, 95)


def p50_p95(ms: list[float]) -> str:
    """"p50 12.3 ms  p95 45.6 ms": how a latency figure is printed."""
    return f"p50 {median(ms):.1f} ms  p95 {p95(ms):.1f} ms"


# ---------------------------------------------------------------- child processes

@dataclass
class ProcessRun:
    seconds: float  # wall clock, start to exit
    cpu_seconds: float  # user + system of the child (and of its own children)
    stdout: str

    def json(self):
        """What the child printed as JSON: its whole stdout, else its last line ({} for no output)."""
        text = self.stdout.strip()
        if not text:
            return {}
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return json.loads(text.splitlines()[-1])


def python_command(*args: str) -> list[str]:
    """This interpreter (the venv's) with `args`: a script, `-c CODE` or `-m MODULE`."""
    return [sys.executable, *args]


def cli_command() -> list[str]:
    """The `knowledge-build` command beside this interpreter, else the one on PATH."""
    script = Path(sys.executable).parent / "knowledge-build"
    return [str(script)] if script.exists() else [shutil.which("knowledge-build") or "knowledge-build"]


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_process(command: list[str], *, env: Mapping[str, str] | None = None, capture_stderr: bool = True,
                label: str | None = None, every: float | None = None,
                on_wait: Callable[[subprocess.Popen, float], None] | None = None) -> ProcessRun:
    """Run `command` to its end, timed (wall and CPU), its stdout kept. Exits the bench with the
    child's error when it fails. `capture_stderr=False` lets the child's stderr (progress) through;
    `on_wait(process, seconds so far)` is called every `every` seconds while it runs."""
    before = children_cpu_seconds()
    start = time.perf_counter()
    process = subprocess.Popen(command, env=None if env is None else dict(env), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE if capture_stderr else None)
    while True:
        try:
            out, err = process.communicate(timeout=every)
            break
        except subprocess.TimeoutExpired:
            if on_wait is not None:
                on_wait(process, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        name = label or " ".join(command)
        sys.exit(f"{name} failed (exit {process.returncode}):\n{err}" if capture_stderr
                 else f"{name} failed (exit {process.returncode}); its error is above")
    return ProcessRun(seconds, children_cpu_seconds() - before, out)


# ---------------------------------------------------------------- output

def report(label: str, value: str, width: int = 44) -> None:
    """One figure: the label padded to `width`, then the value."""
    print(f"{label:<{width}} {value}", flush=True)


def load_average() -> str:
    """"1.02 0.98 0.75": the 1, 5 and 15 minute load averages."""
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def machine() -> str:
    """"load average 1.0 on 2 cores": a bench's first line, so its figures can be judged."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


# ---------------------------------------------------------------- set-up

@contextmanager
def workdir(prefix: str = "kb-bench-", dir: Path | None = None, keep: bool = False) -> Iterator[Path]:
    """A fresh temporary directory, removed afterwards unless `keep`."""
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
    try:
        yield work
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def copy_site(source: Path, target: Path) -> Path:
    """A copy of a site to write into (the source is only read), without its Jekyll output and cache."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("_site", ".jekyll-cache"))
    return target


def edit_one_box(site: Path) -> Path:
    """Change the heading of the first rule box of the site (a fresh text on every call, so a shared
    vector cache cannot already hold it). Returns the page changed."""
    page = next(p for p in sorted(site.rglob("*.html")) if 'id="rule-' in p.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    close = text.index("</strong>", text.index('id="rule-'))
    page.write_text(text[:close] + f"（改{time.time_ns()}）" + text[close:], encoding="utf-8")
    return page


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def query_texts(path: Path) -> list[str]:
    """The "query" of every line of an eval dataset or query file."""
    return [item["query"] for item in read_jsonl(path)]


def jsquad_paragraphs(path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """(title, text) of every JSQuAD paragraph, and all the questions, in file order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))["data"]
    paragraphs, questions = [], []
    for article in data:
        for p in article["paragraphs"]:
            title, _, text = p["context"].partition(" [SEP] ")
            paragraphs.append((title, text))
            questions += [q["question"] for q in p["qas"]]
    return paragraphs, questions


class RandomEmbedder:
    """Seeded random unit vectors of the local model's dimension: for the stores, whose speed does not
    depend on what the vectors say."""

    dim = DIM

    def __init__(self, seed: int = 0):
        import numpy as np

        self.rng = np.random.default_rng(seed)

    def embed_documents(self, texts):
        import numpy as np

        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text):
        import numpy as np

        vector = self.rng.standard_normal(DIM).astype(np.float32)
        return vector / np.linalg.norm(vector)


# ---------------------------------------------------------------- retrieval

def record_query_vectors(*embedders, reuse: bool = False) -> dict:
    """Keep every query vector the first embedder computes (by query text) and route the others'
    embed_query through it. `reuse`: one model call per text (every embedder then ranks with exactly
    the same vector); without it every call still reaches the model, so latency stays real."""
    seen: dict = {}
    original = embedders[0].embed_query

    def embed_query(text: str):
        if not reuse or text not in seen:
            seen[text] = original(text)
        return seen[text]

    for embedder in embedders:
        embedder.embed_query = embed_query
    return seen


def first_relevant_ranks(index, queries, k: int = 10) -> list[int | None]:
    """Per labelled query, the rank (1-based) of its first relevant result in the top k (hybrid
    search, the index's settings), None when none is there."""
    from knowledge_build.evaluation.evaluate import place_id

    found = []
    for query in queries:
        retrieved = [place_id(r, query.relevant) for r in index.search(query.query, k=k)]
        found.append(next((i for i, r in enumerate(retrieved, 1) if r in query.relevant), None))
    return found


def rank_metrics(ranks: list[int | None]) -> dict[str, float]:
    """hit@1, hit@5 and MRR@10 of first_relevant_ranks(k=10), as `knowledge-build eval` scores them."""
    n = len(ranks)
    return {"hit@1": sum(r == 1 for r in ranks if r) / n, "hit@5": sum(1 for r in ranks if r and r <= 5) / n,
            "mrr@10": sum(1 / r for r in ranks if r) / n}
