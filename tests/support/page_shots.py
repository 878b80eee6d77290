"""Screenshots of every page at a laptop's and a projector's size, normal and presentation mode,
for a person to look at (tests/artifacts/shots/, git-ignored), and a list of what a reader may
stumble over: text under 20 px in presentation mode at 1920 x 1080, text cut by its box, widget
labels wrapped onto more lines than the widget's width calls for.

    python -m tests.support.page_shots [page ...]   # from the repository root; default: every page
"""

from __future__ import annotations

import json
import sys

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from tests.support import browser as web
from ui.navigation import PAGES

SIZES = ((1366, 768), (1920, 1080))
OUT = web.ARTIFACTS / "shots"

# visible text nodes of the main area (no figure SVG, icon glyphs or MathML), with their size, and
# whether their box cuts them (scrollWidth past clientWidth on an element that hides overflow)
CHECKS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const small = [], cut = [], labels = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode.textContent.trim();
    const el = walker.currentNode.parentElement;
    if (!text || el.closest('svg, [data-testid="stIconMaterial"], .katex-mathml')) continue;
    const cs = getComputedStyle(el);
    if (cs.visibility === "hidden" || cs.display === "none") continue;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) continue;
    if (parseFloat(cs.fontSize) < 20) small.push([text.slice(0, 50), parseFloat(cs.fontSize)]);
    // cut: the text's element or one of its three nearest ancestors hides what overflows it
    for (let box = el, up = 0; box && up < 4; box = box.parentElement, up++) {
      const bs = getComputedStyle(box);
      if (box.scrollWidth > box.clientWidth + 1 && bs.overflowX !== "visible" && box.clientWidth > 0) {
        cut.push([text.slice(0, 50), box.scrollWidth, box.clientWidth]);
        break;
      }
    }
  }
  for (const label of main.querySelectorAll('[data-testid="stWidgetLabel"] p')) {
    const lh = parseFloat(getComputedStyle(label).lineHeight) || 1;
    const box = label.getBoundingClientRect(), lines = Math.round(box.height / lh);
    if (lines > 1) labels.push([label.textContent.trim().slice(0, 50), lines, Math.round(box.width)]);
  }
  return { small, cut, labels };
}"""


# the element that scrolls the page (Streamlit scrolls its main area, not the document)
SCROLLER = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const scrolls = (e) => e && e.scrollHeight > e.clientHeight + 10 &&
      ['auto', 'scroll'].includes(getComputedStyle(e).overflowY);
  const el = [main, ...document.querySelectorAll('section, div')].find(scrolls);
  if (!el) return null;
  el.setAttribute('data-shots-scroller', '1');
  return [el.scrollHeight, el.clientHeight];
}"""


def screens(page, name: str, most: int = 8) -> None:
    """The page a screen at a time (a screenshot per 90 % of the viewport, at most `most`)."""
    size = page.evaluate(SCROLLER)
    total, step = (size[0], int(size[1] * 0.9)) if size else (0, 1)
    for i in range(min(most, total // step + 1)):
        if size:
            page.evaluate(f"document.querySelector('[data-shots-scroller]').scrollTop = {i * step}")
            page.wait_for_timeout(300)
        page.screenshot(path=str(OUT / f"{name}_{i}.png"))


def main(stems: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    port = web._free_port()
    proc = web.start_server(port)
    root = f"http://127.0.0.1:{port}"
    report = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=web.chromium_path(), args=web.CHROMIUM_ARGS)
            warm = browser.new_page()
            warm.goto(root + "/")
            web.wait_idle(warm)
            warm.close()
            for stem in stems:
                path = "" if stem == "home" else stem
                for w, h in SIZES:
                    for pres in (False, True):
                        name = f"{stem}_{w}x{h}{'_pres' if pres else ''}"
                        page = browser.new_page(viewport={"width": w, "height": h})
                        page.goto(f"{root}/{path}{'?pres=1' if pres else ''}")
                        try:
                            web.wait_idle(page)
                        except PlaywrightTimeout:  # a slow machine: shoot what is there, say so
                            print(name, "still loading after the wait", flush=True)
                        screens(page, name)
                        found = page.evaluate(CHECKS)
                        if not (pres and (w, h) == (1920, 1080)):
                            found["small"] = []  # the 20 px floor is presentation mode's at 1920
                        report[name] = found
                        page.close()
                        print(name, {k: len(v) for k, v in found.items()}, flush=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    (OUT / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:] or [stem for stem, _title, _icon in PAGES])
