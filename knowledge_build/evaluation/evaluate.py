"""Retrieval evaluation: labelled queries -> metrics, reports, and a regression gate.

Dataset lines: {"qid", "query", "relevant": [chunk ids], "kind"}. Relevance is binary.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..diagnostics import Diagnostic
from ..errors import KnowledgeBuildError

GATED = ("hit@1", "hit@5", "hit@10", "mrr@10", "ndcg@10")
DEPTH = 10


class DatasetError(KnowledgeBuildError):
    """A dataset or baseline file cannot be used; the message names the file, line and fix."""


@dataclass(frozen=True)
class LabelledQuery:
    qid: str
    query: str
    relevant: tuple[str, ...]
    kind: str = ""


@dataclass
class Report:
    mode: str
    k: int
    metrics: dict[str, float]
    per_kind: dict[str, dict[str, float]]
    latency_ms: dict[str, float]
    queries: list[dict] = field(default_factory=list)
    regressions: list[dict] = field(default_factory=list)

    def to_json(self) -> dict:
        """Metrics at the top level (hit@5, mrr@10, …), then the breakdowns."""
        return {**self.metrics, "mode": self.mode, "k": self.k, "per_kind": self.per_kind,
                "latency_ms": self.latency_ms, "regressions": self.regressions}


def load_dataset(path: Path) -> list[LabelledQuery]:
    """Every line checked; all bad lines are reported at once as `file:line:1: error: …`."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise DatasetError(f"cannot read dataset {path}: {reason}. Fix: pass --dataset a UTF-8 JSON Lines file") from exc
    queries, problems, seen = [], [], {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        query, problem = _parse_line(line)
        if problem is None and query.qid in seen:
            problem = (f"qid '{query.qid}' is used again (first on line {seen[query.qid]})",
                       "give every query its own qid")
        if problem is not None:
            problems.append(Diagnostic(str(path), number, 1, "error", "dataset", *problem))
            continue
        seen[query.qid] = number
        queries.append(query)
    if problems:
        raise DatasetError(f"{len(problems)} bad line(s) in dataset {path}; nothing was evaluated:\n"
                           + "\n".join(d.format() for d in problems))
    if not queries:
        raise DatasetError(f"{path} holds no queries. Fix: write one JSON object per line: "
                           '{"qid": "1", "query": "…", "relevant": ["material#anchor"], "kind": "…"}')
    return queries


def _parse_line(line: str) -> tuple[LabelledQuery | None, tuple[str, str] | None]:
    """One dataset line as a query, or (message, fix) saying why it is not one."""
    shape = 'write the line as {"qid": "1", "query": "…", "relevant": ["material#anchor"], "kind": "…"}'
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, (f"the line is not JSON ({exc.msg} at column {exc.colno})", shape)
    if not isinstance(item, dict):
        return None, (f"expected a JSON object with qid, query, relevant and kind, found {type(item).__name__}", shape)
    missing = [key for key in ("qid", "query", "relevant") if key not in item]
    if missing:
        return None, (f"expected a JSON object with qid, query, relevant (list) and kind; missing {', '.join(missing)}",
                      shape)
    qid, query, relevant, kind = item["qid"], item["query"], item["relevant"], item.get("kind") or ""
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid).strip():
        return None, (f"qid must be a non-empty string or a number, not {json.dumps(qid)}", "give the query an id")
    if not isinstance(query, str) or not query.strip():
        return None, (f"query must be a non-empty string, not {json.dumps(query, ensure_ascii=False)}",
                      "write the question a user would ask")
    from ..ranking.settings import MAX_QUERY_CHARS

    if len(query.strip()) > MAX_QUERY_CHARS:
        return None, (f"query is {len(query.strip()):,} characters; search takes at most {MAX_QUERY_CHARS:,}",
                      "shorten the query to the question a user would ask")
    if not isinstance(relevant, list) or not relevant:
        return None, (f"relevant must be a non-empty list of chunk ids, not {json.dumps(relevant, ensure_ascii=False)}"
                      " (a query without a relevant chunk cannot be scored)",
                      'list the ids that answer it, e.g. ["二次方程式#rule-quadratic-formula"], or drop the line')
    if not all(isinstance(r, str) and r.strip() for r in relevant):
        return None, ("every relevant id must be a non-empty string like 'material#anchor'",
                      "write the ids as strings, e.g. \"二次方程式#rule-quadratic-formula\"")
    if not isinstance(kind, str):
        return None, (f"kind must be a string, not {json.dumps(kind, ensure_ascii=False)}",
                      'use a label such as "keyword" or drop the key')
    return LabelledQuery(str(qid), query, tuple(relevant), kind), None


def evaluate(index, queries: list[LabelledQuery], k: int = 5, mode: str = "hybrid", progress=None) -> Report:
    known = {c.id for c in index.chunks}
    unknown = sorted({r for q in queries for r in q.relevant} - known)
    if unknown:
        raise DatasetError(f"{len(unknown)} relevant id(s) are not in the index, e.g. {unknown[:3]}: the dataset "
                           "and the index are of different sites, or the index is stale")
    rows, latencies = [], []
    for query in queries:
        started = time.perf_counter()
        results = index.search(query.query, k=max(k, DEPTH), mode=mode)
        latencies.append((time.perf_counter() - started) * 1000)
        retrieved = [place_id(r, query.relevant) for r in results]
        rows.append({"qid": query.qid, "query": query.query, "kind": query.kind,
                     "relevant": list(query.relevant), "retrieved": retrieved[:DEPTH],
                     "rank": next((i for i, r in enumerate(retrieved, 1) if r in query.relevant), None),
                     **query_metrics(retrieved, set(query.relevant), k)})
        if progress:
            progress()
    kinds = sorted({r["kind"] for r in rows if r["kind"]})
    return Report(
        mode=mode, k=k, metrics=mean_metrics(rows, k),
        per_kind={kind: {**mean_metrics([r for r in rows if r["kind"] == kind], k),
                         "queries": sum(r["kind"] == kind for r in rows)} for kind in kinds},
        latency_ms={"p50": round(statistics.median(latencies), 2), "p95": round(_p95(latencies), 2)},
        queries=rows)


def place_id(result, relevant) -> str:
    """The id a result scores with: results are places (ranking/places.py), so a relevant chunk among
    its sub-results (a table's other rows) counts at the place's rank."""
    for chunk_id in (result.id, *(sub["id"] for sub in result.sub_results)):
        if chunk_id in relevant:
            return chunk_id
    return result.id


def query_metrics(retrieved: list[str], relevant: set[str], k: int) -> dict[str, float]:
    def hits(n):
        return sum(r in relevant for r in retrieved[:n])

    first = next((i for i, r in enumerate(retrieved[:DEPTH], 1) if r in relevant), None)
    dcg = sum(1 / math.log2(i + 1) for i, r in enumerate(retrieved[:DEPTH], 1) if r in relevant)
    idcg = sum(1 / math.log2(i + 1) for i in range(1, min(len(relevant), DEPTH) + 1))
    precision, recall = hits(k) / k, hits(k) / len(relevant) if relevant else 0.0
    return {
        "hit@1": float(hits(1) > 0), "hit@5": float(hits(5) > 0), "hit@10": float(hits(10) > 0),
        f"recall@{k}": recall, f"precision@{k}": precision,
        f"f1@{k}": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "mrr@10": 1 / first if first else 0.0, "ndcg@10": dcg / idcg if idcg else 0.0,
    }


def mean_metrics(rows: list[dict], k: int) -> dict[str, float]:
    keys = ("hit@1", "hit@5", "hit@10", f"recall@{k}", f"precision@{k}", f"f1@{k}", "mrr@10", "ndcg@10")
    return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in keys} | {"queries": len(rows)}


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def compare(report: Report, baseline: dict, threshold: float) -> list[dict]:
    """Metrics that fell more than `threshold` below the baseline."""
    regressions = []
    for key in GATED:
        if key in baseline and baseline[key] - report.metrics[key] > threshold:
            regressions.append({"metric": key, "baseline": baseline[key], "current": report.metrics[key],
                                "drop": round(baseline[key] - report.metrics[key], 4)})
    report.regressions = regressions
    return regressions


def load_baseline(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"cannot read baseline {path} ({exc}). Fix: create one with --save-baseline") from exc
    bad = [key for key in GATED if isinstance(data, dict) and key in data
           and (not isinstance(data[key], (int, float)) or isinstance(data[key], bool))]
    if not isinstance(data, dict) or bad:
        what = f"{', '.join(bad)} must be numbers" if bad else "it must be a JSON object of metrics"
        raise DatasetError(f"baseline {path} is not usable: {what}. Fix: write it again with --save-baseline")
    return data


def save_baseline(report: Report, path: Path) -> None:
    data = {key: report.metrics[key] for key in GATED} | {"mode": report.mode, "k": report.k,
                                                           "queries": report.metrics["queries"]}
    _write(Path(path), json.dumps(data, indent=2, sort_keys=True) + "\n", "--baseline")


def write_reports(report: Report, out_dir: Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    json_path, md_path = out_dir / "report.json", out_dir / "report.md"
    _write(json_path, json.dumps({**report.to_json(), "queries": report.queries}, ensure_ascii=False, indent=1) + "\n",
           "--output-dir")
    _write(md_path, markdown(report), "--output-dir")
    return json_path, md_path


def _write(path: Path, text: str, option: str) -> None:
    from ..fsutil import atomic_write

    try:
        atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        raise DatasetError(f"cannot write {path} ({exc.strerror or exc}). Fix: pass {option} a writable path") from exc


def markdown(report: Report) -> str:
    keys = [key for key in report.metrics if key != "queries"]
    lines = [f"# Retrieval evaluation ({report.mode}, k={report.k}, {report.metrics['queries']} queries)", "",
             "| " + " | ".join(["slice", "queries", *keys]) + " |", "|" + "---|" * (len(keys) + 2)]
    lines.append("| all | " + " | ".join([str(report.metrics["queries"]), *(f"{report.metrics[k]:.3f}" for k in keys)]) + " |")
    for kind, metrics in report.per_kind.items():
        lines.append(f"| {kind} | " + " | ".join([str(metrics["queries"]), *(f"{metrics[k]:.3f}" for k in keys)]) + " |")
    lines += ["", f"Latency per query: p50 {report.latency_ms['p50']} ms, p95 {report.latency_ms['p95']} ms.", ""]
    if report.regressions:
        lines += ["## Regressions", ""] + [f"- {r['metric']}: {r['baseline']:.3f} -> {r['current']:.3f}"
                                           for r in report.regressions] + [""]
    misses = [q for q in report.queries if not q["hit@5"]]
    if misses:
        lines += ["## Queries without a relevant result in the top 5", "", "| qid | kind | query | rank |", "|---|---|---|---|"]
        lines += [f"| {q['qid']} | {q['kind']} | {q['query']} | {q['rank'] or '-'} |" for q in misses]
    return "\n".join(lines) + "\n"
