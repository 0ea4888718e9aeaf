"""Streamlit's files compressed once, ahead of time (harness.hall.compress_ahead), and sent by the hall's nginx
itself from that copy: a student who opens the link costs nginx no compression, and gets brotli's best level."""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import brotli
import pytest

from harness import hall
from harness.server import free_port

BUNDLE = "var attention = softmax(scores);\n" * 120  # 4 kB of JavaScript, like a (small) bundle
NEEDS_BROTLI_AHEAD = pytest.mark.skipif(
    not hall.brotli_ahead_possible() and not os.environ.get("CI"),
    reason="nginx's brotli static module (libnginx-mod-http-brotli-static) is not installed; CI installs it",
)


@pytest.fixture
def files():
    """A folder laid out as Streamlit's static/ is, readable by nginx's workers (nobody, where nginx runs as
    root): not under pytest's private tmp."""
    with tempfile.TemporaryDirectory(prefix="compressed-ahead-") as folder:
        root = Path(folder)
        (root / "static" / "js").mkdir(parents=True)
        (root / "static" / "media").mkdir()
        (root / "static" / "js" / "index.abc123.js").write_text(BUNDLE)
        (root / "static" / "js" / "tiny.def456.js").write_text("var a = 1;\n")  # below gzip_min_length
        (root / "static" / "media" / "font.woff2").write_bytes(os.urandom(4096))  # a font is compressed already
        for path in [root, *root.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield root


def test_every_file_worth_it_gets_its_gzip_and_brotli_beside_it_and_keeps_its_own_bytes(files):
    assert hall.compress_ahead(files, brotli_too=True) == 1
    bundle = files / "static" / "js" / "index.abc123.js"
    assert bundle.read_text() == BUNDLE
    assert gzip.decompress((files / "static/js/index.abc123.js.gz").read_bytes()).decode() == BUNDLE
    assert brotli.decompress((files / "static/js/index.abc123.js.br").read_bytes()).decode() == BUNDLE
    left_alone = ("static/js/tiny.def456.js", "static/media/font.woff2")
    assert not any((files / f"{name}{suffix}").exists() for name in left_alone for suffix in (".gz", ".br"))


def test_compressing_again_writes_the_same_bytes_so_a_copy_does_not_depend_on_when_it_was_made(files):
    hall.compress_ahead(files, brotli_too=True)
    first = [(files / f"static/js/index.abc123.js{suffix}").read_bytes() for suffix in (".gz", ".br")]
    hall.compress_ahead(files, brotli_too=True)
    assert [(files / f"static/js/index.abc123.js{suffix}").read_bytes() for suffix in (".gz", ".br")] == first


def test_without_brotli_only_gzip_is_made_and_the_config_sends_only_gzip_ahead(files):
    hall.compress_ahead(files, brotli_too=False)
    assert (files / "static/js/index.abc123.js.gz").exists()
    assert not (files / "static/js/index.abc123.js.br").exists()
    config = hall.nginx_config(["127.0.0.1:18501"], "127.0.0.1:18500", brotli=True, streamlit_files=files)
    assert "gzip_static on;" in config and "brotli_static" not in config
    assert str(hall.BROTLI_STATIC_MODULE) not in config


def test_compose_sends_streamlits_files_from_the_replicas():
    """In Compose nginx runs in a container of its own, without Streamlit's files: the replicas send them."""
    config = hall.compose_nginx_config()
    assert "location /static/" not in config and str(hall.BROTLI_STATIC_MODULE) not in config


@NEEDS_BROTLI_AHEAD
def test_nginx_sends_the_bytes_compressed_ahead_and_never_asks_a_replica(files, tmp_path):
    """A real nginx on the hall's own configuration, whose one replica is not even running: the files come from
    the copy on disk, as compressed ahead of time, with their type and a year's caching."""
    hall.compress_ahead(files, brotli_too=True)
    listen = f"127.0.0.1:{free_port()}"
    config = hall.nginx_config([f"127.0.0.1:{free_port()}"], listen, brotli=True, streamlit_files=files)
    path = "/static/js/index.abc123.js"
    with hall.Nginx(tmp_path / "nginx", config, listen, ready_path=path) as nginx:
        answers = {encoding: hall.visit(nginx.url + path, {}, encoding) for encoding in ("identity", "gzip", "br")}
    assert answers["identity"].body.decode() == BUNDLE and "Content-Encoding" not in answers["identity"].headers
    assert answers["gzip"].headers["Content-Encoding"] == "gzip"
    assert answers["gzip"].body == (files / "static/js/index.abc123.js.gz").read_bytes()
    assert answers["br"].headers["Content-Encoding"] == "br"
    assert answers["br"].body == (files / "static/js/index.abc123.js.br").read_bytes()
    for answer in answers.values():
        assert answer.status == 200 and answer.headers["Content-Type"] == "application/javascript"
        assert answer.headers["Cache-Control"] == "public, max-age=31536000, immutable"
        assert answer.replica == ""
