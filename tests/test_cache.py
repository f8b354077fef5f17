"""The vector cache: a rebuild with no change embeds nothing; one edited box re-embeds one."""

import dataclasses

from knowledge_build import build, load_config

from .conftest import FakeEmbedder


def test_rebuild_without_changes_embeds_nothing(site_dir):
    config = load_config(site=site_dir)
    first = build(config, embedder=FakeEmbedder())
    assert first.embed_stats.embedded == len(first.chunks)
    # Into the same directory the set is kept (build_memo.py); into another one the build runs in
    # full and every vector comes from the cache.
    for again in (config, dataclasses.replace(config, output=site_dir.parent / "rebuilt")):
        second_embedder = FakeEmbedder()
        second = build(again, embedder=second_embedder)
        assert second_embedder.documents_embedded == 0
        assert second.embed_stats.cached == len(second.chunks) == len(first.chunks)
        assert second.artifacts.build_id == first.artifacts.build_id


def test_editing_one_box_re_embeds_only_that_box(site_dir):
    config = load_config(site=site_dir)
    build(config, embedder=FakeEmbedder())
    page = site_dir / "junior" / "因数分解.html"
    page.write_text(page.read_text(encoding="utf-8").replace("たすき掛けによる因数分解", "たすき掛けで因数分解", 1),
                    encoding="utf-8")
    embedder = FakeEmbedder()
    result = build(config, embedder=embedder)
    assert embedder.documents_embedded == 1
    assert result.embed_stats.embedded == 1


def test_an_interrupted_build_resumes_from_what_was_embedded(site_dir):
    class DiesAfterTwoBatches(FakeEmbedder):
        def embed_documents(self, texts):
            if self.calls == 2:
                raise KeyboardInterrupt
            return super().embed_documents(texts)

    config = load_config(site=site_dir, batch_size=10)
    try:
        build(config, embedder=DiesAfterTwoBatches())
    except KeyboardInterrupt:
        pass
    embedder = FakeEmbedder()
    result = build(config, embedder=embedder)
    assert embedder.documents_embedded == len(result.chunks) - 20


def test_cache_is_per_embedder(site_dir):
    config = load_config(site=site_dir)
    build(config, embedder=FakeEmbedder())
    other = FakeEmbedder(dim=32)
    build(config, embedder=other)
    assert other.documents_embedded == 171  # every chunk again: vectors of another embedder never mix
