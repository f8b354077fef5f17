"""The wheel built from this repository ships every module and data file, and runs `build` and
`search` on the sample site from the wheel's own files (not this checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "knowledge_build"
DATA = ("*.py", "*.yml", "*.json", "*.sql", "*.j2")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True, timeout=float(os.environ.get("KB_TEST_TIMEOUT", 600)))
    (found,) = out.glob("knowledge_build-*.whl")
    return found


def test_the_wheel_holds_every_module_and_data_file_of_the_package(wheel):
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("knowledge_build/")}
    here = {p.relative_to(ROOT).as_posix() for pattern in DATA for p in PACKAGE.rglob(pattern)
            if "__pycache__" not in p.parts}
    assert here - shipped == set()
    assert {"knowledge_build/data/glossary.yml", "knowledge_build/store/migrations/001_extension_and_meta.sql",
            "knowledge_build/templates/report.html.j2"} <= shipped


@pytest.mark.model
def test_build_and_search_run_from_the_wheel(wheel, real_index_dir, tmp_path):
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    cache = real_index_dir.parents[3] / "cache"  # the real_index_dir build's vectors: nothing to embed
    site = tmp_path / "site"
    subprocess.run(["cp", "-r", str(real_index_dir.parents[2]), str(site)], check=True)
    output = tmp_path / "out"
    code = ("import json, sys, knowledge_build\nfrom knowledge_build.cli import main\n"
            "print(json.dumps(knowledge_build.__file__))\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n")
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    run = [sys.executable, "-c", code]
    built = subprocess.run([*run, "build", "--site", str(site), "--output", str(output), "--cache-dir", str(cache),
                            "--format", "json"], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    where, summary = built.stdout.split("\n", 1)
    assert Path(json.loads(where)).is_relative_to(unpacked)
    assert json.loads(summary)["embedded"] == 0
    assert {p.name: p.read_bytes() for p in output.iterdir()} == {p.name: p.read_bytes()
                                                                  for p in real_index_dir.iterdir()}
    found = subprocess.run([*run, "search", "二次方程式を公式で解きたい", "--index", str(output), "--format", "json"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    results = json.loads(found.stdout.split("\n", 1)[1])
    assert results["results"][0]["id"].startswith("二次方程式#")
