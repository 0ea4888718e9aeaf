"""The load test's students in real Chromium (`benchmarks/load_test.py --client browser`): a browser context
each, in one headless Chromium; a view counts once every figure has painted. On a 2-core machine Chromium,
not the server, is then the bottleneck."""

from __future__ import annotations

import asyncio
import random
import re
import time
from urllib.parse import urlencode, urlsplit

from harness.room import (
    ROUNDS,
    VIEW_TIMEOUT_SECONDS,
    Lesson,
    Tally,
    View,
    lessons_for,
    student_text,
    view_problems,
)

CHROMIUM = "/usr/bin/chromium"  # Debian's package; playwright never downloads a browser here
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
]
SETTLE_SECONDS = 0.3

# Every label the figures hold (axis categories, tick texts, cell texts), read from plotly's own data.
FIGURE_LABELS = """() => {
  const labels = new Set();
  const walk = (item) => {
    if (item == null) return;
    if (typeof item === 'string') { labels.add(item); return; }
    if (typeof item === 'object' && item.length !== undefined) { for (let i = 0; i < item.length; i++) walk(item[i]); }
  };
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    for (const trace of (plot._fullData || [])) {
      walk(trace.x); walk(trace.y); walk(trace.text); walk(trace.customdata);
    }
    for (const [name, axis] of Object.entries(plot._fullLayout || {})) {
      if (/^[xy]axis/.test(name) && axis) { walk(axis.ticktext); walk(axis.categoryarray); }
    }
  }
  return [...labels];
}"""

PAINTED = """(minPlots) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning') return false;
  if (app.dataset.testConnectionState !== 'CONNECTED') return false;
  if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')) return false;
  if (document.querySelector('[data-testid="stException"]')) return true;
  if (!document.querySelector('h1')) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return plots.length >= minPlots && plots.length === charts.length && plots.every(p => p.querySelector('.main-svg'));
}"""


def is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in ("127.0.0.1", "localhost", "::1")


async def wait_painted(page, min_plots: int) -> None:
    while True:
        await page.wait_for_function(PAINTED, arg=min_plots, polling="raf", timeout=VIEW_TIMEOUT_SECONDS * 1000)
        count = await page.locator(".js-plotly-plot").count()
        await asyncio.sleep(SETTLE_SECONDS)
        if await page.evaluate(PAINTED, min_plots) and await page.locator(".js-plotly-plot").count() == count:
            return


async def check_view(page, session: int, lesson: Lesson, text: str, round_number: int, tally: Tally) -> bool:
    """Whether this view shows this student's results and nobody else's (errors are recorded)."""
    exceptions = await page.locator('[data-testid="stException"]').all_inner_texts()
    box = await page.get_by_role("textbox", name="Text to study", exact=True).input_value()
    words = None
    if lesson.shows_tokens:
        words = {word for label in await page.evaluate(FIGURE_LABELS) for word in re.findall(r"[a-z]+", label)}
    problems = [f"exception: {shown[:160]}" for shown in exceptions]
    problems += view_problems(session, round_number, text, box, words)
    tally.errors += [f"session {session} {lesson.path}: {problem}" for problem in problems]
    return not problems


async def browser_student(browser, base_url: str, session: int, deadline: float, began: float, tally: Tally) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.on("request", lambda request: None if is_loopback(request.url) else tally.off_loopback.append(request.url))
    page = await context.new_page()
    page.set_default_timeout(VIEW_TIMEOUT_SECONDS * 1000)
    layer, head = session % 6, (5 * session) % 12
    lessons = lessons_for(layer, head)
    step, round_number = session % len(lessons), 0
    await asyncio.sleep(random.Random(session).uniform(0, 2))  # the room opens the link within a few seconds
    try:
        while time.monotonic() < deadline:
            lesson = lessons[step % len(lessons)]
            text = student_text(session, round_number)
            address = f"{base_url}/{lesson.path}?{urlencode({'text': text, **lesson.query})}"
            start = time.monotonic()
            try:
                await page.goto(address, wait_until="domcontentloaded")
                await wait_painted(page, lesson.min_plots)
                seconds = time.monotonic() - start
                if await check_view(page, session, lesson, text, round_number, tally):
                    tally.views.append(View(session, lesson.path, "link", seconds, start - began))
                if step % 2 == 1 and time.monotonic() < deadline:  # and now the student types a new text
                    round_number += 1
                    await type_new_text(page, session, lesson, round_number, tally, began)
            except Exception as error:
                tally.errors.append(f"session {session} {lesson.path}: {type(error).__name__}: {str(error)[:160]}")
            step += 1
    finally:
        await context.close()


async def type_new_text(page, session: int, lesson: Lesson, round_number: int, tally: Tally, began: float) -> None:
    text = student_text(session, round_number)
    colour = ROUNDS[round_number % len(ROUNDS)]
    box = page.get_by_role("textbox", name="Text to study", exact=True)
    start = time.monotonic()
    await box.fill(text)
    await box.press("Control+Enter")
    # The sidebar writes the text into the address once the rerun has begun; token lessons must then show it.
    await page.wait_for_function(
        "(text) => new URLSearchParams(location.search).get('text') === text",
        arg=text,
        polling=100,
        timeout=VIEW_TIMEOUT_SECONDS * 1000,
    )
    if lesson.shows_tokens:
        await page.wait_for_function(
            f"(colour) => ({FIGURE_LABELS})().some(label => label.includes(colour))",
            arg=colour,
            polling=100,
            timeout=VIEW_TIMEOUT_SECONDS * 1000,
        )
    await wait_painted(page, lesson.min_plots)
    seconds = time.monotonic() - start
    if await check_view(page, session, lesson, text, round_number, tally):
        tally.views.append(View(session, lesson.path, "typed", seconds, start - began))


async def browser_fingerprint(browser, base_url: str) -> str:
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(f"{base_url}/?fingerprint=1", wait_until="domcontentloaded")
    caption = page.get_by_text(re.compile(r"weights sha256 [0-9a-f]{64}"))
    await caption.wait_for(timeout=VIEW_TIMEOUT_SECONDS * 1000)
    shown = await caption.inner_text()
    found = re.search(r"[0-9a-f]{64}", shown)
    if found is None:
        raise RuntimeError(f"the fingerprint caption holds no digest: {shown!r}")
    digest = found.group(0)
    await context.close()
    return digest


async def browser_warm_up(browser, base_url: str) -> float:
    """One student's first visit to each lesson, before the clock starts: model load, corpus tokenizers."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    page.set_default_timeout(VIEW_TIMEOUT_SECONDS * 1000)
    start = time.monotonic()
    for lesson in lessons_for(0, 0):
        await page.goto(f"{base_url}/{lesson.path}?{urlencode({'text': 'warming up', **lesson.query})}")
        await wait_painted(page, lesson.min_plots)
    await context.close()
    return time.monotonic() - start
