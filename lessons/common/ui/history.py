"""One entry in the browser's history per view a learner chose, page changes included.

A choice on a page ends with one new address (linked.write_address): one history entry. A page change made two.
Streamlit's browser code pushes the new page's path when the server starts the page, with an empty query (it
keeps only embedding keys across pages), and the page's own address, sent at the end of that run, was pushed
as a second entry; on a quick run the two even come the other way round (the new address under the old page's
path, then the new path). Back then stopped on a bare `/attention` between two views, and Welcome →
Tokenization → a tab → Attention → Multi-head took 7 presses of Back instead of 4.

A view is what the browser shows between two things the learner does. So a small script in the browser lets
the first address pushed after a click or a key press make a new entry, and every further one, until the
learner's next click or key press, replace it: the addresses one action leads to take one entry, the last of
them. Back and Forward count as such an action too. The entry a tab opens with is open to replacement as well
when the script arrives before the first run's address (a slow first run): a bare or untidy pasted link then
gives way to the view's address. On a quick first run the script loads after that address, and Back from the
first view passes once through the address the tab was opened with. Nothing leaves the browser.
"""

from __future__ import annotations

MARK = "anatomyProvisional"  # in a history entry's state while a later address may still replace it

SCRIPT = """
<script>
(() => {
  if (window.anatomyOneEntryPerView) return;
  window.anatomyOneEntryPerView = true;
  const push = History.prototype.pushState;
  const replace = History.prototype.replaceState;
  const marked = (state) => Object.assign({}, state || {}, { MARK: true });
  const isMarked = () => Boolean(history.state && history.state.MARK);
  History.prototype.pushState = function (state, unused, url) {
    // The first address since the learner's last action makes an entry; the ones after it take its place.
    (isMarked() ? replace : push).call(this, marked(state), unused, url);
  };
  const settle = () => {
    if (isMarked()) replace.call(history, Object.assign({}, history.state, { MARK: false }), "");
  };
  for (const event of ["pointerdown", "keydown", "popstate"]) {
    window.addEventListener(event, settle, { capture: true });
  }
  if (!isMarked()) replace.call(history, marked(history.state), "");
})();
</script>
""".replace("MARK", MARK)
