"""check and suggest-ids on a copy of a real site (the reference corpus by default).

    python bench/bench_ids.py ../shared/corpus/school_asset

Prints the time of `check` before and after `suggest-ids --write`, and of the write itself.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import knowledge_build as kb
from knowledge_build.checks.lint import check_site, plans_for, write_suggestions


def timed(label: str, func):
    start = time.perf_counter()
    result = func()
    print(f"{label:<40} {time.perf_counter() - start:.2f} s", flush=True)
    return result


def main() -> None:
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/corpus/school_asset")
    with tempfile.TemporaryDirectory() as work:
        site = Path(work) / "site"
        shutil.copytree(source, site)
        config = kb.load_config(site=site, env={})
        result = timed("check (first run, cold imports)", lambda: check_site(config))
        missing = sum(d.rule == "missing-id" for d in result.diagnostics)
        result = timed(f"check ({missing} boxes without id)", lambda: check_site(config))
        written, files = timed("suggest-ids --write", lambda: write_suggestions(plans_for(config)))
        print(f"{'':<40} {written} ids written into {files} files")
        result = timed("check after writing", lambda: check_site(config))
        print(f"{'':<40} {sum(d.rule == 'missing-id' for d in result.diagnostics)} boxes without id left")


if __name__ == "__main__":
    main()
