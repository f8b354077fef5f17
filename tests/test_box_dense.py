"""The search box's dense tables (knowledge_build/browser/dense.py): the exact arithmetic that makes them the same
bytes whatever the machine's BLAS does with its threads, and the tables themselves."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from knowledge_build.browser import dense

from .conftest import ROOT


def test_the_ridge_system_is_solved_as_numpy_solves_it():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((60, 40))
    system = a.T @ a + 0.01 * np.eye(40)
    b = rng.standard_normal((40, 7))
    assert np.allclose(dense._solve_spd(system, b), np.linalg.solve(system, b), rtol=1e-8, atol=1e-10)


def test_the_exact_gram_is_the_centred_product():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((500, 30)), rng.standard_normal((500, 8))
    centred = a - a.mean(axis=0)
    for got, want in ((dense._gram(a), centred.T @ centred), (dense._gram(a, b), centred.T @ (b - b.mean(axis=0)))):
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()  # the inputs held to about 21 bits


def test_a_product_whose_sums_would_not_be_exact_is_refused():
    big = np.full((1, 4096), 2.0 ** 25)
    with pytest.raises(AssertionError):
        dense._exact(big, 1.0, big.T, 1.0)


SCRIPT = """
import sys, hashlib, json
import numpy as np
sys.path.insert(0, sys.argv[1])
from knowledge_build.browser import dense
from types import SimpleNamespace
from tests.fakes import FakeEmbedder

rng = np.random.default_rng(7)
words = [chr(0x4e00 + i) + chr(0x4e00 + (i * 7) % 500) for i in range(3000)]
chunks = [SimpleNamespace(title=" ".join(rng.choice(words, 3)), material_title="m", learns=(), excerpt="",
                          content="。".join(" ".join(rng.choice(words, 6)) for _ in range(4))) for i in range(2000)]
vectors = rng.standard_normal((2000, 384)).astype(np.float32)
vocabulary = {w: 1 + i % 40 for i, w in enumerate(words)}
def pieces_of(text):
    return [w for w in vocabulary if w in text]
tables = dense.dense_tables(chunks, vectors, vocabulary, pieces_of, FakeEmbedder(dim=384), None)
entry, pieces, codes, offset, centres = tables.files()
dense.MAX_ROWS, dense.CLUSTER_ROWS = 500, 100  # the same tables with their codes in clusters
clustered = tables.files()
print(hashlib.sha256(json.dumps(entry, sort_keys=True).encode() + b"".join(pieces) + b"".join(codes) + offset
                     + json.dumps(clustered[0], sort_keys=True).encode() + b"".join(clustered[2]) + clustered[4]).hexdigest())
"""


def test_the_tables_are_the_same_bytes_with_one_blas_thread_or_two(tmp_path):
    """Same input, same bytes: the map and the codes do not depend on how BLAS splits its sums (issue 41)."""
    script = tmp_path / "tables.py"
    script.write_text(SCRIPT, encoding="utf-8")
    digests = []
    for threads in ("1", "2"):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        done = subprocess.run([sys.executable, str(script), str(ROOT)], capture_output=True, text=True, env=env,
                              timeout=float(os.environ.get("KB_TEST_TIMEOUT", "120")) * 5)
        assert done.returncode == 0, done.stderr
        digests.append(done.stdout.strip())
    assert digests[0] == digests[1] and len(digests[0]) == 64


def test_clusters_hold_every_row_once_near_its_centre():
    """k-means over the codes (dense.clusters): every row in exactly one cluster, in order; a row's own centre is
    among its nearest; the centres are codes."""
    rng = np.random.default_rng(3)
    centres = rng.integers(0, 4, (6, 32))
    codes = np.clip(centres[rng.integers(0, 6, 600)] + rng.integers(-1, 2, (600, 32)) * (rng.random((600, 32)) < 0.1),
                    0, 3).astype(np.uint8)
    found, members = dense.clusters(codes, 6)
    rows = np.concatenate(members)
    assert sorted(rows.tolist()) == list(range(600)) and all((np.diff(m) > 0).all() for m in members)
    assert found.shape == (len(members), 32) and found.max() <= 3
    values = 2 * codes.astype(float) - 3
    means = np.stack([values[m].mean(axis=0) for m in members])
    own = np.empty(600, int)
    for c, m in enumerate(members):
        own[m] = c
    distance = ((values[:, None, :] - means[None]) ** 2).sum(axis=2)
    assert (distance[np.arange(600), own] <= distance.min(axis=1) + 1e-9).mean() >= 0.99


def test_a_piece_row_is_the_map_of_its_vector_and_a_query_the_mean_of_its_pieces():
    """The browser's query vector is the weighted mean of its pieces' mapped rows less the offset: with one piece,
    that is the piece's own row less the offset (the map applied once at build time, exact as the map is linear)."""
    rng = np.random.default_rng(3)
    table = rng.standard_normal((50, 16)).astype(np.float32)
    cut = [[0, 1], [2], [3, 4, 5]]
    idf = np.arange(1, 51, dtype=np.float32)
    means = dense._weighted_means(table, idf, cut)
    assert np.allclose(means[0], (1 * table[0] + 2 * table[1]) / 3, atol=1e-6)
    assert np.allclose(means[1], table[2], atol=1e-6)
    assert json.dumps(dense.LEVELS)  # the entry point carries the levels the browser decodes with
