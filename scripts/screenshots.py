"""Screenshots of every view of the app, at the sizes people use it, to look at before shipping.

Starts the app on a free loopback port, opens every view a link can open (harness/views.py) in headless Chromium
on each of harness.browser's SCREENS (desktop 1280×800, the desktop at 150 % zoom 853×533, tablet 768×1024,
phone 390×844, projector 1024×768), waits until each has painted, and saves whole-page screenshots under
test-artifacts/screenshots/<size>/, with every layout problem it finds (harness/layout_problems.js) printed under
the view. Options choose the views, the sizes, a device scale factor (1.5 draws every pixel 1.5 times, as a
high-density screen does), and extra link parameters (say `--query text="the bank raised rates"` or
`--query present=True`).

    python scripts/screenshots.py                           # every view, every screen
    python scripts/screenshots.py --views attention multihead --sizes phone --zoom 1.5
"""

from __future__ import annotations

import argparse
import time

from playwright.sync_api import sync_playwright

from harness.browser import ARTIFACTS, SCREENS, AppPage
from harness.server import StreamlitServer, chromium_launch_options
from harness.views import VIEWS

MAX_HEIGHT = 12_000  # pixels: taller pages are cut
CONTENT_HEIGHT = """() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.scrollingElement;
  return Math.ceil(main.scrollHeight);
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", nargs="*", help="view names or prefixes (default: all)", default=[])
    parser.add_argument("--sizes", nargs="*", choices=list(SCREENS), default=list(SCREENS))
    parser.add_argument("--zoom", type=float, default=1.0, help="device scale factor (1.5 = 150 %%)")
    parser.add_argument("--query", nargs="*", default=[], help="extra link parameters, name=value")
    parser.add_argument("--color-scheme", choices=("light", "dark"), default="light")
    arguments = parser.parse_args()
    extra = dict(item.split("=", 1) for item in arguments.query)
    chosen = {
        name: view
        for name, view in VIEWS.items()
        if not arguments.views or any(name.startswith(prefix) for prefix in arguments.views)
    }
    with StreamlitServer(log_path=ARTIFACTS / "streamlit-screenshots.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(**chromium_launch_options())
        for size in arguments.sizes:
            width, height = SCREENS[size]["width"], SCREENS[size]["height"]
            folder = ARTIFACTS / "screenshots" / (size if arguments.zoom == 1 else f"{size}-zoom{arguments.zoom:g}")
            folder.mkdir(parents=True, exist_ok=True)
            context = browser.new_context(
                viewport={"width": width, "height": height},
                device_scale_factor=arguments.zoom,
                color_scheme=arguments.color_scheme,
            )
            for name, view in chosen.items():
                started = time.monotonic()
                app = AppPage(context.new_page(), server.url)
                app.open(view.path, min_plots=view.charts, **{**view.query, **extra})
                path = folder / f"{name.replace('/', '--').replace(' ', '_')}.png"
                # Streamlit scrolls its main area inside the window: grow the window to the content to see it all.
                content = app.page.evaluate(CONTENT_HEIGHT)
                if content > height:
                    app.page.set_viewport_size({"width": width, "height": min(content + 80, MAX_HEIGHT)})
                    app.wait_until_painted(view.charts)
                app.page.screenshot(path=str(path))
                problems = app.exceptions()
                print(
                    f"{size:8} {name:45} {time.monotonic() - started:5.1f} s  {path}"
                    + (f"  EXCEPTION {problems}" if problems else "")
                )
                for problem in app.layout_problems():
                    print(f"         layout: {problem}")
                app.page.close()
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
