"""What the browser benchmarks share: texts of an exact token count, the app served for real, Chromium, and
one measured page load (bytes received and milliseconds until the figures are painted).

Bytes are counted as Chromium's network layer saw them: every HTTP response's encoded size, headers
included (CDP `Network.loadingFinished.encodedDataLength`: compressed, where the server compressed it), plus
the payload of every WebSocket frame the page received (Streamlit sends its figures over a WebSocket, with
no compression: server.enableWebsocketCompression is off by default). Each load also notes the encodings the
browser asked for (Accept-Encoding) and the bytes that came back in each (Content-Encoding).
Time runs from the start of navigation (`performance.timeOrigin`) to the animation frame in which the page's
own "painted" condition first held.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from harness.browser import PAINTED, VIEWPORT, is_loopback
from harness.server import StreamlitServer, chromium_launch_options  # noqa: F401  (re-exported)

ROOT = Path(__file__).resolve().parents[1]

ARTIFACTS = ROOT / "test-artifacts"
SENTENCE = "The quick brown fox jumps over the lazy dog while attention heads watch every word. "  # as page_speed.py
LIMIT_MS = 120_000  # a view not painted by then is reported as such


@dataclass
class Load:
    """One page load as the browser saw it."""

    paint_ms: float | None  # None: not painted within the limit (or the tab crashed)
    http_bytes: int
    websocket_bytes: int
    document_bytes: int  # the HTML document alone
    off_loopback: list[str] = field(default_factory=list)
    error: str = ""
    script_done_ms: float | None = None  # Streamlit pages: when the server's run ended (the rest is drawing)
    accept_encoding: list[str] = field(default_factory=list)  # what the browser offered
    bytes_by_encoding: dict[str, int] = field(default_factory=dict)  # HTTP bytes by the server's Content-Encoding

    @property
    def total_bytes(self) -> int:
        return self.http_bytes + self.websocket_bytes


def painted_when(condition: str) -> str:
    """A function for `wait_for_function`: performance.now() once `condition(arg)` holds, else false."""
    return f"(arg) => (({condition})(arg) ? performance.now() : false)"


STREAMLIT_PAINTED = painted_when(PAINTED)
# Notes when Streamlit's script run first ends, to split a load into the server's part and the browser's.
SCRIPT_DONE = """window.__scriptDone = null;
new MutationObserver(() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (window.__scriptDone === null && app && app.dataset.testScriptState === 'notRunning')
    window.__scriptDone = performance.now();
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-test-script-state']});"""


def load(context, url: str, condition: str, arg=None, limit_ms: int = LIMIT_MS) -> Load:
    """Open `url` in a new tab of `context` and measure it. The tab is closed afterwards."""
    page = context.new_page()
    network = context.new_cdp_session(page)
    network.send("Network.enable")
    sizes: dict[str, int] = {}
    documents: dict[str, str] = {}
    websocket = [0]
    requests: list[str] = []
    network.on(
        "Network.loadingFinished", lambda event: sizes.__setitem__(event["requestId"], event["encodedDataLength"])
    )
    network.on(
        "Network.requestWillBeSent",
        lambda event: documents.__setitem__(event["requestId"], event["type"]) if event.get("type") else None,
    )
    encodings: dict[str, str] = {}
    accepted: set[str] = set()
    network.on(
        "Network.responseReceived",
        lambda event: encodings.__setitem__(
            event["requestId"], header(event["response"]["headers"], "content-encoding") or "identity"
        ),
    )
    network.on(
        "Network.requestWillBeSentExtraInfo",
        lambda event: accepted.add(header(event["headers"], "accept-encoding") or "(none)"),
    )
    page.on(
        "websocket",
        lambda socket: socket.on(
            "framereceived", lambda payload: websocket.__setitem__(0, websocket[0] + len(payload))
        ),
    )
    page.on("request", lambda request: requests.append(request.url))
    page.add_init_script(SCRIPT_DONE)
    paint_ms, script_ms, error = None, None, ""
    try:
        page.goto(url, wait_until="commit", timeout=limit_ms)
        handle = page.wait_for_function(condition, arg=arg, polling="raf", timeout=limit_ms)
        paint_ms = float(handle.json_value())
        script_ms = page.evaluate("() => window.__scriptDone")
        page.wait_for_timeout(500)  # late responses (a font, the favicon) still count as bytes sent
    except Exception as problem:
        error = f"{type(problem).__name__}: {str(problem).splitlines()[0][:120]}"
    document = sum(size for request, size in sizes.items() if documents.get(request) == "Document")
    by_encoding: dict[str, int] = {}
    for request, size in sizes.items():
        encoding = encodings.get(request, "identity")
        by_encoding[encoding] = by_encoding.get(encoding, 0) + size
    result = Load(
        paint_ms,
        sum(sizes.values()),
        websocket[0],
        document,
        [url for url in requests if not is_loopback(url)],
        error,
        script_ms,
        sorted(accepted),
        by_encoding,
    )
    try:
        page.close()
    except Exception:
        pass
    return result


def header(headers: dict[str, str], name: str) -> str:
    """A header's value from CDP's headers (names as the server or browser spelt them), "" if absent."""
    return next((value for key, value in headers.items() if key.lower() == name), "")


def measure(browser, url: str, condition: str, arg, repeats: int) -> tuple[list[Load], list[Load]]:
    """`repeats` cold loads, each in a fresh context followed by a warm load in it. A view that fails to
    paint once is not loaded again (it would only fail again, slowly)."""
    cold, warm = [], []
    for _ in range(repeats):
        context = new_context(browser)
        try:
            cold.append(load(context, url, condition, arg))
            if cold[-1].paint_ms is None:
                break
            warm.append(load(context, url, condition, arg))
        finally:
            context.close()
    return cold, warm


def view_link(view, text: str) -> str:
    """The address (after the server's) that opens `view` (a harness.views.Lesson) on `text`, as a shared link does."""
    query = "".join(f"&{key}={quote(str(value))}" for key, value in view.query.items())
    return f"/{view.path}?text={quote(text)}{query}"


def charts_awaited(view) -> int:
    """The charts a load of `view` waits for before it counts as painted: one, if the view draws any."""
    return min(view.charts, 1)


def status_kb(pid: int | str, field: str) -> int:
    """A field of /proc/<pid>/status ("self": this process), in the KiB /proc counts in; 0 if absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def megabytes(kibibytes: int) -> float:
    """/proc counts in KiB (1,024 bytes); the goals are in MB (10⁶ bytes), as the issues state them."""
    return kibibytes * 1024 / 1e6


def reset_peak(pid: int | str) -> None:
    """Start the process's VmHWM afresh (Linux: 5 to clear_refs), so that what follows has a peak of its own."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def text_of_exactly(tokenizer, num_tokens: int) -> str:
    """A text that the tokenizer turns into exactly num_tokens tokens, [CLS] and [SEP] included."""
    ids = tokenizer(SENTENCE * num_tokens, add_special_tokens=False, verbose=False)["input_ids"]
    text = tokenizer.decode(ids[: num_tokens - 2])
    assert len(tokenizer(text)["input_ids"]) == num_tokens, "decoded text re-tokenized to another length"
    return text


def smollm2_text_of_exactly(num_tokens: int) -> str:
    """A text that SmolLM2's tokenizer (the app's, from the GGUF file) turns into exactly num_tokens tokens."""
    from lessons.common.llm.smollm2 import load_chat_model

    chat = load_chat_model()
    text = chat.tokenizer.decode(chat.encode(SENTENCE * num_tokens)[:num_tokens])
    assert len(chat.encode(text)) == num_tokens, "decoded text re-tokenized to another length"
    return text


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def new_context(browser):
    return browser.new_context(viewport=VIEWPORT)


def seconds_since(start: float) -> float:
    return time.perf_counter() - start
