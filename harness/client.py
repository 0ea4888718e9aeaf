"""A minimal Streamlit client over the app's own websocket, for load tests: what a browser tab sends and
receives, without a browser drawing anything.

A browser tab connects to `/_stcore/stream`, asks for a run of a page with its query string (a protobuf
`BackMsg.rerun_script`), and receives the page as `ForwardMsg`s (new elements, the new query string, and
`script_finished` at the end). Typing into a widget is another `rerun_script` carrying that widget's new
value; pressing a button is one carrying the button's `trigger_value` (true for this one run only, which is
how Streamlit tells a click from a button left alone). That is all this client does; it keeps each run's
elements for the caller to check.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlencode

import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import ClientConnection
from websockets.typing import Origin, Subprotocol

SIDEBAR = 1  # the first number of a delta path: 0 is the main area, 1 the sidebar
FINISHED_SUCCESSFULLY, FINISHED_EARLY_FOR_RERUN = 0, 2
# The header by which the lecture hall's nginx (deploy/nginx/anatomy.conf.template) names the replica that answered.
REPLICA_HEADER = "X-Anatomy-Replica"


@dataclass
class PageRun:
    """What one run of a page sent: its elements, with where they went."""

    elements: list[tuple[int, Element]] = field(default_factory=list)  # (container, element)
    received_bytes: int = 0
    replica: str = ""  # behind the lecture hall's nginx: the replica that ran it

    def of_kind(self, kind: str, container: int | None = None) -> list:
        return [
            getattr(element, kind)
            for where, element in self.elements
            if element.WhichOneof("type") == kind and (container is None or where == container)
        ]

    @property
    def exceptions(self) -> list[str]:
        return [exception.message for exception in self.of_kind("exception")]

    @property
    def errors(self) -> list[str]:
        return [alert.body for alert in self.of_kind("alert") if alert.format == Alert.ERROR]

    def text_area(self, label: str):
        """The sidebar's text area of that label (its `value` is set only when the server set it)."""
        return next(area for area in self.of_kind("text_area", SIDEBAR) if area.label == label)

    def button(self, key: str):
        """The button drawn with `key` (Streamlit ends a keyed widget's id with its key)."""
        return next(button for button in self.of_kind("button") if button.id.endswith(f"-{key}"))

    def widget_ids(self) -> set[str]:
        return {widget.id for _, element in self.elements if (widget := _widget(element)) is not None}

    def form(self) -> tuple[Any, Any] | None:
        """The page's first form as (its answer field, its submit button): a radio or number input and the button
        drawn by st.form_submit_button; None when the page shows no form."""
        fields = [field for field in self.of_kind("radio") + self.of_kind("number_input") if field.form_id]
        submitters = [button for button in self.of_kind("button") if button.is_form_submitter]
        return (fields[0], submitters[0]) if fields and submitters else None

    def messages(self, container: int | None = None) -> list[str]:
        """The text of every markdown, caption, alert, code block and literal text, in the order they came (an element
        later replaced by another in the same place, such as a notice while waiting, is kept too)."""
        texts = []
        for where, element in self.elements:
            kind = element.WhichOneof("type")
            if container is not None and where != container:
                continue
            if kind in ("markdown", "alert"):
                texts.append(getattr(element, kind).body)
            elif kind == "code":
                texts.append(element.code.code_text)
            elif kind == "text":
                texts.append(element.text.body)
        return texts

    def figure_labels(self) -> list[str]:
        """Every string a plotly figure carries as a category, tick text or cell text (as the browser check)."""
        labels: list[str] = []
        for chart in self.of_kind("plotly_chart"):
            spec = json.loads(chart.spec)
            for trace in spec.get("data", []):
                for key in ("x", "y", "text", "customdata"):
                    _strings(trace.get(key), labels)
            for name, axis in spec.get("layout", {}).items():
                if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                    _strings(axis.get("ticktext"), labels)
                    _strings(axis.get("categoryarray"), labels)
        return labels


def _widget(element: Element) -> Any:
    """The widget an element is, or None when it is not one (a widget's proto has an id)."""
    kind = element.WhichOneof("type")
    inner = getattr(element, kind) if kind else None
    return inner if inner is not None and "id" in inner.DESCRIPTOR.fields_by_name and inner.id else None


def _strings(values, into: list[str]) -> None:
    if isinstance(values, str):
        into.append(values)
    elif isinstance(values, list):
        for value in values:
            _strings(value, into)
    # dicts are typed numeric arrays ({"dtype", "bdata"}): no labels in them


def remember_cookies(cookies: dict[str, str], set_cookie_headers: list[str]) -> None:
    """Keep what `Set-Cookie` headers set, as a browser does (one host here: domains and paths do not matter)."""
    for header in set_cookie_headers:
        for name, morsel in SimpleCookie(header).items():
            cookies[name] = morsel.value


def cookie_header(cookies: dict[str, str]) -> dict[str, str]:
    """The `Cookie` header a browser would send with these cookies (none when there are none)."""
    return {"Cookie": "; ".join(f"{name}={value}" for name, value in cookies.items())} if cookies else {}


class Tab:
    """One browser tab's conversation with the server: one Streamlit session. Like a browser, it keeps the
    cookies the server sets (the lecture hall's proxy pins a browser to one replica by a cookie)."""

    def __init__(self, base_url: str, cookies: dict[str, str] | None = None):
        self.base_url = base_url
        self.cookies = {} if cookies is None else cookies  # shared with the caller's own requests, if given
        self.query_string = ""
        self.page_script_hash = ""
        self.replica = ""  # what the proxy's REPLICA_HEADER said when the websocket opened
        self._socket: ClientConnection | None = None
        self._cache: dict[str, ForwardMsg] = {}
        # A browser holds the value of every text field it shows (as drawn, as set by the server, as typed) and
        # sends it with every rerun while the field is drawn (the sidebar's text, on every page): without it the
        # server would forget the value after a page switch.
        self._held_text: dict[str, str] = {}
        self._drawn: set[str] = set()  # the widgets of the latest run, by id

    async def open(self, page: str, query: dict, timeout: float) -> PageRun:
        """Connect as a new tab on `/page?query` and return the finished run."""
        await self.close()
        self._cache.clear()  # a new tab starts with nothing cached
        self._held_text.clear()
        self.query_string = urlencode(query)
        self._socket = await websockets.connect(
            self.base_url.replace("http", "ws", 1) + "/_stcore/stream",
            subprotocols=[Subprotocol("streamlit")],
            origin=Origin(self.base_url),
            max_size=None,
            additional_headers=cookie_header(self.cookies),
        )
        handshake = self._socket.response
        if handshake is not None:
            remember_cookies(self.cookies, handshake.headers.get_all("Set-Cookie"))
            self.replica = handshake.headers.get(REPLICA_HEADER, "")
        message = BackMsg()
        message.rerun_script.query_string = self.query_string
        message.rerun_script.page_name = page
        return await self._run(message, timeout)

    async def navigate(self, page: str, query: dict, timeout: float) -> PageRun:
        """Go to another page in the same session, as the sidebar's navigation does: the session keeps what it
        chose (its text), and `query` carries only the page's own choices."""
        self.query_string = urlencode(query)
        message = self._rerun()
        message.rerun_script.page_script_hash = ""
        message.rerun_script.page_name = page
        return await self._run(message, timeout)

    async def set_text(self, widget_id: str, value: str, timeout: float) -> PageRun:
        """Type `value` into the text widget `widget_id` (as Ctrl+Enter in a text area does)."""
        self._held_text[widget_id] = value
        return await self._run(self._rerun(), timeout)

    async def press(self, button_id: str, timeout: float) -> PageRun:
        """Click the button `button_id`: its on_click callback runs, then the page with the button true."""
        message, state = self._rerun_with_widget(button_id)
        state.trigger_value = True
        return await self._run(message, timeout)

    async def submit(self, field, answer: str | float, button, timeout: float) -> PageRun:
        """Answer a form's field (a radio by the text of an option, a number input by a number) and press its
        submit button: a browser holds a form's values back and sends them with the press, in one rerun."""
        message, state = self._rerun_with_widget(field.id)
        if isinstance(answer, str):
            state.string_value = answer  # a radio's value is its option as drawn (streamlit's RadioSerde)
        else:
            state.double_value = answer  # every number input's value travels as a double
        pressed = message.rerun_script.widget_states.widgets.add()
        pressed.id = button.id
        pressed.trigger_value = True
        return await self._run(message, timeout)

    async def rerun(self, timeout: float) -> PageRun:
        """Run the current page again in the same session, as the R key does."""
        return await self._run(self._rerun(), timeout)

    def _rerun(self) -> BackMsg:
        message = BackMsg()
        message.rerun_script.query_string = self.query_string
        message.rerun_script.page_script_hash = self.page_script_hash
        for widget_id, value in self._held_text.items():
            if widget_id in self._drawn:
                state = message.rerun_script.widget_states.widgets.add()
                state.id, state.string_value = widget_id, value
        return message

    def _rerun_with_widget(self, widget_id: str):
        """A rerun of the current page carrying one widget's new state (the caller sets its value)."""
        message = self._rerun()
        state = message.rerun_script.widget_states.widgets.add()
        state.id = widget_id
        return message, state

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
            self._socket = None

    def _hold_text_fields(self, run: PageRun) -> None:
        """What the browser's text fields now hold: a value the server set, else what they held, else the default."""
        for text_field in run.of_kind("text_area") + run.of_kind("text_input"):
            if text_field.set_value:
                self._held_text[text_field.id] = text_field.value
            else:
                self._held_text.setdefault(text_field.id, text_field.default)

    @property
    def _open_socket(self) -> ClientConnection:
        if self._socket is None:
            raise RuntimeError("the tab is not open: call open() first")
        return self._socket

    async def _run(self, message: BackMsg, timeout: float) -> PageRun:
        await self._open_socket.send(message.SerializeToString())
        return await asyncio.wait_for(self._receive_run(), timeout)

    async def _receive_run(self) -> PageRun:
        run = PageRun(replica=self.replica)
        while True:
            data = await self._open_socket.recv()
            run.received_bytes += len(data)
            forward = ForwardMsg()
            forward.ParseFromString(data)
            if forward.hash:  # the server sends this content only once per session and refers to it later
                self._cache[forward.hash] = forward
            kind = forward.WhichOneof("type")
            if kind == "ref_hash":  # "the element you already have": take it from the cache, here
                cached, kind = self._cache[forward.ref_hash], "delta"
                forward = ForwardMsg(metadata=forward.metadata, delta=cached.delta)
            if kind == "new_session":
                run = PageRun(received_bytes=run.received_bytes, replica=self.replica)  # a rerun starts over
            elif kind == "navigation":  # which page ran: a rerun must name it, or the default page runs
                self.page_script_hash = forward.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query_string = forward.page_info_changed.query_string
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                run.elements.append((forward.metadata.delta_path[0], forward.delta.new_element))
            elif kind == "script_finished" and forward.script_finished != FINISHED_EARLY_FOR_RERUN:
                if forward.script_finished != FINISHED_SUCCESSFULLY:
                    raise RuntimeError(f"the script ended with status {forward.script_finished}")
                self._drawn = run.widget_ids()
                self._hold_text_fields(run)
                return run
