"""conftest.BuildCopies: a copy of a session's build is what the same build in the test's folder leaves."""

from knowledge_build import build, load_config

from .conftest import FakeEmbedder


def _config(site):
    return load_config(site=site, env={"KB_CACHE_DIR": str(site.parent / "cache")})


def _build(site):
    return build(_config(site), embedder=FakeEmbedder())


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_copied_build_has_the_files_and_result_of_a_build_in_place(site_dir, tmp_path, build_copies):
    copied = build_copies("copies-test", _config, FakeEmbedder, tmp_path / "copy")
    in_place = _build(site_dir)
    assert copied.output == (tmp_path / "copy" / "site" / "_site" / "knowledge" / "v2")
    assert _files(copied.output) == _files(in_place.output)
    assert copied.artifacts.manifest == in_place.artifacts.manifest and copied.chunks == in_place.chunks
    assert [d.path.replace(str(tmp_path / "copy"), "") for d in copied.diagnostics] == \
        [d.path.replace(str(tmp_path), "") for d in in_place.diagnostics]
    assert all(str(tmp_path / "copy") in d.path for d in copied.diagnostics)


def test_a_no_change_rebuild_of_a_copy_keeps_its_set_as_a_rebuild_in_place_does(tmp_path, build_copies):
    copied = build_copies("copies-test", _config, FakeEmbedder, tmp_path)
    written = (copied.output / "manifest.json").stat().st_ino  # a kept set is not written again
    embedder = FakeEmbedder()
    again = build(load_config(site=tmp_path / "site", env={"KB_CACHE_DIR": str(tmp_path / "cache")}), embedder=embedder)
    assert again.artifacts.build_id == copied.artifacts.build_id and embedder.calls == 0
    assert again.diagnostics == copied.diagnostics
    assert (again.output / "manifest.json").stat().st_ino == written
