"""How the artifact set scales: a synthetic site of N chunks, random vectors, whole processes.

    python bench/bench_scale.py ../shared/corpus/school_asset [--sizes 1000 10000 [100000]]

For each size, generates into a temporary directory a site made of the reference corpus's pages
copied as often as needed (copy r renames the file, so every chunk id is new, and the page title,
which the content hash and the lexical text include, so every chunk is unique too; learns.yml gets
an entry for every copy). The corpus is only read, never copied into the project.

Vectors come from a random embedder (seeded by the text's hash, dimension 384, recorded in the
manifest as `bench-random`, never as the local model), so the model's time is left out; the loader
is given the same embedder for its queries. Measured, each in a new process:
build (cold caches), no-change rebuild (warm caches), peak RSS of the build, artifact size,
loader cold open (process start to the first answer, median of --opens), loader RSS after that first
answer, and the p50 of hybrid and dense queries (the dev queries, 3 rounds). Prints a Markdown table
for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
DIM = 384
FALLBACK_QUERIES = ["たすきがけ", "判別式", "移項", "解の公式", "平方完成", "三平方の定理", "一次関数の傾き",
                    "円周角", "確率の求め方", "連立方程式の代入法", "因数分解の公式", "二次関数の最大値",
                    "比例と反比例の違い", "相似の証明", "標準偏差とは", "ベクトルの内積"]


class RandomEmbedder:
    """Unit vectors drawn from a generator seeded by the text's hash: the same text always gets the
    same vector (so caches and reopened sets agree), and no model runs."""

    provider = "bench-random"
    model = "blake2b-seeded-normal/1"
    dim = DIM
    query_prefix = "query: "
    passage_prefix = "passage: "

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def _vector(self, text: str):
        import numpy as np

        seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
        vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return vector / np.linalg.norm(vector)

    def embed_documents(self, texts):
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vector(self.passage_prefix + t) for t in texts])

    def embed_query(self, text: str):
        return self._vector(self.query_prefix + text)


# ---------------------------------------------------------------- synthetic site

def generate_site(corpus: Path, target: Path, chunks_wanted: int) -> None:
    """Copies of the corpus's material pages until about `chunks_wanted` chunks (whole pages)."""
    import yaml

    import knowledge_build as kb

    extraction = kb.extract(kb.load_config(site=corpus, cache_dir=target.parent / "corpus-cache", env={}))
    per_page: dict[str, int] = {}
    for chunk in extraction.chunks:
        per_page[chunk.source_path] = per_page.get(chunk.source_path, 0) + 1
    pages = sorted(per_page)
    pages_set = set(pages)
    shutil.copytree(corpus, target, ignore=lambda d, names: [
        n for n in names if n in ("_site", ".jekyll-cache", ".git")
        or (Path(d) / n).relative_to(corpus).as_posix() in pages_set])
    learns_file = target / "_data" / "learns.yml"
    learns = (yaml.safe_load(learns_file.read_text(encoding="utf-8")) or {}) if learns_file.exists() else {}
    copies, total, replica = dict(learns), 0, 0
    while total < chunks_wanted:
        for rel in pages:
            if total >= chunks_wanted:
                break
            source = corpus / rel
            stem = source.stem if replica == 0 else f"{source.stem}_r{replica:04d}"
            text = source.read_text(encoding="utf-8")
            if replica:
                text = _retitle(text, f" 第{replica}版")
                if source.stem in learns:
                    copies[stem] = json.loads(json.dumps(learns[source.stem]))  # no YAML aliases
            out = target / Path(rel).parent / f"{stem}.html"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
            total += per_page[rel]
        replica += 1
    if learns:
        learns_file.write_text(yaml.safe_dump(copies, allow_unicode=True, sort_keys=False), encoding="utf-8")


def _retitle(text: str, suffix: str) -> str:
    """The front matter's `title:` with `suffix` appended (inside the quotes if quoted)."""
    match = re.search(r"^title:[ \t]*(.*?)[ \t]*$", text, flags=re.M)
    if not match or match.start() > text.find("\n---", 3):
        raise SystemExit("a corpus page has no front-matter title; the copies would not be unique")
    value = match.group(1)
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        value = value[:-1] + suffix + value[-1]
    else:
        value = value + suffix
    return text[:match.start(1)] + value + text[match.end(1):]


# ---------------------------------------------------------------- child processes

def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB."""
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_build(site: str, output: str, cache: str) -> None:
    import knowledge_build as kb

    config = kb.load_config(site=Path(site), output=Path(output), cache_dir=Path(cache), env={})
    start = time.perf_counter()
    result = kb.build(config, embedder=RandomEmbedder())
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "chunks": len(result.chunks), "embedded": result.embed_stats.embedded,
                      "peak_mb": _rss_mb()[1]}))


def child_open(index_dir: str, queries_json: str, rounds: str) -> None:
    import knowledge_build as kb

    queries = json.loads(queries_json)
    index = kb.KnowledgeIndex.open(index_dir, embedder=RandomEmbedder())
    index.search(queries[0])
    first_answer = time.time()
    rss, peak = _rss_mb()
    timings = {"hybrid": [], "dense": []}
    for _ in range(int(rounds)):
        for mode, runs in timings.items():
            for query in queries:
                start = time.perf_counter()
                index.search(query, k=5, mode=mode)
                runs.append((time.perf_counter() - start) * 1000)
    print(json.dumps({"first_answer": first_answer, "rss_mb": rss, "peak_mb": peak,
                      **{f"{mode}_p50_ms": statistics.median(runs) if runs else None
                         for mode, runs in timings.items()}}))


# ---------------------------------------------------------------- parent

def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, str(HERE), *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"bench child {args[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _size_mb(directory: Path) -> tuple[float, str]:
    files = [p for p in directory.rglob("*") if p.is_file()]
    largest = max(files, key=lambda p: p.stat().st_size)
    return sum(p.stat().st_size for p in files) / 1e6, f"{largest.name} {largest.stat().st_size / 1e6:.0f} MB"


def measure(corpus: Path, size: int, work: Path, queries: list[str], opens: int, rounds: int) -> dict:
    site, output, cache = work / "site", work / "out", work / "cache"
    generate_site(corpus, site, size)
    first = _child("_build", str(site), str(output), str(cache))
    rebuild = _child("_build", str(site), str(output), str(cache))
    total_mb, largest = _size_mb(output)
    colds, answers = [], []
    for i in range(opens):
        started = time.time()
        answer = _child("_open", str(output), json.dumps(queries), str(rounds if i == 0 else 0))
        colds.append(answer["first_answer"] - started)
        answers.append(answer)
    return {"chunks": first["chunks"], "build_s": first["seconds"], "build_embedded": first["embedded"], "rebuild_s": rebuild["seconds"],
            "rebuild_embedded": rebuild["embedded"], "build_peak_mb": max(first["peak_mb"], rebuild["peak_mb"]),
            "open_s": statistics.median(colds), "loader_rss_mb": statistics.median(a["rss_mb"] for a in answers),
            "hybrid_ms": answers[0]["hybrid_p50_ms"], "dense_ms": answers[0]["dense_p50_ms"],
            "artifacts_mb": total_mb, "largest": largest}


def _queries(path: Path) -> list[str]:
    if not path.is_file():
        return FALLBACK_QUERIES
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["query"] for line in lines if line.strip()] or FALLBACK_QUERIES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path, help="the reference corpus (a Jekyll site), only read")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="chunk counts (default 1000 10000)")
    shared = Path(os.environ.get("KB_SHARED_DIR", HERE.parent.parent.parent / "shared"))
    parser.add_argument("--queries", type=Path, default=shared / "eval" / "dev_queries.jsonl")
    parser.add_argument("--opens", type=int, default=3, help="cold opens per size, the median is shown (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the queries for the p50 (default 3)")
    args = parser.parse_args()
    queries = _queries(args.queries)
    print("| chunks | build (model excluded) | no-change rebuild | build peak RSS | loader cold open "
          "| loader RSS | hybrid query p50 | dense p50 | artifacts |", flush=True)
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    for size in args.sizes:
        work = Path(tempfile.mkdtemp(prefix=f"kb-bench-scale-{size}-"))
        try:
            r = measure(args.corpus, size, work, queries, args.opens, args.rounds)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"| {r['chunks']:,} | {r['build_s']:.1f} s ({r['build_embedded']} unique) | {r['rebuild_s']:.1f} s ({r['rebuild_embedded']} embedded) "
              f"| {r['build_peak_mb']:.0f} MB | {r['open_s']:.2f} s | {r['loader_rss_mb']:.0f} MB "
              f"| {r['hybrid_ms']:.1f} ms | {r['dense_ms']:.1f} ms | {r['artifacts_mb']:.0f} MB ({r['largest']}) |",
              flush=True)
    print(f"\n{os.cpu_count()} cores; load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if len(sys.argv) > 1 and sys.argv[1] == "_build":
        child_build(*sys.argv[2:5])
    elif len(sys.argv) > 1 and sys.argv[1] == "_open":
        child_open(*sys.argv[2:5])
    else:
        main()
