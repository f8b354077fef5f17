"""check and suggest-ids on a copy of a real site (the reference corpus by default).

    python bench/bench_ids.py ../shared/corpus/school_asset

The site (that corpus when none is given) is copied first: suggest-ids writes into the copy.

Prints the time of `check` before and after `suggest-ids --write`, and of the write itself.
"""

from __future__ import annotations

from pathlib import Path

import harness

import knowledge_build as kb
from knowledge_build.checks.lint import check_site, plans_for, write_suggestions

WIDTH = 40


def timed(label: str, func):
    seconds, result = harness.timed(func)
    harness.report(label, f"{seconds:.2f} s", WIDTH)
    return result


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("site", type=Path, nargs="?", default=harness.CORPUS)
    source = parser.parse_args().site
    with harness.workdir("kb-bench-ids-") as work:
        site = harness.copy_site(source, work / "site")
        config = kb.load_config(site=site, env={})
        result = timed("check (first run, cold imports)", lambda: check_site(config))
        missing = sum(d.rule == "missing-id" for d in result.diagnostics)
        result = timed(f"check ({missing} boxes without id)", lambda: check_site(config))
        written, files = timed("suggest-ids --write", lambda: write_suggestions(plans_for(config)))
        harness.report("", f"{written} ids written into {files} files", WIDTH)
        result = timed("check after writing", lambda: check_site(config))
        harness.report("", f"{sum(d.rule == 'missing-id' for d in result.diagnostics)} boxes without id left", WIDTH)


if __name__ == "__main__":
    main()
