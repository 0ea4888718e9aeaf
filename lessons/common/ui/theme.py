"""The learner's theme (System, Light or Dark, chosen in the ⋮ menu at the top right), kept across the pages.

Streamlit 1.67 keeps the choice in the browser (localStorage) under a key named after the address of the page
it was made on ("stActiveTheme-/multihead-v2"), read once when a page loads: a learner who chose Dark on
/multihead found /attention light after a reload, and so was every link to another lesson they opened. A small
script in the browser copies each choice Streamlit stores to the keys of every page of the app, so whichever page
loads next, in this tab or another, finds it. Nothing leaves the browser.
"""

from __future__ import annotations

import json

from lessons.common.ui import frame

# Streamlit names the key after the page's address when its code loads, and writes it when the learner chooses;
# the script copies every such write to the same key of every other page. The app may be served under a prefix
# ("/anatomy/multihead"), found by taking the page's own path off the address.
_SCRIPT_TEMPLATE = """
<script>
(() => {
  if (window.anatomyThemeOnEveryPage) return;
  window.anatomyThemeOnEveryPage = true;
  const pages = PAGES;
  const here = window.location.pathname.replace(/\\/+$/, "");
  const page = pages.filter((path) => path && here.endsWith("/" + path)).sort((a, b) => b.length - a.length)[0];
  const prefix = page ? here.slice(0, here.length - page.length - 1) : here;
  const addresses = pages.flatMap((path) => (path ? [`${prefix}/${path}`, `${prefix}/${path}/`] : [`${prefix}/`]));
  const themeKey = /^stActiveTheme-.*-(v\\d+)$/;
  const store = Storage.prototype.setItem;
  Storage.prototype.setItem = function (key, value) {
    store.call(this, key, value);
    const chosen = this === window.localStorage && themeKey.exec(key);
    if (!chosen) return;
    for (const address of addresses) {
      store.call(this, `stActiveTheme-${address}-${chosen[1]}`, value);
    }
  };
})();
</script>
"""


def page_paths() -> list[str]:
    """Every page's path in the app's addresses: "" for the welcome page (also at its name), then each lesson's."""
    return ["", *(lesson.name for lesson in frame.LESSONS)]


SCRIPT = _SCRIPT_TEMPLATE.replace("PAGES", json.dumps(page_paths()))
