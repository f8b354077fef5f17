"""`python tests/fake_cli.py ARGS…` runs the knowledge-build CLI with the FakeEmbedder behind
KnowledgeIndex.open, for subprocess tests (real transports, real signals) without the model."""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from knowledge_build import KnowledgeIndex  # noqa: E402
from knowledge_build.cli import main  # noqa: E402
from tests.fakes import FakeEmbedder  # noqa: E402


class SlowFakeEmbedder(FakeEmbedder):
    """FakeEmbedder taking KB_TEST_EMBED_SECONDS per document: a long tool call on demand. With
    KB_TEST_EMBED_STARTED=<file>, it creates that file as it starts: the test waits for that, not a while."""

    def embed_documents(self, texts):
        started = os.environ.get("KB_TEST_EMBED_STARTED")
        if started:
            Path(started).touch()
        time.sleep(float(os.environ.get("KB_TEST_EMBED_SECONDS", "0")) * len(texts))
        return super().embed_documents(texts)


_open = KnowledgeIndex.open.__func__
KnowledgeIndex.open = classmethod(lambda cls, path, embedder=None, settings=None, **options:
                                  _open(cls, path, SlowFakeEmbedder(), settings))

if __name__ == "__main__":
    main()
