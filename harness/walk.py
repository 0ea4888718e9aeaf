"""A seeded random walk through the app in a real browser: the test that would have found what a newcomer hit.

AppTest drives widgets through Python, so it never sees what the browser's own widgets do: keep a label after
their options change, send back text where a number was stored. This walk clicks like a person. On every page
it picks a visible widget (selectboxes, segmented controls, sliders, tabs, toggles, buttons, radios,
multiselects, number and text fields, expanders, the sidebar's text and model fields, the toy matrix's cells)
and acts on it with an ordinary or an odd value, switching pages and texts in between. After every step:

* no exception box on the page, and no traceback in the server's log;
* every picker holds one of its own options (a picker that still shows an old text's token fails here);
* a picker that names a token ("5: arrow") names the token at that position of the text in the sidebar;
* the address reopened by someone else (a tab in a fresh browser context: a new session that remembers
  nothing) shows the same view: the same page and heading, the same text and model in use in the sidebar, the
  same open tabs, the same value in every picker, slider, switch and row of buttons of the lesson, and the
  same content in its fields (`VIEW`). With an exercise open only the page, the sidebar and the exercise count:
  the lesson waits for an answer, which belongs to the session, not to the link. A field holding text or a
  number typed by hand that no link may carry (the page says why; the link keeps the last usable value) makes
  a view that cannot travel: it is not compared.

Everything random comes from one seed, so a failure is replayed by running the same seed again; the failure
message lists the steps that led to it.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

SETTLE_TIMEOUT_MS = 60_000  # a run may load the model or train a few seconds
ACTION_TIMEOUT_MS = 5_000  # reaching one element: longer means it vanished in a redraw

SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (app.dataset.testConnectionState !== 'CONNECTED') return false;
  return !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]');
}"""

# What defines the view on screen, read the same way from the walk's tab and from the address reopened elsewhere.
VIEW = """() => {
  const shown = (node) => node.getClientRects().length > 0;
  const label = (node) => {
    const found = node.querySelector('[data-testid="stWidgetLabel"]');
    return found ? found.innerText.trim() : '';
  };
  const main = document.querySelector('[data-testid="stMain"]');
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  const texts = (nodes, read) => [...nodes].map(read).join(', ');
  const widgets = (selector) => [...main.querySelectorAll(selector)]
    .filter(node => shown(node) && !node.closest('[data-testid="stForm"]'));  // an exercise's answer is not linked
  const view = [['page', location.pathname], ['heading', (main.querySelector('h1') || {}).innerText || '']];
  const text = document.querySelector('textarea[aria-label="Text to study"]');
  view.push(['text', text ? text.value : null]);
  const model = [...(sidebar ? sidebar.querySelectorAll('[data-testid="stCaptionContainer"]') : [])]
    .map(node => node.innerText).find(caption => caption.includes(' layers · '));
  view.push(['model in use', model || null]);
  for (const tab of widgets('[role="tab"][aria-selected="true"]')) view.push(['tab', tab.innerText.trim()]);
  for (const box of widgets('[data-testid="stSelectbox"]'))
    view.push([label(box), box.querySelector('input[role="combobox"]').value]);
  for (const slider of widgets('[data-testid="stSlider"]'))
    view.push([label(slider), texts(
      slider.querySelectorAll('input[type="range"]'), thumb => thumb.getAttribute('aria-valuetext'))]);
  for (const group of widgets('[data-testid="stButtonGroup"]'))
    view.push([label(group), texts(group.querySelectorAll('button[aria-checked="true"]'), b => b.innerText.trim())]);
  for (const toggle of widgets('[data-testid="stCheckbox"]'))
    view.push([toggle.innerText.trim(), String(toggle.querySelector('input').checked)]);
  for (const radio of widgets('[data-testid="stRadio"]'))
    view.push([label(radio), texts(radio.querySelectorAll('input:checked'), i => i.closest('label').innerText.trim())]);
  for (const picker of widgets('[data-testid="stMultiSelect"]'))
    view.push([label(picker), texts(picker.querySelectorAll('[data-baseweb="tag"]'), tag => tag.innerText.trim())]);
  // What the lesson's fields hold: a link carries only what a field may hold (see `view_elsewhere`).
  for (const field of widgets('[data-testid="stTextInput"], [data-testid="stNumberInput"]'))
    view.push(['field ' + label(field), field.querySelector('input').value]);
  // An exercise's answer belongs to the session, not to the link: while one is open, the lesson shows or holds
  // back its views according to an answer given here, so only the page, the sidebar and the exercise count.
  const exercise = view.find(([name]) => name === 'Check yourself');
  const kept = exercise && exercise[1] !== 'Not now' ? view.slice(0, 4).concat([exercise]) : view;
  // Each thing once, in a fixed order: a redraw may leave a widget of the previous layout in the page a moment.
  return [...new Set(kept.map(item => JSON.stringify(item)))].sort().map(item => JSON.parse(item));
}"""

PAINTED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (app.dataset.testConnectionState !== 'CONNECTED') return false;
  return !!document.querySelector('h1') && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]');
}"""  # SETTLED, on a page opened anew: its lesson has drawn its heading

TEXTS = [
    "time flies like an arrow",
    "the bank raised rates",
    "hi there",
    "fruit flies like a banana",
    "The quick brown fox jumps over the lazy dog while attention heads watch every word.",
    "",
    "   ",
    "I 😍 transformers 🤖🚀",
    "الانتباه هو كل ما تحتاجه",
    "<b>bold</b> <img src=x onerror=alert(1)>",
    "# Title **bold** [link](http://127.0.0.1:9/)",
    "$x^2$ and $$\\int$$",
    "word " * 450,  # more than a link carries as plain text
]
FIELD_VALUES = ["banana", "penguin", "", "  ", "ZEBRA", "a", "12345", "<script>x</script>", "ünïcödé", "x" * 80]
NUMBERS = ["0", "1", "-1", "3", "7.5", "1e9", "abc", "", "nan", "100000"]
MODELS = ["", "/no/such/folder", "all-MiniLM-L6-v2 (embedded)"]
SKIPPED_BUTTONS = ("Download",)  # downloads leave the page; the walk stays on it
TOKEN_LABEL = re.compile(r"^(\d+): (.*)$", re.DOTALL)


@dataclass
class Step:
    number: int
    action: str

    def __str__(self) -> str:
        return f"{self.number:4d}. {self.action}"


@dataclass
class Walk:
    """One walk: a browser tab on the app, the seed, the server log to watch, and what happened so far."""

    page: Page
    base_url: str
    seed: int
    server_log: Path | None = None
    tokens_of: Callable[[str], list[str]] | None = None  # the embedded model's tokens of a text, [CLS] included
    reopener: Page | None = None  # a tab in another browser context, to reopen the address in after each step
    steps: list[Step] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.random = random.Random(self.seed)
        self._shown_elsewhere: tuple[str, list] | None = None  # the address and view last found the same there
        self._log_position = self.server_log.stat().st_size if self.server_log and self.server_log.exists() else 0

    # ---- the walk --------------------------------------------------------------------------------------

    def run(self, num_steps: int, start: str = "") -> list[str]:
        """Open the app at `start` and take `num_steps` random steps; the problems found (empty when none)."""
        self.page.set_default_timeout(ACTION_TIMEOUT_MS)
        self.page.goto(f"{self.base_url}/{start}", wait_until="domcontentloaded")
        self.settle()
        for number in range(1, num_steps + 1):
            action = self.take_a_step()
            self.steps.append(Step(number, action))
            try:
                self.settle()
                found = self.check()
            except Exception as error:  # the step list makes any failure replayable, not only a found problem
                raise AssertionError(f"{error}\n{self.report()}") from error
            if found:
                self.problems.extend(found)
                break
        return self.problems

    def report(self) -> str:
        """What failed and the steps that led there, to replay with the same seed."""
        steps = "\n".join(map(str, self.steps))
        return (
            f"random walk, seed {self.seed}, failed after {len(self.steps)} steps:\n"
            + "\n".join(self.problems)
            + f"\nsteps:\n{steps}"
        )

    def take_a_step(self) -> str:
        """One action, drawn among what the page offers now (weighted so that every kind comes up)."""
        kinds: list[tuple[str, Callable[[], str | None], int]] = [
            ("page", self.switch_page, 1),
            ("text", self.type_sidebar_text, 2),
            ("model", self.type_model, 1),
            ("selectbox", self.choose_in_selectbox, 4),
            ("segmented", self.click_segment, 3),
            ("tab", self.open_tab, 3),
            ("slider", self.move_slider, 3),
            ("toggle", self.flip_toggle, 2),
            ("radio", self.choose_radio, 1),
            ("multiselect", self.change_multiselect, 1),
            ("button", self.press_button, 2),
            ("number", self.type_number, 1),
            ("field", self.type_field, 1),
            ("expander", self.open_expander, 1),
            ("cell", self.edit_toy_cell, 1),
        ]
        for _ in range(12):  # an action whose widget the page lacks, or that vanished under it, draws again
            _, act, _ = self.random.choices(kinds, weights=[weight for *_, weight in kinds])[0]
            try:
                done = act()
            except PlaywrightTimeoutError:  # the page redrew while the walk reached for an element
                self.page.keyboard.press("Escape")
                self.settle()
                continue
            if done:
                return done
        return self.switch_page() or "nothing to do"

    # ---- checks ----------------------------------------------------------------------------------------

    def settle(self) -> None:
        """Wait until the script has run and nothing on the page is stale."""
        time.sleep(0.15)  # let a click reach the server before asking whether it is running
        self.page.wait_for_function(SETTLED, polling=100, timeout=SETTLE_TIMEOUT_MS)

    def check(self) -> list[str]:
        opening = self.start_opening_elsewhere()  # the other tab loads while this one is checked
        problems = [f"exception box: {text[:300]}" for text in self.visible_texts('[data-testid="stException"]')]
        problems += self.new_tracebacks()
        problems += self.stale_pickers()
        problems += self.pickers_off_their_options()
        if not problems:
            problems += self.view_elsewhere(opening)
        return problems

    def start_opening_elsewhere(self) -> str | None:
        """Start loading this address in the other context, without waiting for it, when it shows a view not yet
        compared there; the address being loaded (None when none is). The checks of this tab run meanwhile: the
        other tab draws in a browser process of its own, so the two pages share the machine's cores."""
        if self.reopener is None:
            return None
        address, here = self.view_here()
        if (address, here) == self._shown_elsewhere:
            return None
        self.reopener.goto(address, wait_until="commit")
        return address

    def view_here(self) -> tuple[str, list]:
        """This tab's address, and the view it shows (`VIEW`)."""
        return self.page.url, self.page.evaluate(VIEW)

    def view_elsewhere(self, opening: str | None = None) -> list[str]:
        """Differences between the view here and the view of this address opened in the other context (already
        loading there when `opening` names it). A view found different is looked at again a second later, once:
        on two busy cores the run that a click asked for may not have started when the walk found the page
        settled (the switch already flipped, the link not yet)."""
        if self.reopener is None:
            return []
        problems = self.compare_elsewhere(self.reopener, opening)
        if problems:
            time.sleep(1)
            self.settle()
            problems = self.compare_elsewhere(self.reopener)
        return problems

    def compare_elsewhere(self, reopener: Page, opening: str | None = None) -> list[str]:
        address, here = self.view_here()  # read after this tab's checks: a late run has drawn by now
        if (address, here) == self._shown_elsewhere:  # neither the address nor the view changed: compared already
            return []
        if address != opening:  # not loading there yet, or the address changed since it started loading
            reopener.goto(address, wait_until="commit")
        reopener.wait_for_function(PAINTED, polling=100, timeout=SETTLE_TIMEOUT_MS)
        there = reopener.evaluate(VIEW)
        if here == there:
            self._shown_elsewhere = (address, here)
            return []
        if fields(here) != fields(there):
            # A field holds text or a number typed by hand that a link may not carry (the page says why, and the
            # link keeps the last usable value): this view cannot travel, and another one is not a fault.
            return []
        differences = [f"{mine} ≠ {theirs}" for mine, theirs in zip(here, there, strict=False) if mine != theirs]
        if len(here) != len(there):
            differences.append(f"{len(here)} things on screen here, {len(there)} there")
        return [f"the address {address} opened anew shows another view: " + "; ".join(differences[:6])]

    def pickers_off_their_options(self, at_most: int = 4) -> list[str]:
        """Pickers showing a value that is not among their own options (opened to read them, then closed)."""
        problems = []
        pickers = self.visible('[data-testid="stSelectbox"]')
        for picker in self.random.sample(pickers, min(at_most, len(pickers))):
            shown = self.selectbox_value(picker)
            try:
                picker.locator('button[aria-label="Open"]').first.click()
            except PlaywrightTimeoutError:  # the picker went away under the click (the page moved on): not read
                continue
            _, options = self.options_of(picker)
            self.page.keyboard.press("Escape")
            if options and shown and shown not in options:
                label = self.widget_label(picker)
                problems.append(f"the picker {label!r} shows {shown!r}, which is not one of its options {options[:12]}")
        return problems

    def new_tracebacks(self) -> list[str]:
        if self.server_log is None or not self.server_log.exists():
            return []
        with self.server_log.open(encoding="utf-8", errors="replace") as log:
            log.seek(self._log_position)
            new = log.read()
            self._log_position = log.tell()
        return [f"server log: {chunk[:600]}" for chunk in new.split("\n\n") if "Traceback" in chunk]

    def stale_pickers(self) -> list[str]:
        """Pickers that name a token not at that position of the sidebar's text."""
        if self.tokens_of is None or not self.shows_text_tokens():
            return []
        tokens = self.tokens_of(self.sidebar_text())
        problems = []
        for picker in self.visible('[data-testid="stSelectbox"]'):
            shown = self.selectbox_value(picker)
            match = TOKEN_LABEL.match(shown)
            if match and (int(match[1]) >= len(tokens) or tokens[int(match[1])] != match[2]):
                label = self.widget_label(picker)
                problems.append(f"the picker {label!r} shows {shown!r}, but the text's tokens are {tokens[:20]}")
        return problems

    def shows_text_tokens(self) -> bool:
        """Pickers name the sidebar text's tokens on the multi-head page, and on the attention page when it reads
        the text (its other sources have tokens of their own)."""
        path = self.page.url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        if path == "multihead":
            return True
        if path == "attention":
            return self.selected_segment("What to attend over").startswith("Your text")
        return False

    # ---- reading the page --------------------------------------------------------------------------------

    def visible(self, selector: str) -> list[Locator]:
        locator = self.page.locator(selector)
        return [locator.nth(index) for index in range(locator.count()) if locator.nth(index).is_visible()]

    def visible_texts(self, selector: str) -> list[str]:
        return [item.inner_text() for item in self.visible(selector)]

    def sidebar_text(self) -> str:
        """The text the lessons study, read even while presentation style hides the sidebar."""
        field = self.page.get_by_role("textbox", name="Text to study", exact=True, include_hidden=True)
        return field.input_value()

    @staticmethod
    def widget_label(widget: Locator) -> str:
        label = widget.locator('[data-testid="stWidgetLabel"]')
        return label.first.inner_text().strip() if label.count() else ""

    @staticmethod
    def selectbox_value(picker: Locator) -> str:
        """The option a selectbox shows as chosen: the text of its combobox field."""
        return picker.locator('input[role="combobox"]').first.input_value().strip()

    def selected_segment(self, label: str) -> str:
        for group in self.visible('[data-testid="stButtonGroup"]'):
            if self.widget_label(group).startswith(label):
                active = group.locator('button[aria-checked="true"]')
                return active.first.inner_text().strip() if active.count() else ""
        return ""

    @staticmethod
    def name_of(item: Locator) -> str:
        """The words of a link, tab or expander, without the name of its Material icon."""
        return item.inner_text().strip().splitlines()[-1].strip()

    def options_of(self, picker: Locator) -> tuple[Locator, list[str]]:
        """The options of the list `picker` (a selectbox or a multiselect) has open, and their labels. Only that
        picker's own list, the one its field names in aria-controls once expanded: a list another picker opened
        a moment before may still be on the page, closing, and its options are not this picker's."""
        field = picker.locator('input[role="combobox"][aria-expanded="true"]').first
        try:
            field.wait_for(state="attached", timeout=1500)
            listbox = field.get_attribute("aria-controls", timeout=1500)
        except PlaywrightTimeoutError:  # the list did not open, or the picker went away (a run redrew the page)
            listbox = None
        # An id like "react-aria123-:r2c:" holds colons: matched as an attribute, not as a CSS #id.
        options = self.page.locator(f'[role="listbox"][id="{listbox}"] [role="option"]')
        if listbox is None:
            return options, []
        try:
            options.first.wait_for(state="visible", timeout=1500)
            return options, [options.nth(index).inner_text(timeout=1500).strip() for index in range(options.count())]
        except PlaywrightTimeoutError:  # no options (all chosen), or the list closed while it was read: none read
            return options, []

    # ---- the actions -------------------------------------------------------------------------------------

    def pick(self, items: list):
        return self.random.choice(items) if items else None

    def switch_page(self) -> str | None:
        links = self.visible('[data-testid="stSidebarNav"] a, [data-testid="stPageLink"] a')
        link = self.pick(links)
        if link is None:
            return None
        name = self.name_of(link)
        link.click()
        return f"open the page {name!r}"

    def type_sidebar_text(self) -> str:
        text = self.pick(TEXTS)
        box = self.page.get_by_role("textbox", name="Text to study", exact=True)
        box.fill(text)
        box.press("Control+Enter")
        return f"type the sidebar text {text[:40]!r}{'…' if len(text) > 40 else ''}"

    def type_model(self) -> str | None:
        box = self.page.get_by_role("textbox", name="Model", exact=True)
        if not box.count() or not box.is_visible():
            return None
        model = self.pick(MODELS)
        box.fill(model)
        box.press("Enter")
        return f"type the model {model!r}"

    def choose_in_selectbox(self) -> str | None:
        picker = self.pick(self.visible('[data-testid="stSelectbox"]'))
        if picker is None:
            return None
        label, shown = self.widget_label(picker), self.selectbox_value(picker)
        picker.locator('button[aria-label="Open"]').first.click()
        options, labels = self.options_of(picker)
        if labels and shown and shown not in labels:
            self.problems.append(f"the picker {label!r} shows {shown!r}, which is not one of its options {labels[:12]}")
        if not labels:
            self.page.keyboard.press("Escape")
            return f"open the picker {label!r} (no options)"
        index = self.random.randrange(len(labels))
        try:
            options.nth(index).click(timeout=1500)
        except PlaywrightTimeoutError:  # the list closed under the click (a run redrew its picker): nothing chosen
            return f"open the picker {label!r} (it closed before a choice)"
        return f"choose {labels[index]!r} in {label!r}"

    def click_segment(self) -> str | None:
        group = self.pick(self.visible('[data-testid="stButtonGroup"]'))
        if group is None:
            return None
        button = self.pick([item for item in group.locator("button").all() if item.is_visible()])
        if button is None:
            return None
        name = button.inner_text().strip()
        button.click()
        return f"click {name!r} in {self.widget_label(group)!r}"

    def open_tab(self) -> str | None:
        tab = self.pick(self.visible('[role="tab"]'))
        if tab is None:
            return None
        name = self.name_of(tab)
        tab.click()
        return f"open the tab {name!r}"

    def move_slider(self) -> str | None:
        slider = self.pick(self.visible('[data-testid="stSlider"]'))
        if slider is None:
            return None
        thumb = slider.locator('input[type="range"]').first
        key = self.pick(["ArrowRight", "ArrowLeft", "End", "Home", "PageUp", "PageDown"])
        presses = self.random.randint(1, 4) if key.startswith("Arrow") else 1
        thumb.focus()
        for _ in range(presses):
            thumb.press(key)
        return f"press {key} ×{presses} on the slider {self.widget_label(slider)!r}"

    def flip_toggle(self) -> str | None:
        toggle = self.pick(self.visible('[data-testid="stCheckbox"]'))
        if toggle is None:
            return None
        toggle.locator("label").first.click()
        return f"flip {self.name_of(toggle)!r}"

    def choose_radio(self) -> str | None:
        group = self.pick(self.visible('[data-testid="stRadio"]'))
        if group is None:
            return None
        option = self.pick([item for item in group.locator('[role="radiogroup"] label').all() if item.is_visible()])
        if option is None:
            return None
        option.click()
        return f"choose {option.inner_text().strip()!r} in {self.widget_label(group)!r}"

    def change_multiselect(self) -> str | None:
        picker = self.pick(self.visible('[data-testid="stMultiSelect"]'))
        if picker is None:
            return None
        removers = [item for item in picker.locator('button[aria-label^="Remove"]').all() if item.is_visible()]
        if removers and self.random.random() < 0.4:
            self.pick(removers).click()
            return f"remove a choice from {self.widget_label(picker)!r}"
        picker.locator('input[role="combobox"], [role="combobox"]').first.click()
        options, labels = self.options_of(picker)
        if not labels:
            self.page.keyboard.press("Escape")
            return f"open {self.widget_label(picker)!r} (nothing more to add)"
        index = self.random.randrange(len(labels))
        name = labels[index]
        options.nth(index).click()
        self.page.keyboard.press("Escape")
        return f"add {name!r} to {self.widget_label(picker)!r}"

    def press_button(self) -> str | None:
        buttons = [
            button
            for button in self.visible(
                '[data-testid="stButton"] button, [data-testid="stBaseButton-secondary"], '
                '[data-testid="stFormSubmitButton"] button'  # an exercise's Check
            )
            if button.is_enabled() and not self.name_of(button).startswith(SKIPPED_BUTTONS)
        ]
        button = self.pick(buttons)
        if button is None:
            return None
        name = self.name_of(button)
        button.click()
        return f"press {name!r}"

    def type_number(self) -> str | None:
        field_ = self.pick(self.visible('[data-testid="stNumberInput"]'))
        if field_ is None:
            return None
        value = self.pick(NUMBERS)
        box = field_.locator("input").first
        box.click()
        box.press("Control+A")
        box.press("Backspace")
        box.type(value)  # a number field drops what is not part of a number, as it does for a person typing
        box.press("Enter")
        return f"type {value!r} into {self.widget_label(field_)!r}"

    def type_field(self) -> str | None:
        fields = [item for item in self.visible('[data-testid="stTextInput"]') if self.widget_label(item) != "Model"]
        field_ = self.pick(fields)
        if field_ is None:
            return None
        value = self.pick(FIELD_VALUES)
        box = field_.locator("input").first
        box.fill(value)
        box.press("Enter")
        return f"type {value!r} into {self.widget_label(field_)!r}"

    def open_expander(self) -> str | None:
        expander = self.pick(self.visible('[data-testid="stExpander"] summary'))
        if expander is None:
            return None
        name = self.name_of(expander)
        expander.click()
        return f"open or close {name!r}"

    def edit_toy_cell(self) -> str | None:
        """Type into a cell of one of the toy's matrices (a data editor drawn on a canvas: click, type, Enter)."""
        grids = self.visible('[data-testid="stDataFrame"]:has(canvas)')
        editors = [grid for grid in grids if grid.evaluate("node => !!node.closest('[data-testid=\"stColumn\"]')")]
        grid = self.pick(editors)
        if grid is None:
            return None
        box = grid.bounding_box()
        if box is None or box["width"] < 80 or box["height"] < 60:
            return None
        row, column = self.random.randrange(3), self.random.randrange(4)
        header, row_height = 35, 35
        index_width = box["width"] * 0.35
        cell_width = (box["width"] - index_width) / 4
        x = box["x"] + index_width + (column + 0.5) * cell_width
        y = box["y"] + header + (row + 0.5) * row_height
        value = self.pick(NUMBERS)
        self.page.mouse.dblclick(x, y)
        self.page.keyboard.press("Control+A")
        self.page.keyboard.type(value or "0")
        self.page.keyboard.press("Enter")
        return f"type {value!r} into a toy cell (row {row}, column {column})"


def fields(view: list) -> list:
    """The fields of a `VIEW`: what they hold."""
    return [item for item in view if item[0].startswith("field ")]
