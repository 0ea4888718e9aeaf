"""Bytes sent to the browser and time until the figures are painted: this app's multi-head page next to
BertViz's `head_view` and `model_view`, on the same model and the same text, at 32, 128, 256 and 512 tokens;
then every page of the app at 512 tokens, as its link opens it, and each of its other tabs (a tab runs only
once it is opened).

    pip install -r benchmarks/requirements.txt          # bertviz, for this benchmark only
    python benchmarks/browser_vs_bertviz.py [--repeats 3] [--lengths 32,128,256,512] [--json out.json]

The app is measured twice on each text: directly, and through the lecture hall's nginx (harness/hall.py's
rendering of deploy/nginx/anatomy.conf.template, with this one server as its replica), which sends
Streamlit's files as compressed ahead of time (gzip 9, brotli 11) and compresses the rest with gzip and brotli
on the fly. BertViz's pages and libraries are served by nginx with the very same compression directives
(harness.hall.static_site_config), its libraries compressed ahead of time as Streamlit's are, so that both
sides' bytes are counted compressed alike. The
floors below are measured both ways too. Each row notes the Accept-Encoding Chromium sent and the bytes
that came back in each Content-Encoding. nginx is Debian's, as for `make class` (see harness/hall.py).

Everything runs offline on loopback. BertViz's HTML loads require.js, d3 and jQuery from CDNs; the script
fetches the same libraries once from the npm registry (`npm pack`, into test-artifacts/bertviz-vendor/),
serves them from loopback and rewrites the CDN addresses in BertViz's HTML to point there.
npm has no jQuery 2.0.0, the version BertViz names; 2.1.0 (83 KB minified, like 2.0.0) stands in. npm's
requirejs ships require.js unminified (85 KB against the CDN's 17 KB): BertViz's byte counts carry those
68 KB extra, under 5 % of its smallest page.

BertViz gets the model's attention from Hugging Face `BertModel` (eager attention, output_attentions=True)
on the embedded all-MiniLM-L6-v2, exactly as its README does; the app computes its own with `anatomy`.
Building BertViz's HTML in Python is not timed: only the browser is.

Each view is loaded `--repeats` times, each time in a fresh browser context (empty HTTP cache: "cold"), and
once more in the same context ("warm": the libraries are cached, the data is sent again). The app's first
cold load of a text also runs the model on the server and is shown apart ("first"). Times are medians, in
seconds from navigation start to the animation frame in which the figures were complete: for the app, the
condition the browser tests use (script done, no placeholder left, every plotly chart drawn); for BertViz,
its SVG holding its attention lines (BertViz draws synchronously, so the SVG is complete once it exists).
A view not painted within 120 s is reported as such. The goals are informational; the script exits 0
whether or not they are met.

Streamlit's floor, measured in the same run: two one-line Streamlit apps served the same way as ours, a page
with nothing but a title and a page with one 2×2 plotly heatmap. No Streamlit page can send fewer bytes or
paint sooner than these, so where BertViz beats the floor, no work on our pages can beat BertViz there. A third
reference is this app's own frame (app.py unchanged: the navigation, the sidebar) around a page holding only
that title and chart, opened by its link as a lesson is: the part of a page's time that no lesson can save.

Every page is timed at each of `--page-lengths` (512 by default) and compared with the app's frame around the
one-chart floor: the goal is a cold paint within FLOOR_MARGIN_SECONDS of it (the multi-head page at `--lengths`
too, directly and through the proxy, against the frame served the same way). The frame is loaded in turns with
each page (a cold load of one, then of the other, which one first alternating), so that both are measured in the
same minutes: on a 2-core machine the browser's and the server's own load moves paint times by more than that
margin between the start of a run and its end. The gap to the bare one-chart floor, measured at the start of the
run, is printed too. `--tokens-of smollm2` makes those texts exactly N tokens of
SmolLM2's tokenizer instead of MiniLM's (lesson 9 reads SmolLM2's tokens; the others cut at 512 of MiniLM's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import torch
from bertviz import head_view, model_view
from browser_support import (
    ARTIFACTS,
    LIMIT_MS,
    ROOT,
    STREAMLIT_PAINTED,
    Load,
    StreamlitServer,
    charts_awaited,
    chromium_launch_options,
    load,
    load_average,
    measure,
    median,
    new_context,
    painted_when,
    smollm2_text_of_exactly,
    text_of_exactly,
    view_link,
)
from playwright.sync_api import sync_playwright
from transformers import BertModel

from anatomy.checkpoints.pretrained import load_pretrained
from harness.hall import (
    BROTLI_MODULE,
    Nginx,
    brotli_ahead_possible,
    compress_ahead,
    nginx_config,
    static_site_config,
    streamlit_files_compressed_ahead,
)
from harness.server import free_port
from harness.views import LESSONS, OTHER_TABS

LENGTHS = (32, 128, 256, 512)
ALL_PAGES_GOAL_SECONDS = 3.0
FLOOR_MARGIN_SECONDS = 0.5  # a page's cold paint, at most this much after the app frame's, loaded beside it
LIMIT_S = LIMIT_MS // 1000
VENDOR = ARTIFACTS / "bertviz-vendor"
# CDN address in BertViz's HTML -> (npm package, file inside it, name served on loopback)
CDN = "https://cdnjs.cloudflare.com/ajax/libs"
CDN_FILES = {
    f"{CDN}/require.js/2.3.6/require.min.js": ("requirejs@2.3.6", "require.js", "require.min.js"),
    f"{CDN}/d3/5.7.0/d3.min": ("d3@5.7.0", "dist/d3.min.js", "d3.min.js"),
    f"{CDN}/jquery/2.0.0/jquery.min": ("jquery@2.1.0", "dist/jquery.min.js", "jquery.min.js"),
}
BERTVIZ_PAINTED = painted_when(
    "() => { const svg = document.querySelector('#vis svg'); return !!svg && !!svg.querySelector('line'); }"
)


# ---- BertViz, offline ----------------------------------------------------------------------------------------


def fetch_vendor_libraries() -> None:
    """The three JavaScript files BertViz loads, from the npm registry, once."""
    VENDOR.mkdir(parents=True, exist_ok=True)
    for package, member, served_as in CDN_FILES.values():
        if (VENDOR / served_as).exists():
            continue
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run(["npm", "pack", package, "--silent"], cwd=folder, check=True, capture_output=True)
            (tarball,) = Path(folder).glob("*.tgz")
            with tarfile.open(tarball) as archive:
                source = archive.extractfile(f"package/{member}")
                if source is None:
                    raise FileNotFoundError(f"{package} holds no file {member}")
                (VENDOR / served_as).write_bytes(source.read())


def offline_html(fragment: str, title: str) -> str:
    """BertViz's returned HTML as a page whose libraries come from the loopback server."""
    for cdn, (_, _, served_as) in CDN_FILES.items():
        local = f"/vendor/{served_as}" if cdn.endswith(".js") else f"/vendor/{served_as.removesuffix('.js')}"
        fragment = fragment.replace(cdn, local)
    head = fragment[:200_000]  # the CDN addresses sit before the attention data
    assert "cdnjs" not in head and "googleapis" not in head, "a CDN address was left in BertViz's HTML"
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body>{fragment}</body></html>"
    )


def write_bertviz_pages(site: Path, hf_model, tokenizer, text: str, length: int) -> None:
    inputs = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        attention = hf_model(**inputs, output_attentions=True).attentions  # L × (1, H, T, T)
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    assert len(tokens) == length
    for name, view in (("head_view", head_view), ("model_view", model_view)):
        html = view(attention, tokens, html_action="return").data
        (site / f"{name}-{length}.html").write_text(offline_html(html, f"BertViz {name}, {length} tokens"))
        del html


def static_site(folder: Path) -> Nginx:
    """The folder of BertViz pages and libraries behind nginx, compressed as the hall's proxy compresses.
    Libraries are cacheable (as a CDN serves them); pages are not, so a warm load sends the data again, as
    the app's does."""
    listen = f"127.0.0.1:{free_port()}"
    config = static_site_config(folder, listen, brotli=BROTLI_MODULE.exists())
    return Nginx(ARTIFACTS / "nginx-bertviz-site", config, listen, ready_path="/vendor/require.min.js")


# ---- the lecture hall's proxy --------------------------------------------------------------------------------

VIA_PROXY = " via proxy"  # the suffix of a row measured through the proxy


def proxy(server: StreamlitServer, name: str) -> Nginx:
    """The hall's nginx, with `server` (already running) as its one replica."""
    listen = f"127.0.0.1:{free_port()}"
    config = nginx_config(
        [f"127.0.0.1:{server.port}"], listen, BROTLI_MODULE.exists(), streamlit_files_compressed_ahead()
    )
    return Nginx(ARTIFACTS / f"nginx-{name}", config, listen)


# ---- Streamlit's floor ---------------------------------------------------------------------------------------

ONE_CHART = "st.plotly_chart(go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.6, 0.4]])))\n"
FLOOR_APPS = {
    "empty page": 'import streamlit as st\nst.title("Floor")\n',
    "one 2×2 chart": f'import plotly.graph_objects as go\nimport streamlit as st\nst.title("Floor")\n{ONE_CHART}',
}
# The app's own frame around the same chart: app.py as it is (the navigation over every lesson, the sidebar with
# its text, model and tour sections) with one more page, opened by its link, that holds only the floor's title and
# chart. What a lesson adds to this is the lesson's own cost; what this adds to the one-chart floor is the frame's.
FRAME_PAGE = (
    "import plotly.graph_objects as go\nimport streamlit as st\nfrom lessons.common.ui import sidebar\n"
    f'sidebar.current()\nst.title("Floor")\n{ONE_CHART}'
)
FRAME_APP = """import runpy
from lessons.common.ui import frame
if not any(lesson.file == {page!r} for lesson in frame.LESSONS):
    floor = frame.LessonEntry(99, {page!r}, "Floor", ":material/grid_on:", "Floor", "One 2×2 chart in the frame.")
    frame.LESSONS = (*frame.LESSONS, floor)
runpy.run_path({app!r}, run_name="__main__")
"""
FRAME_FLOOR = "app frame+chart"


def streamlit_floor(browser, repeats: int, frame: tuple[StreamlitServer, Nginx]) -> dict:
    """The least any Streamlit page costs here (the apps of FLOOR_APPS), and the least a page of this app costs
    (`frame`: FRAME_APP, served directly and through the proxy), served and loaded as ours are."""
    rows = {}
    with tempfile.TemporaryDirectory(prefix="streamlit-floor-") as folder:
        for index, (name, source) in enumerate(FLOOR_APPS.items()):
            script = Path(folder) / f"floor_{index}.py"
            script.write_text(source)
            charts = source.count("plotly_chart")
            with (
                StreamlitServer(script=script, log_path=ARTIFACTS / "streamlit-floor.log") as server,
                proxy(server, f"floor-{index}") as proxied,
            ):
                rows[name] = summary(*measure(browser, server.url, STREAMLIT_PAINTED, charts, repeats))
                rows[name + VIA_PROXY] = summary(*measure(browser, proxied.url, STREAMLIT_PAINTED, charts, repeats))
    for name, served in ((FRAME_FLOOR, frame[0]), (FRAME_FLOOR + VIA_PROXY, frame[1])):
        rows[name] = summary(*measure(browser, served.url + FRAME_FLOOR_PATH, STREAMLIT_PAINTED, 1, repeats))
    return rows


FRAME_FLOOR_PATH = "/floor_page"


@contextlib.contextmanager
def frame_floor_server(browser) -> Iterator[tuple[StreamlitServer, Nginx]]:
    """FRAME_APP served directly and through the hall's proxy, its page loaded once (which loads the model)."""
    with tempfile.TemporaryDirectory(prefix="streamlit-frame-floor-") as folder:
        page, script = Path(folder) / "floor_page.py", Path(folder) / "frame_floor.py"
        page.write_text(FRAME_PAGE)
        (Path(folder) / "lesson_pages").symlink_to(
            ROOT / "lesson_pages"
        )  # st.Page reads the lessons' files beside the script
        script.write_text(FRAME_APP.format(page=str(page), app=str(ROOT / "app.py")))
        with (
            StreamlitServer(script=script, log_path=ARTIFACTS / "streamlit-floor.log") as server,
            proxy(server, "frame-floor") as proxied,
        ):
            first_load(browser, server.url + FRAME_FLOOR_PATH, STREAMLIT_PAINTED, 1)
            yield server, proxied


# ---- measuring -----------------------------------------------------------------------------------------------


def first_load(browser, url: str, condition: str, arg) -> float | None:
    """Seconds to paint on a fresh context, the first time the server sees this text (or this page)."""
    context = new_context(browser)
    try:
        result = load(context, url, condition, arg)
    finally:
        context.close()
    return None if result.paint_ms is None else result.paint_ms / 1000


def summary(cold: list[Load], warm: list[Load]) -> dict:
    def seconds(loads: list[Load]) -> float | None:
        if not loads or any(item.paint_ms is None for item in loads):
            return None
        return median([item.paint_ms for item in loads]) / 1000

    script = [item.script_done_ms for item in cold if item.script_done_ms is not None]
    return {
        "script_done_s": median(script) / 1000 if script else None,
        "total_bytes": median([item.total_bytes for item in cold]),
        # The view's data: what the app sends over its WebSocket, or BertViz's HTML document (which holds it).
        "data_bytes": median([item.websocket_bytes or item.document_bytes for item in cold]),
        "cold_s": seconds(cold),
        "warm_s": seconds(warm),
        "errors": sorted({item.error for item in cold + warm if item.error}),
        "accept_encoding": sorted({value for item in cold for value in item.accept_encoding}),
        "bytes_by_encoding": cold[0].bytes_by_encoding if cold else {},  # the first cold load's
        "off_loopback": sorted({url for item in cold + warm for url in item.off_loopback}),
    }


def show(value, unit: str = "") -> str:
    if value is None:
        return f">{LIMIT_S}"
    if unit == "MB":
        return f"{value / 1e6:.2f}"
    return f"{value:.2f}"


def compare_at(length: int, browser, app: tuple, frame: tuple, bertviz: tuple, repeats: int) -> dict:
    """The app's multi-head page (directly and through the proxy, each loaded in turns with the app's frame floor
    served the same way), BertViz's head view and its model view (through nginx), on one text of `length` tokens.
    `app` and `frame`: (server, its proxy); `bertviz`: (site, its folder, the Hugging Face model, the tokenizer)."""
    (server, proxied), (site, site_folder, hf_model, tokenizer) = app, bertviz
    text = text_of_exactly(tokenizer, length)
    write_bertviz_pages(site_folder, hf_model, tokenizer, text, length)
    link = f"/multihead?text={quote(text)}"
    first = first_load(browser, server.url + link, STREAMLIT_PAINTED, 1)
    rows = {
        "app multihead": beside_the_frame(browser, server.url + link, 1, frame[0].url + FRAME_FLOOR_PATH, repeats),
        "app multihead" + VIA_PROXY: beside_the_frame(
            browser, proxied.url + link, 1, frame[1].url + FRAME_FLOOR_PATH, repeats
        ),
        "bertviz head": summary(
            *measure(browser, f"{site.url}/head_view-{length}.html", BERTVIZ_PAINTED, None, repeats)
        ),
        "bertviz model": summary(
            *measure(browser, f"{site.url}/model_view-{length}.html", BERTVIZ_PAINTED, None, repeats)
        ),
    }
    rows["app multihead"]["first_s"] = first
    for html in site_folder.glob(f"*-{length}.html"):
        html.unlink()
    return rows


def time_every_page(browser, server, text: str, repeats: int, views: dict, frame_url: str) -> dict:
    """Every view (a page as its link opens it, or one of its tabs) on one text (the model run is shared
    between pages), each loaded in turns with the app's frame floor at `frame_url` (`beside_the_frame`)."""
    rows = {}
    for name, lesson in views.items():
        url, plots = server.url + view_link(lesson, text), charts_awaited(lesson)
        first = first_load(browser, url, STREAMLIT_PAINTED, plots)
        rows[name] = beside_the_frame(browser, url, plots, frame_url, repeats)
        rows[name]["first_s"] = first
        print_row(name, rows[name])
    return rows


def time_pages_at(length: int, browser, server, frame_url: str, tokenizer, arguments) -> tuple[dict, dict]:
    """Every page (the ones of --only) on a text of `length` tokens, and unless --no-tabs their other tabs."""
    chosen = set(arguments.only.split(",")) if arguments.only else None
    pages, tabs = (
        {name: view for name, view in views.items() if chosen is None or name in chosen}
        for views in (LESSONS, {} if arguments.no_tabs else OTHER_TABS)
    )
    text = smollm2_text_of_exactly(length) if arguments.tokens_of == "smollm2" else text_of_exactly(tokenizer, length)
    print(f"\nEvery page at {length} tokens of {arguments.tokens_of} (first: the page's own caches are cold)")
    print(f"{'page':<44}{COLUMNS}{FRAME_COLUMNS}")
    page_rows = time_every_page(browser, server, text, arguments.repeats, pages, frame_url)
    tab_rows = {}
    if tabs:
        print(f"\nEvery other tab at {length} tokens (a tab runs once it is opened)")
        tab_rows = time_every_page(browser, server, text, arguments.repeats, tabs, frame_url)
    return page_rows, tab_rows


def beside_the_frame(browser, url: str, plots: int, frame_url: str, repeats: int) -> dict:
    """The view at `url` measured as `measure` measures it (`summary`), with cold loads of the frame floor at
    `frame_url` in turns with its own: each round loads both cold, in fresh contexts, the frame first in every other
    round. Adds the frame's median cold paint (frame_cold_s) and how much later the view painted (beyond_frame_s).
    A view that fails to paint once is not loaded again."""
    cold: list[Load] = []
    warm: list[Load] = []
    frame: list[Load] = []
    for round_number in range(repeats):
        for frame_now in (True, False) if round_number % 2 == 0 else (False, True):
            context = new_context(browser)
            try:
                if frame_now:
                    frame.append(load(context, frame_url, STREAMLIT_PAINTED, 1))
                else:
                    cold.append(load(context, url, STREAMLIT_PAINTED, plots))
                    if cold[-1].paint_ms is not None:
                        warm.append(load(context, url, STREAMLIT_PAINTED, plots))
            finally:
                context.close()
        if cold and cold[-1].paint_ms is None:
            break
    row = summary(cold, warm)
    row["frame_cold_s"] = summary(frame, [])["cold_s"]
    both = row["cold_s"] is not None and row["frame_cold_s"] is not None
    row["beyond_frame_s"] = row["cold_s"] - row["frame_cold_s"] if both else None
    return row


def print_row(name: str, row: dict, length: int | str | None = None) -> None:
    lead = f"{length:>6}  {name:<26}" if length is not None else f"{name:<44}"
    encodings = ", ".join(f"{key} {size / 1e6:.2f}" for key, size in sorted(row["bytes_by_encoding"].items()))
    print(
        f"{lead}{show(row['total_bytes'], 'MB'):>9}{show(row['data_bytes'], 'MB'):>9}"
        f"{show(row['first_s']) if 'first_s' in row else '':>9}{show(row['cold_s']):>9}{show(row['warm_s']):>9}"
        f"{show(row['script_done_s']) if row['script_done_s'] is not None else '':>9}"
        f"{beside_frame(row) if 'frame_cold_s' in row else ' ' * 18}  {'; '.join(row['errors'])}"
        f"{'  OFF LOOPBACK: ' + ', '.join(row['off_loopback']) if row['off_loopback'] else ''}  [{encodings}]"
    )


COLUMNS = f"{'total MB':>9}{'data MB':>9}{'first s':>9}{'cold s':>9}{'warm s':>9}{'script s':>9}"
FRAME_COLUMNS = f"{'frame s':>9}{'beyond':>9}"  # the frame floor's cold paint beside the page, the page's lead


def beside_frame(row: dict) -> str:
    frame, beyond = row["frame_cold_s"], row["beyond_frame_s"]
    return f"{show(frame):>9}{f'{beyond:+.2f}' if beyond is not None else 'n/a':>9}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lengths", default=",".join(map(str, LENGTHS)), help='"" skips BertViz')
    parser.add_argument("--no-floor", action="store_true", help="skip measuring Streamlit's floor")
    parser.add_argument("--no-pages", action="store_true", help="skip timing every page")
    parser.add_argument("--page-lengths", default="512", help="text lengths, in tokens, to time every page at")
    parser.add_argument("--tokens-of", choices=("minilm", "smollm2"), default="minilm", help="whose tokens")
    parser.add_argument("--no-tabs", action="store_true", help="time each page as opened, not its other tabs")
    parser.add_argument("--only", help="comma-separated views to time, e.g. tokenization,causal/A trained decoder")
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    lengths = [int(value) for value in arguments.lengths.split(",") if value]
    page_lengths = [int(value) for value in arguments.page_lengths.split(",") if value]

    fetch_vendor_libraries()
    pretrained = load_pretrained(device="cpu")
    hf_model = BertModel.from_pretrained(str(pretrained.folder), attn_implementation="eager").eval()
    site_folder = Path(tempfile.mkdtemp(prefix="bertviz-site-"))
    site_folder.chmod(0o755)  # nginx's workers, run by root, read it as nobody
    shutil.copytree(VENDOR, site_folder / "vendor")
    # BertViz's libraries (all the folder holds yet) compressed ahead of time, as the hall sends Streamlit's.
    compress_ahead(site_folder, brotli_ahead_possible())
    results: dict[str, Any] = {  # written as JSON with --json
        "load_average_before": load_average(),
        "lengths": {},
        "floor": {},
        "tokens_of": arguments.tokens_of,
        "lesson_pages": {},  # {length: {view: row}}
        "tabs": {},
    }
    print(f"load average before: {results['load_average_before']}")
    with (
        StreamlitServer(log_path=ARTIFACTS / "streamlit-benchmark.log") as server,
        proxy(server, "app") as proxied,
        static_site(site_folder) as site,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(**chromium_launch_options())
        with frame_floor_server(browser) as frame:  # the app's frame, beside the pages too
            if lengths:
                print(f"{'tokens':>6}  {'view':<26}{COLUMNS}{FRAME_COLUMNS}  [MB by Content-Encoding, first cold load]")
            for length in lengths:
                bertviz = (site, site_folder, hf_model, pretrained.tokenizer)
                rows = compare_at(length, browser, (server, proxied), frame, bertviz, arguments.repeats)
                for name, row in rows.items():
                    print_row(name, row, length)
                results["lengths"][length] = rows
            if (lengths or not arguments.no_pages) and not arguments.no_floor:
                results["floor"] = streamlit_floor(browser, arguments.repeats, frame)
                for name, row in results["floor"].items():
                    print_row(name, row, "floor")
            if not arguments.no_pages:
                for length in page_lengths:
                    results["lesson_pages"][length], results["tabs"][length] = time_pages_at(
                        length, browser, server, frame[0].url + FRAME_FLOOR_PATH, pretrained.tokenizer, arguments
                    )
        browser.close()
    shutil.rmtree(site_folder, ignore_errors=True)
    results["load_average_after"] = load_average()
    print(f"load average after: {results['load_average_after']}")
    report_goals(results)
    if arguments.json:
        arguments.json.write_text(json.dumps(results, indent=2))


def report_floor(length: int, bertviz: dict, floor: dict) -> None:
    """Where BertViz's head view beats even a Streamlit page that shows nothing, say so."""
    empty, one_chart = floor.get("empty page"), floor.get("one 2×2 chart")
    if not empty or not one_chart or bertviz["cold_s"] is None:
        return
    if bertviz["cold_s"] < empty["cold_s"]:
        print(
            f"        BertViz paints in {bertviz['cold_s']:.2f} s: before a Streamlit page holding only a title "
            f"({empty['cold_s']:.2f} s in this run)"
        )
    if bertviz["total_bytes"] < one_chart["total_bytes"]:
        print(
            f"        BertViz sends {bertviz['total_bytes'] / 1e6:.2f} MB: less than a Streamlit page holding one "
            f"2×2 plotly chart ({one_chart['total_bytes'] / 1e6:.2f} MB in this run)"
        )


def report_goals(results: dict) -> None:
    rows = [*results["floor"].values(), *(row for by_view in results["lengths"].values() for row in by_view.values())]
    offered = sorted({value for row in rows for value in row["accept_encoding"]})
    print(f"\nChromium's Accept-Encoding: {' | '.join(offered)}")
    print("\nGoals")
    for length, rows in results["lengths"].items():
        theirs = rows["bertviz head"]
        for way in ("", VIA_PROXY):
            ours = rows["app multihead" + way]
            fewer_total = ours["total_bytes"] < theirs["total_bytes"]
            fewer_data = ours["data_bytes"] < theirs["data_bytes"]
            sooner = ours["cold_s"] is not None and (theirs["cold_s"] is None or ours["cold_s"] < theirs["cold_s"])
            behind = ours["beyond_frame_s"]
            near_frame = (
                "n/a" if behind is None else f"{'PASS' if behind <= FLOOR_MARGIN_SECONDS else 'MISS'} ({behind:+.2f} s)"
            )
            print(
                f"  {length:>3} tokens, multihead{way or ' direct'} vs BertViz head view (via nginx): fewer bytes "
                f"(cold total) {'PASS' if fewer_total else 'MISS'}, fewer bytes (data) "
                f"{'PASS' if fewer_data else 'MISS'}, paints sooner (cold) {'PASS' if sooner else 'MISS'}; "
                f"cold paint within {FLOOR_MARGIN_SECONDS} s of the app frame floor{way}, loaded in turns: {near_frame}"
            )
        report_floor(length, theirs, results["floor"])
    one_chart = results["floor"].get("one 2×2 chart", {}).get("cold_s")
    framed = results["floor"].get(FRAME_FLOOR, {}).get("cold_s")
    for length in results["lesson_pages"]:
        for views, what in ((results["lesson_pages"][length], "page"), (results["tabs"].get(length, {}), "other tab")):
            for kind in ("first_s", "cold_s", "warm_s") if views else ():
                slow = {
                    name: round(row[kind], 2) if row[kind] is not None else None
                    for name, row in views.items()
                    if row[kind] is None or row[kind] > ALL_PAGES_GOAL_SECONDS
                }
                print(
                    f"  every {what} paints in <= {ALL_PAGES_GOAL_SECONDS:.0f} s at {length} tokens ({kind[:-2]}): "
                    f"{'PASS' if not slow else 'MISS ' + json.dumps(slow, ensure_ascii=False)}"
                )
            if views:
                beyond = {name: row["beyond_frame_s"] for name, row in views.items()}
                late = {
                    name: None if gap is None else round(gap, 2)
                    for name, gap in beyond.items()
                    if gap is None or gap > FLOOR_MARGIN_SECONDS
                }
                measured = [gap for gap in beyond.values() if gap is not None]
                print(
                    f"  every {what} paints cold within {FLOOR_MARGIN_SECONDS} s of the app's frame floor, loaded "
                    f"in turns with it, at {length} tokens: {min(measured, default=float('nan')):+.2f} to "
                    f"{max(measured, default=float('nan')):+.2f} s, "
                    f"{'PASS' if not late else 'MISS ' + json.dumps(late, ensure_ascii=False)}"
                )
            if views and one_chart is not None and framed is not None:
                behind = [row["cold_s"] - one_chart for row in views.values() if row["cold_s"] is not None]
                print(
                    f"    (informational) the same views against the bare one-chart floor, measured at the run's "
                    f"start ({one_chart:.2f} s cold; the frame around it {framed:.2f} s): "
                    f"{min(behind, default=float('nan')):+.2f} to {max(behind, default=float('nan')):+.2f} s"
                )


if __name__ == "__main__":
    main()
