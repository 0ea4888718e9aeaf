"""The static site benchmarks/browser_vs_bertviz.py serves BertViz's pages from: nginx with the lecture hall's own
compression (harness.hall.static_site_config), so that BertViz's bytes are counted as compressed as the app's."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest

from harness import hall
from harness.server import free_port

PAGE = "<!doctype html><p>" + "attention " * 500 + "</p>"  # over gzip_min_length


@pytest.mark.parametrize("brotli", [True, False], ids=["with brotli", "gzip only"])
def test_the_static_site_compresses_with_the_halls_own_directives_and_passes_nginx_t(brotli, tmp_path):
    config = hall.static_site_config(tmp_path / "site", "127.0.0.1:18600", brotli)
    hall.prepare_prefix(tmp_path)
    (tmp_path / "nginx.conf").write_text(config)
    hall.check_nginx_config(tmp_path / "nginx.conf", tmp_path)
    assert hall.compression(brotli) in config
    assert hall.compression(brotli) in hall.nginx_config(["127.0.0.1:18501"], "127.0.0.1:18500", brotli)


@pytest.fixture
def site():
    """A folder nginx's workers can read (as nobody, where nginx runs as root): not under pytest's private tmp."""
    with tempfile.TemporaryDirectory(prefix="static-site-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def test_the_static_site_sends_pages_compressed_and_uncached_and_libraries_cacheable(site, tmp_path):
    (site / "vendor").mkdir()
    (site / "page.html").write_text(PAGE)
    (site / "vendor" / "library.js").write_text("var attention = 1;\n" * 200)
    listen = f"127.0.0.1:{free_port()}"
    config = hall.static_site_config(site, listen, brotli=False)
    with hall.Nginx(tmp_path / "nginx", config, listen, ready_path="/page.html") as nginx:
        page = hall.visit(f"{nginx.url}/page.html", {}, accept_encoding="gzip")
        library = hall.visit(f"{nginx.url}/vendor/library.js", {}, accept_encoding="gzip")
    assert page.headers["Content-Encoding"] == "gzip" and gzip.decompress(page.body).decode() == PAGE
    assert page.headers["Cache-Control"] == "no-store"
    assert library.headers["Content-Encoding"] == "gzip"
    assert library.headers["Cache-Control"] == "public, max-age=31536000, immutable"
