"""Open every page of the built book in headless Chromium, wait for MathJax, save full-page PNGs.

A check of what a reader sees, beyond what `check_html.py` can tell from the HTML text:
- the maths is typeset (each page's maths elements became MathJax output), with the local
  MathJax copy;
- every image loaded;
- the browser asked for nothing outside the local server (no CDN, fonts, analytics).
- nothing is cut or overflows the text column at a 1280 x 900 window (`--width`): no code cell's
  input scrolls sideways (the lines cut at the right edge are counted), no display equation is
  wider than its container, no table is wider than the text column, and no image in the text has
  its file path as alt text (book/_ext/figure_alt.py gives figure images their caption).
  Whether figure labels are legible cannot be measured here: look at the PNGs.
Screenshots go to `_build/screenshots/<page>.png` (the top `--max-height` pixels of each page), the
layout measurements to `_build/screenshots/layout.json` (per page: each element found, with what
was measured).

    python scripts/screenshots.py [--build _build/html] [--out _build/screenshots] [--chromium PATH]

Needs Chromium (`apt-get install -y chromium`) and tornado (installed with Jupyter). It serves
the site on 127.0.0.1 and drives the browser over the DevTools protocol. Exit code 1 names any
page with a problem.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from check_html import toc_files  # noqa: E402

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
]

# Runs in the page once it has loaded: waits for MathJax's first typeset and the web fonts.
PAGE_STATE = """(async () => {
  const t0 = performance.now();
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)
         && document.querySelector('.math') && performance.now() - t0 < 15000) {
    await new Promise(r => setTimeout(r, 100));
  }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  return {
    math: document.querySelectorAll('span.math, div.math').length,
    typeset: document.querySelectorAll('mjx-container').length,
    mathErrors: document.querySelectorAll('mjx-merror').length,
    images: document.images.length,
    brokenImages: [...document.images].filter(i => !i.complete || i.naturalWidth === 0)
                                      .map(i => i.getAttribute('src')),
    height: Math.ceil(document.documentElement.scrollHeight),
  };
})()"""


# Runs in the page after PAGE_STATE, at the reading window's size: what is cut or overflows the text
# column, folded cells opened for the measurement. A code line is cut when its text is wider than the
# <pre>'s content box (the font's own
# advance widths, measured on a canvas in the <pre>'s font).
LAYOUT = """(() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main')
                  || document.body;
  const box = el => { const s = getComputedStyle(el);
    return el.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); };
  const column = box(article);
  const excerpt = t => t.replace(/\\s+/g, ' ').trim().slice(0, 60);
  const canvas = document.createElement('canvas').getContext('2d');
  const closed = [...document.querySelectorAll('details:not([open])')];
  closed.forEach(d => { d.open = true; });  // folded cells (hide-input) are measured as if opened
  const code = [];
  document.querySelectorAll('div.cell_input pre').forEach((pre, i) => {
    if (!pre.clientWidth) return;  // not rendered (hidden by a toggle that is no <details>)
    const s = getComputedStyle(pre);
    canvas.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    const width = box(pre);
    const lines = pre.textContent.replace(/\\n$/, '').split('\\n');
    const cut = lines.filter(l => canvas.measureText(l).width > width + 0.5);
    const charWidth = canvas.measureText('0'.repeat(100)).width / 100;
    if (pre.scrollWidth > pre.clientWidth + 1 || cut.length)
      code.push({cell: i + 1, cutLines: cut.length, longest: Math.max(...lines.map(l => l.length)),
                 fits: Math.floor(width / charWidth), first: excerpt(cut[0] || lines[0])});
  });
  const fit = {charsPerLine: null, fontSize: null, column: Math.round(column)};
  const pre = document.querySelector('div.cell_input pre');
  if (pre) { const s = getComputedStyle(pre);
    canvas.font = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    fit.fontSize = s.fontSize; fit.codeWidth = Math.round(box(pre));
    fit.charsPerLine = Math.floor(box(pre) / (canvas.measureText('0'.repeat(100)).width / 100)); }
  const maths = [];
  document.querySelectorAll('mjx-container[display]').forEach((m, i) => {
    const inner = m.querySelector('mjx-math') || m;
    const width = inner.getBoundingClientRect().width;
    const room = Math.min(m.clientWidth || column, column);
    if (width > room + 1 || m.scrollWidth > m.clientWidth + 1)
      maths.push({equation: i + 1, width: Math.round(width), room: Math.round(room),
                  tex: excerpt((m.parentElement && m.parentElement.getAttribute('data-tex'))
                               || (m.closest('.math') || m).textContent)});
  });
  const tables = [];
  article.querySelectorAll('table').forEach((t, i) => {
    const width = t.getBoundingClientRect().width;
    if (width > column + 1)
      tables.push({table: i + 1, width: Math.round(width), column: Math.round(column),
                   columns: t.rows.length ? Math.max(...[...t.rows].map(r => r.cells.length)) : 0,
                   first: excerpt(t.textContent)});
  });
  const pathAlt = [...article.querySelectorAll('img')]
    .filter(im => /(^|\\/)[^\\s\\/]+\\.(png|jpe?g|svg|gif|webp)$/i.test((im.getAttribute('alt') || '').trim()))
    .map(im => im.getAttribute('alt'));
  closed.forEach(d => { d.open = false; });
  return {fit, code, maths, tables, pathAlt};
})()"""


def layout_problems(layout: dict) -> list[str]:
    """One line per element that is cut or overflows, from the LAYOUT measurements of one page."""
    found = []
    for c in layout["code"]:
        found.append(
            f"code cell {c['cell']}: {c['cutLines']} line(s) cut (longest {c['longest']} "
            f"characters, {c['fits']} fit): {c['first']!r}"
        )
    for m in layout["maths"]:
        found.append(f"display equation {m['equation']} is {m['width']} px wide in {m['room']} px: {m['tex']!r}")
    for t in layout["tables"]:
        found.append(
            f"table {t['table']} ({t['columns']} columns) is {t['width']} px wide, the text "
            f"column {t['column']} px: {t['first']!r}"
        )
    for alt in layout["pathAlt"]:
        found.append(f"image with its file path as alt text: {alt}")
    return found


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


class DevTools:
    """Minimal Chrome DevTools Protocol client: commands by id, events collected per session."""

    def __init__(self, ws):
        self.ws, self.next_id, self.pending, self.events = ws, 0, {}, []
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self):
        while True:
            raw = await self.ws.read_message()
            if raw is None:
                return
            msg = json.loads(raw)
            if "id" in msg and msg["id"] in self.pending:
                self.pending.pop(msg["id"]).set_result(msg)
            else:
                self.events.append(msg)

    async def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.ws.write_message(json.dumps(msg))
        reply = await asyncio.wait_for(future, timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def wait_event(self, method: str, session: str, since: int, timeout: float = 60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for msg in self.events[since:]:
                if msg.get("method") == method and msg.get("sessionId") == session:
                    return msg
            await asyncio.sleep(0.05)
        raise TimeoutError(f"no {method} within {timeout} s")


async def shoot(
    pages: list[str], base: str, out: Path, port_file: Path, width: int, max_height: int
) -> dict[str, list[str]]:
    for _ in range(300):  # Chromium writes its DevTools port once it is ready
        if port_file.is_file() and len(port_file.read_text().splitlines()) >= 2:
            break
        await asyncio.sleep(0.1)
    port, path = port_file.read_text().splitlines()[:2]
    cdp = DevTools(await websocket_connect(f"ws://127.0.0.1:{port}{path}", max_message_size=1 << 30))
    target = await cdp.send("Target.createTarget", {"url": "about:blank"})
    session = (await cdp.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}))["sessionId"]
    for domain in ("Page", "Network", "Runtime"):
        await cdp.send(f"{domain}.enable", session=session)
    problems: dict[str, list[str]] = {}
    layouts: dict[str, dict] = {}
    for page in pages:
        await cdp.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        since = len(cdp.events)
        await cdp.send("Page.navigate", {"url": f"{base}/{page}"}, session=session)
        await cdp.wait_event("Page.loadEventFired", session, since)
        state = (
            await cdp.send(
                "Runtime.evaluate",
                {"expression": PAGE_STATE, "awaitPromise": True, "returnByValue": True},
                session=session,
            )
        )["result"]["value"]
        layout = (await cdp.send("Runtime.evaluate", {"expression": LAYOUT, "returnByValue": True}, session=session))[
            "result"
        ]["value"]
        layouts[page] = layout
        height = min(state["height"], max_height)
        await cdp.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        await asyncio.sleep(0.3)  # let the layout settle at the new size
        shot = await cdp.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                # the window is already the page's height: capturing "beyond" it re-lays the page out at
                # another size, which drew the front page shifted left by half its width
                "captureBeyondViewport": False,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
            session=session,
        )
        png = out / (Path(page).with_suffix("").as_posix().replace("/", "_") + ".png")
        png.write_bytes(base64.b64decode(shot["data"]))
        remote = sorted(
            {
                m["params"]["request"]["url"]
                for m in cdp.events[since:]
                if m.get("method") == "Network.requestWillBeSent"
                and m.get("sessionId") == session
                and not m["params"]["request"]["url"].startswith((base, "data:", "blob:"))
            }
        )
        found = []
        if state["math"] and state["typeset"] == 0:
            found.append(f"{state['math']} maths element(s) but nothing typeset by MathJax")
        if state["mathErrors"]:
            found.append(f"{state['mathErrors']} MathJax error(s) (bad TeX)")
        if state["brokenImages"]:
            found.append(f"images that did not load: {state['brokenImages']}")
        if remote:
            found.append(f"requests outside the site: {remote}")
        found += layout_problems(layout)
        shown = png.relative_to(ROOT) if png.is_relative_to(ROOT) else png
        print(
            f"screenshots: {shown}  maths {state['typeset']}/{state['math']} typeset, "
            f"{state['images']} images, page height {state['height']} px, "
            f"{layout['fit']['charsPerLine']} code characters a line"
            + ("" if not found else "  PROBLEMS: " + "; ".join(found))
        )
        if found:
            problems[page] = found
    cdp.reader.cancel()
    cdp.ws.close()
    (out / "layout.json").write_text(json.dumps({"width": width, "height": 900, "pages": layouts}, indent=1) + "\n")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "screenshots")
    parser.add_argument("--toc", type=Path, default=ROOT / "_toc.yml")
    parser.add_argument(
        "--chromium",
        default=shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome"),
    )
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--max-height", type=int, default=8000)
    parser.add_argument("--pages", nargs="*", help="toc files to shoot (default: every page)")
    args = parser.parse_args(argv)
    if not args.chromium:
        print("screenshots: no Chromium found; apt-get install -y chromium, or pass --chromium.", file=sys.stderr)
        return 1
    if not args.build.is_dir():
        print(f"screenshots: no built site at {args.build}; run `make book` first.", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    pages = [
        f"{doc}.html"
        for doc in toc_files(args.toc)
        if not args.pages or doc in args.pages or Path(doc).name in args.pages
    ]
    server, base = serve(args.build)
    with tempfile.TemporaryDirectory(prefix="jeirt-chromium-", ignore_cleanup_errors=True) as profile:
        browser = subprocess.Popen(
            [args.chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            problems = asyncio.run(
                shoot(pages, base, args.out, Path(profile) / "DevToolsActivePort", args.width, args.max_height)
            )
        finally:
            browser.terminate()
            try:
                browser.wait(10)
            except subprocess.TimeoutExpired:
                browser.kill()
            server.shutdown()
    for page, found in problems.items():
        for problem in found:
            print(f"screenshots: FAIL {page}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
