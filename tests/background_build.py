"""Builds the reference-corpus index for a test run in the background (started by `tests/run_once.py`'s
`start_in_background`): `python tests/background_build.py RUN_DIR NAME CORPUS CACHE_DIR`. It takes the
same lock as the fixture, so a worker that needs the index first simply waits for it; if this process
fails, the fixture finds nothing recorded and builds the index itself."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.run_once import build_corpus, once_per_run  # noqa: E402

if __name__ == "__main__":
    run_dir, name, corpus, cache_dir = (Path(a) for a in sys.argv[1:5])
    print(once_per_run(run_dir, str(name), build_corpus(corpus, cache_dir)), flush=True)
