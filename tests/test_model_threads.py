"""The test run gives each xdist worker one model thread (tests/conftest.py's `pytest_configure`) and the
background corpus build all cores with sleeping waits (tests/run_once.py): sharing one vector cache
between them is only correct if the model's vectors do not depend on its threads. They do not: each
output row is computed by one thread, in the same order, whatever the number of threads."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.run_once import BACKGROUND_BUILD_THREADS

pytestmark = pytest.mark.model

EMBED = """
import sys, numpy as np
from knowledge_build.embed.local import LocalEmbedder
embedder = LocalEmbedder()
texts = ["二次方程式は解の公式で解ける。", "たすき掛けで因数分解する", "三角形の面積は底辺×高さ÷2"] * 6
vectors = np.concatenate([embedder.embed_documents(texts), embedder.embed_query("二次方程式の解き方")[None]])
sys.stdout.buffer.write(vectors.astype(np.float32).tobytes())
"""


def _vectors(threads: dict) -> np.ndarray:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OMP_")} | threads
    out = subprocess.run([sys.executable, "-c", EMBED], env=env, capture_output=True, check=True).stdout
    return np.frombuffer(out, dtype=np.float32).reshape(-1, 384)


def test_vectors_are_the_same_bytes_with_one_thread_and_with_the_background_builds_threads():
    one = _vectors({"OMP_NUM_THREADS": "1"})
    assert one.shape == (19, 384) and np.isfinite(one).all() and abs(np.linalg.norm(one, axis=1) - 1).max() < 1e-3
    assert one.tobytes() == _vectors({**BACKGROUND_BUILD_THREADS, "OMP_NUM_THREADS": "2"}).tobytes()
    assert one.tobytes() == _vectors({"OMP_NUM_THREADS": "3"}).tobytes()


def test_a_worker_runs_the_model_on_one_thread():
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("only xdist workers are given one thread (this run has none)")
    assert os.environ.get("OMP_NUM_THREADS"), "conftest's pytest_configure sets it (to 1 unless the developer set it)"
