"""How the artifact set scales: a synthetic site of N chunks, a structured synthetic embedder, whole processes.

    python bench/bench_scale.py ../shared/corpus/school_asset [--sizes 1000 10000 100000]
        [--schema 1|2] [--baseline-sizes 1000 10000] [--format markdown|json] [--work DIR]
    python bench/bench_scale.py ../shared/corpus/school_asset --recall DIR/kb-bench-scale-100000-*/out-v2

For each size, generates into a temporary directory a site made of the reference corpus's pages
copied as often as needed (copy r renames the file, so every chunk id is new, and the page title,
which the content hash and the lexical text include, so every chunk is unique too; learns.yml gets
an entry for every copy). The corpus is only read, never copied into the project.

Vectors come from `BigramEmbedder` (recorded in the manifest as `bench-bigram-hash`, never as the
local model): character bigrams of the text, hashed, through a fixed seeded sparse random projection
to 384 dimensions. Texts that share wording are neighbours, as with a real model (random vectors
have no neighbours, so an approximate index's recall on them measures nothing a user meets); the
loader is given the same embedder for its queries. The seconds spent inside `embed_documents` are
subtracted from the build column ("model excluded") and shown beside it.

Measured, each in a new process: build (cold caches), no-change rebuild (warm caches), peak RSS of
the build, artifact size (the whole set directory), loader cold open (process start to the first
answer, median of --opens), loader RSS after that first answer, and the p50 of hybrid and dense
queries (the dev queries, --rounds rounds). `--schema` is passed to the build as KB_ARTIFACT_SCHEMA;
sizes in --baseline-sizes are also built as schema 1, in the same run, for comparison. Schema 1 builds
only with a knowledge_build from before issue 39 (item 6); a newer one refuses it with one line. When a set's
vectors.faiss is an approximate (IVF) index, recall@10 against exact search over the same (decoded) vectors is
measured too (`--recall` measures only that, on sets kept with --work). Progress goes to stderr;
the table (or JSON) to stdout, for docs/benchmarks.md.
"""

from __future__ import annotations

import functools
import json
import os
import re
import resource
import shutil
import sys
import time
from pathlib import Path

import harness
from harness import DIM

HERE = Path(__file__).resolve()
HEARTBEAT_S = 30.0  # a progress line this often while a child process runs
FALLBACK_QUERIES = ["たすきがけ", "判別式", "移項", "解の公式", "平方完成", "三平方の定理", "一次関数の傾き",
                    "円周角", "確率の求め方", "連立方程式の代入法", "因数分解の公式", "二次関数の最大値",
                    "比例と反比例の違い", "相似の証明", "標準偏差とは", "ベクトルの内積"]


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


class BigramEmbedder:
    """Feature hashing of character bigrams (the text framed by start/end marks, so a one-character
    query has bigrams too) through a sparse random projection: each bigram adds +-1 to 4 of the 384
    dimensions, chosen and signed by a seeded 64-bit mix; then L2-normalised. Integer sums, so the
    same text always gets the same vector, bit for bit, alone or in any batch."""

    provider = "bench-bigram-hash"
    model = "char-bigram-sparse-projection-4x384/1"
    dim = DIM
    query_prefix = ""  # the hash sees the text only: a prefix would add the same bigrams to every text
    passage_prefix = ""
    batch = 4096  # texts per embed_documents call: bounds the embedder's memory at 100k chunks
    SEEDS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)

    def __init__(self, report_every: int = 0):
        self.seconds = 0.0  # spent inside embed_documents: the build column leaves it out
        self.report_every = report_every

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def _vectors(self, texts):
        import numpy as np

        n, dim = len(texts), self.dim
        framed = "".join(f"\x02{t}\x03" for t in texts)
        codes = np.frombuffer(framed.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        spans = np.fromiter((len(t) + 2 for t in texts), dtype=np.int64, count=n)
        inside = np.ones(len(codes) - 1, dtype=bool)
        inside[np.cumsum(spans)[:-1] - 1] = False  # the pair (end of text i, start of text i+1)
        keys = ((codes[:-1] << np.uint64(21)) | codes[1:])[inside]  # code points are < 2**21
        rows = np.repeat(np.arange(n, dtype=np.int64) * dim, spans - 1)
        out = np.zeros(n * dim)
        for seed in self.SEEDS:
            h = _mix64(keys ^ np.uint64(seed))
            out += np.bincount(rows + (h % np.uint64(dim)).astype(np.int64),
                               weights=1.0 - 2.0 * (h >> np.uint64(63)).astype(np.float64), minlength=n * dim)
        out = out.reshape(n, dim)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.astype(np.float32)

    def embed_documents(self, texts):
        seconds, vectors = harness.timed(self._vectors, list(texts))
        self.seconds += seconds
        return vectors

    def embed_batches(self, texts, kind: str = "passage"):
        """(positions, vectors) per `batch` texts, with a progress line every `report_every` texts; a query
        and a passage are embedded alike (no prefix)."""
        reported = 0
        for start in range(0, len(texts), self.batch):
            end = min(start + self.batch, len(texts))
            yield list(range(start, end)), self.embed_documents(texts[start:end])
            if self.report_every and end - reported >= self.report_every:
                reported = end
                log(f"embedded {end:,}/{len(texts):,} texts ({self.seconds:.1f} s in the embedder)")

    def embed_query(self, text: str):
        return self._vectors([text])[0]


def _mix64(x):
    """splitmix64's finaliser, element-wise (uint64 arithmetic wraps, as intended)."""
    import numpy as np

    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


# ---------------------------------------------------------------- synthetic site

def generate_site(corpus: Path, target: Path, chunks_wanted: int) -> list[str]:
    """Copies of the corpus's material pages until about `chunks_wanted` chunks (whole pages).
    Returns query texts made from the corpus's chunks (title, or the content's first 30 characters)."""
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
    return chunk_queries(extraction.chunks)


def chunk_queries(chunks, count: int = 240) -> list[str]:
    """Queries made from `count` chunks spread over the list: a title or the content's first 30 characters."""
    picked = [chunks[i * len(chunks) // count] for i in range(min(count, len(chunks)))]
    return [c.title if i % 2 == 0 else c.content[:30] for i, c in enumerate(picked)]


def _retitle(text: str, suffix: str) -> str:
    """The front matter's `title:` with `suffix` appended (inside the quotes if quoted)."""
    match = re.search(r"^title:[ \t]*(.*?)[ \t]*$", text, flags=re.MULTILINE)
    if not match or match.start() > text.find("\n---", 3):
        raise SystemExit("a corpus page has no front-matter title; the copies would not be unique")
    value = match.group(1)
    if len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]:
        value = value[:-1] + suffix + value[-1]
    else:
        value = value + suffix
    return text[:match.start(1)] + value + text[match.end(1):]


# ---------------------------------------------------------------- child processes

def _rss_mb(pid: str = "self") -> tuple[float, float]:
    """(current, peak) resident memory in MB (the peak only for this process)."""
    current = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if pid == "self" else 0.0


def child_build(site: str, output: str, cache: str, settings_json: str) -> None:
    """One build; `settings_json` holds the KB_* settings (schema, dense index) for load_config."""
    from dataclasses import fields

    import knowledge_build as kb

    settings = json.loads(settings_json)
    try:
        config = kb.load_config(site=Path(site), output=Path(output), cache_dir=Path(cache), env=settings)
    except kb.KnowledgeBuildError as exc:  # artifact_schema 1 on a knowledge_build that no longer writes it
        sys.exit(str(exc))
    if settings["KB_ARTIFACT_SCHEMA"] != "1" and "artifact_schema" not in {f.name for f in fields(config)}:
        sys.exit("this knowledge_build has no artifact_schema setting (it writes schema 1 only); "
                 "run the bench with --schema 1")
    embedder = BigramEmbedder(report_every=20_000)
    seconds, result = harness.timed(kb.build, config, embedder=embedder)
    manifest = json.loads((Path(output) / "manifest.json").read_text(encoding="utf-8"))
    print(json.dumps({"seconds": seconds, "embed_s": embedder.seconds, "chunks": len(result.chunks),
                      "embedded": result.embed_stats.embedded, "peak_mb": _rss_mb()[1],
                      "schema": manifest.get("schema_version")}))


def child_open(index_dir: str, queries_json: str, rounds: str) -> None:
    import knowledge_build as kb

    queries = json.loads(queries_json)
    index = kb.KnowledgeIndex.open(index_dir, embedder=BigramEmbedder())
    index.search(queries[0])
    first_answer = time.time()
    rss, peak = _rss_mb()
    timings = {"hybrid": [], "dense": []}
    for _ in range(int(rounds)):
        for mode, runs in timings.items():
            runs += harness.latencies_ms(functools.partial(index.search, k=5, mode=mode), queries)
    print(json.dumps({"first_answer": first_answer, "rss_mb": rss, "peak_mb": peak,
                      "probes": _loader_probes(index),
                      **{f"{mode}_p50_ms": harness.median(runs) if runs else None
                         for mode, runs in timings.items()}}))


def _loader_probes(index) -> int | None:
    """Lists probed per query by the IVF index the loader holds (its `_index`), else None."""
    found = getattr(index, "_index", None)
    return int(found.nprobe) if found is not None and hasattr(found, "nprobe") else None


# ---------------------------------------------------------------- parent

def _child(label: str, *args: str) -> dict:
    """Runs this file as a child (stderr passes through); a heartbeat line while it runs."""
    def heartbeat(child, seconds: float) -> None:
        rss = _rss_mb(str(child.pid))[0] if Path(f"/proc/{child.pid}").exists() else 0.0
        log(f"{label}: still running, {seconds:.0f} s, RSS {rss:.0f} MB")

    run = harness.run_process(harness.python_command(str(HERE), *args), capture_stderr=False,
                              label=f"bench child {label}", every=HEARTBEAT_S, on_wait=heartbeat)
    return json.loads(run.stdout.strip().splitlines()[-1])


def _size_mb(directory: Path) -> tuple[float, str]:
    files = [p for p in directory.rglob("*") if p.is_file()]
    largest = max(files, key=lambda p: p.stat().st_size)
    return sum(p.stat().st_size for p in files) / 1e6, f"{largest.name} {largest.stat().st_size / 1e6:.0f} MB"


def measure(site: Path, work: Path, size: int, schema: int, args, queries: list[str]) -> dict:
    output, cache = work / f"out-v{schema}", work / f"cache-v{schema}"  # own caches: the first build is cold
    settings = {"KB_ARTIFACT_SCHEMA": str(schema), **({"KB_DENSE_INDEX": args.dense_index} if args.dense_index else {}),
                **({"KB_EXACT_MAX_ROWS": str(args.exact_max_rows)} if args.exact_max_rows else {}),
                **({"KB_SEARCH_BOX": args.search_box} if args.search_box else {})}
    label = f"{size:,} v{schema}"
    log(f"{label}: build (cold caches)")
    first = _child(f"{label} build", "_build", str(site), str(output), str(cache), json.dumps(settings))
    if first["schema"] != schema:
        sys.exit(f"asked for schema {schema}, the build wrote schema {first['schema']}")
    log(f"{label}: built {first['chunks']:,} chunks in {first['seconds']:.1f} s; no-change rebuild")
    rebuild = _child(f"{label} rebuild", "_build", str(site), str(output), str(cache), json.dumps(settings))
    total_mb, largest = _size_mb(output)
    colds, answers = [], []
    for i in range(args.opens):
        log(f"{label}: loader cold open {i + 1}/{args.opens}")
        started = time.time()
        answer = _child(f"{label} open", "_open", str(output), json.dumps(queries), str(args.rounds if i == 0 else 0))
        colds.append(answer["first_answer"] - started)
        answers.append(answer)
    return {"chunks": first["chunks"], "schema": schema, "build_s": first["seconds"] - first["embed_s"],
            "build_total_s": first["seconds"], "build_embed_s": first["embed_s"], "build_embedded": first["embedded"],
            "rebuild_s": rebuild["seconds"] - rebuild["embed_s"], "rebuild_total_s": rebuild["seconds"],
            "rebuild_embedded": rebuild["embedded"], "build_peak_mb": max(first["peak_mb"], rebuild["peak_mb"]),
            "open_s": harness.median(colds), "loader_rss_mb": harness.median(a["rss_mb"] for a in answers),
            "hybrid_ms": answers[0]["hybrid_p50_ms"], "dense_ms": answers[0]["dense_p50_ms"],
            "artifacts_mb": total_mb, "largest": largest, "loader_probes": answers[0]["probes"],
            "set_dir": str(output)}


def dense_recall(set_dir: Path, queries: list[str], probes: int | None, loader_probes: int | None, k: int = 10) -> dict:
    """The dense index's kind, and for an IVF index its recall@k against exact inner product over the
    same decoded vectors. Tie-aware: a returned row counts when its exact score reaches the k-th exact
    score (minus 1e-6), since copies of one box score almost alike and any of them is a right answer."""
    import faiss
    import numpy as np

    index = faiss.read_index(str(set_dir / "vectors.faiss"))
    info = {"index": type(index).__name__, "rows": int(index.ntotal)}
    if not isinstance(index, faiss.IndexIVF):
        return info
    stored = int(index.nprobe)
    used, source = ((probes, "--probes") if probes else (loader_probes, "the loader's index") if loader_probes
                    else (stored, "the index file"))
    index.nprobe = used
    base = index.reconstruct_n(0, index.ntotal)
    embedder = BigramEmbedder()
    qvecs = np.stack([embedder.embed_query(q) for q in queries]).astype(np.float32)
    log(f"recall@{k}: {len(queries)} queries against {index.ntotal:,} rows, {used} of {index.nlist} lists ({source})")
    _, found = index.search(qvecs, k)
    exact = qvecs @ base.T
    kth = -np.partition(-exact, k - 1, axis=1)[:, k - 1]
    hits = [sum(1 for r in row if r >= 0 and exact[q, r] >= kth[q] - 1e-6) / k for q, row in enumerate(found)]
    return {**info, "lists": int(index.nlist), "probes": used, "probes_source": source,
            "queries": len(queries), "recall_mean": float(np.mean(hits)), "recall_min": float(np.min(hits)),
            "queries_below_0.9": int(sum(h < 0.9 for h in hits))}


def _queries(path: Path) -> list[str]:
    return (harness.query_texts(path) if path.is_file() else []) or FALLBACK_QUERIES


def run_size(size: int, schemas: list[int], args, queries: list[str], show=None) -> list[dict]:
    """Measures one size for each schema; `show(row)` gives a line printed as soon as a row is done."""
    with harness.workdir(f"kb-bench-scale-{size}-", dir=args.work, keep=args.work is not None) as work:
        log(f"{size:,}: generating the synthetic site in {work}")
        chunk_queries = generate_site(args.corpus, work / "site", size)
        rows = []
        for schema in schemas:
            row = measure(work / "site", work, size, schema, args, queries)
            row["dense"] = dense_recall(Path(row["set_dir"]), queries + chunk_queries, args.probes,
                                        row["loader_probes"])
            if args.work is None:
                del row["set_dir"]  # removed on leaving
            rows.append(row)
            if show:
                print(show(row), flush=True)
        return rows


TABLE_HEAD = ("| chunks | schema | build (model excluded) | no-change rebuild | build peak RSS | loader cold open "
              "| loader RSS | hybrid query p50 | dense p50 | artifacts | dense index |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|")


def table_row(r: dict) -> str:
    return (f"| {r['chunks']:,} | v{r['schema']} | {r['build_s']:.1f} s (+{r['build_embed_s']:.2f} s embedder; "
            f"{r['build_embedded']:,} unique) | {r['rebuild_s']:.1f} s ({r['rebuild_embedded']} embedded) "
            f"| {r['build_peak_mb']:.0f} MB | {r['open_s']:.2f} s | {r['loader_rss_mb']:.0f} MB "
            f"| {r['hybrid_ms']:.1f} ms | {r['dense_ms']:.1f} ms | {r['artifacts_mb']:.0f} MB ({r['largest']}) "
            f"| {r['dense']['index']} |")


def table_notes(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        d = r["dense"]
        if "recall_mean" in d:
            lines.append(f"recall@10 of {d['index']} against exact, {r['chunks']:,} chunks v{r['schema']}: "
                         f"mean {d['recall_mean']:.4f}, min {d['recall_min']:.2f} ({d['queries']} queries, "
                         f"{d['probes']} of {d['lists']} lists probed, from {d['probes_source']}; "
                         f"{d['queries_below_0.9']} queries below 0.9)")
    lines.append(f"Embedder: {BigramEmbedder.provider}:{BigramEmbedder.model}. {os.cpu_count()} cores; "
                 f"load average at the end: {harness.load_average()}")
    return "\n\n".join(lines)


def recall_only(args, queries: list[str]) -> None:
    """Recall of existing sets, with the probes their loader uses (one open in a new process)."""
    import knowledge_build as kb

    with harness.workdir("kb-bench-recall-") as cache:
        chunks = kb.extract(kb.load_config(site=args.corpus, cache_dir=cache, env={})).chunks
    found = []
    for set_dir in args.recall:
        loader = None if args.probes else _child(f"{set_dir} open", "_open", str(set_dir), json.dumps(queries), "0")["probes"]
        found.append({"set_dir": str(set_dir), **dense_recall(set_dir, queries + chunk_queries(chunks), args.probes, loader)})
    print(json.dumps(found, indent=2))


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("corpus", type=Path, help="the reference corpus (a Jekyll site), only read")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000],
                        help="chunk counts (default 1000 10000 100000)")
    parser.add_argument("--schema", type=int, choices=(1, 2), default=2, help="artifact schema to build (default 2)")
    parser.add_argument("--baseline-sizes", type=int, nargs="*", default=[],
                        help="sizes also built as schema 1 in the same run, e.g. 1000 10000")
    parser.add_argument("--dense-index", choices=("auto", "exact", "ivf"), help="passed as KB_DENSE_INDEX")
    parser.add_argument("--search-box", choices=("true", "false"), help="passed as KB_SEARCH_BOX (default: the setting's, true)")
    parser.add_argument("--exact-max-rows", type=int, help="passed as KB_EXACT_MAX_ROWS")
    parser.add_argument("--probes", type=int, help="lists probed in the recall check (default: the loader's)")
    parser.add_argument("--queries", type=Path, default=harness.DEV_QUERIES)
    parser.add_argument("--opens", type=int, default=3, help="cold opens per size, the median is shown (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the queries for the p50 (default 3)")
    parser.add_argument("--work", type=Path, help="keep the generated sites and sets under this directory")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    parser.add_argument("--recall", type=Path, nargs="+", metavar="SET_DIR",
                        help="only measure recall@10 of these built sets (made by this bench, e.g. kept with --work)")
    args = parser.parse_args()
    queries = _queries(args.queries)
    if args.recall:
        return recall_only(args, queries)
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
    markdown = args.format == "markdown"
    if markdown:
        print(TABLE_HEAD, flush=True)  # rows follow as they are measured: a long run shows them early
    rows = []
    for size in sorted(set(args.sizes) | set(args.baseline_sizes)):
        schemas = ([1] if size in args.baseline_sizes and args.schema != 1 else []) + \
                  ([args.schema] if size in args.sizes or args.schema == 1 else [])
        rows += run_size(size, schemas, args, queries, table_row if markdown else None)
    if markdown:
        print(f"\n{table_notes(rows)}")
    else:
        print(json.dumps({"embedder": BigramEmbedder().name, "cores": os.cpu_count(), "rows": rows}, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if len(sys.argv) > 1 and sys.argv[1] == "_build":
        child_build(*sys.argv[2:6])
    elif len(sys.argv) > 1 and sys.argv[1] == "_open":
        child_open(*sys.argv[2:5])
    else:
        main()
