"""The built book, opened page by page in a real headless browser, offline.

The book is built from the chapters' smoke runs (shared with tests/test_notebooks.py via
the ``smoke_runs`` fixture of tests/conftest.py) into a temporary copy of ``book/``, served
on 127.0.0.1 by ``http.server`` in a thread, and every HTML page is opened in Debian's
headless Chromium (``/usr/bin/chromium``, driven by ``playwright``) at 1280 px and 390 px
with every request to another origin blocked. A page fails on

* a console error or an uncaught page error;
* a failed request (network error or HTTP status >= 400);
* a request to another origin (blocked, and reported);
* an image that did not load;
* math left untypeset (``\\(``, ``\\[``, ``$$``, or ``$..$`` around TeX in the rendered
  text outside code);
* horizontal overflow: the page wider than the window, or the text column wider than
  itself (tables and code may scroll inside their own box, the column may not);
* a display equation cut off (wider than its box, and the box does not scroll);
* what a reader should never see: a table cell reading ``nan``/``NaN``/
  ``inf``/``<NA>``/``None``; a table without a ``<caption>``; the same image twice on a
  page; a table or figure number used twice on a page; a raw ``$`` (not a price like $50), ``\\texttt`` (or another LaTeX command) or a format placeholder
  (``{name:fmt}``, ``name_x:.4f``, ``(n_pool tasks)``) in the rendered text; a bullet list
  run into a paragraph (a literal "- " at a line start or after a sentence); a Python
  warning, error or traceback printed in a cell's output;
* a "Next" link that leaves the course: on the syllabus page (``syllabus.html``), the
  chapters are listed in order (``.syllabus-chapter a``), and each one's "Next" must lead
  to the one listed after it.

It also checks that the search page finds a known term. Screenshots of every page at both
widths (and the landing page in full) are saved under ``artifacts/browser/<width>/``, with
``report.json`` listing what was checked and, as advice rather than failures, the tables
that need horizontal scrolling and the figures shown below 60 % of their size at 1280 px.

Without Chromium or playwright the test is skipped with the reason on a user's machine,
and FAILS when the ``CI`` environment variable is set (``.ci/run`` installs chromium).
Reuse an already built book with ``AGENTSTUDIES_BROWSER_HTML=book/_build/html``; run the
check by hand on any build: ``python tests/test_browser.py book/_build/html``.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import socketserver
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
WIDTHS = (1280, 390)
SEARCH_TERM = "SASST"
SHOTS = REPO / "artifacts" / "browser"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-default-apps", "--disable-extensions", "--mute-audio",
    # belt and braces with the request routing below: no name resolves but 127.0.0.1
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def chromium_path() -> str | None:
    """Debian's chromium (``CHROMIUM`` env overrides), or None."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _missing_browser_reason() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[dev]')"
    if chromium_path() is None:
        return "Chromium is not installed (Debian: apt-get install chromium)"
    return None


# ------------------------------------------------------------------------------ serving
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - http.server API
        pass


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` on 127.0.0.1 (free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    socketserver.TCPServer.allow_reuse_address = True
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------------ page checks
_PAGE_STATE_JS = r"""
async () => {
  // images: make lazy ones load, then wait for every image to settle
  const imgs = Array.from(document.images);
  imgs.forEach(i => { if (i.loading === 'lazy') i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null :
      new Promise(r => { i.addEventListener('load', r); i.addEventListener('error', r);
                         setTimeout(r, 5000); })));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await Promise.race([MathJax.startup.promise, new Promise(r => setTimeout(r, 10000))]);
  }
  await Promise.race([document.fonts.ready, new Promise(r => setTimeout(r, 5000))]);
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0)
                     .map(i => i.getAttribute('src'));
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, .highlight, mjx-container, .MathJax')
       .forEach(e => e.remove());
  const text = clone.textContent;
  const raw = ['\\(', '\\[', '$$'].filter(d => text.includes(d)).map(d => {
      const k = text.indexOf(d); return d + ' in "' + text.slice(Math.max(0, k - 40), k + 60).replace(/\s+/g, ' ') + '"'; });
  // $...$ left as text: a pair of dollars around TeX (a backslash, ^ or _ inside)
  const tex = text.match(/\$[^$\n]{0,80}[\\^_][^$\n]{0,80}\$/);
  if (tex) raw.push('$...$ "' + tex[0].slice(0, 80) + '"');
  // LaTeX, dollars and format placeholders left as text
  // a dollar not followed by a digit (a price like $50 is prose) is math left as text
  const dollar = text.search(/\$(?![\d\s])/);
  if (dollar >= 0 && !raw.some(r => r.startsWith('$'))) {
    const k = dollar; raw.push('raw $ in "' + text.slice(Math.max(0, k - 40), k + 40).replace(/\s+/g, ' ') + '"'); }
  const cmd = text.match(/\\(texttt|textbf|emph|cite|mathrm|frac)\b/);
  if (cmd) raw.push('raw \\' + cmd[1]);
  const placeholders = [];
  for (const m of text.matchAll(/\{[A-Za-z_][\w.]*(:[^{}\s]*)?\}|\b[a-z][a-z0-9]*_[a-z0-9_]*:[.,]?\d*[a-z%]\b|\([a-z]+_[a-z0-9_]+ [a-z]+\)/g)) {
    if (placeholders.length < 3) placeholders.push(m[0]); }
  // a bullet list collapsed into a paragraph: literal "- " at a line start or after a sentence
  const runins = [];
  for (const p of article.querySelectorAll('p')) {
    if (p.closest('pre, .highlight, .cell_output, .output')) continue;
    const t = p.textContent;
    if (/(^|\n)\s*- \S/.test(t) || /[.:;!?] - [A-Z*`]/.test(t)) runins.push(t.trim().slice(0, 70).replace(/\s+/g, ' '));
  }
  // displayed tables: a cell reading nan/inf/<NA>/None, or no caption
  const badCells = [], uncaptioned = [];
  const BAD = new Set(['nan', 'NaN', 'NAN', 'inf', '-inf', 'Inf', '<NA>', 'None', 'NaT', 'nan%']);
  // Sphinx's own index page (genindex) lays its columns out as tables: not a displayed table
  const isIndexPage = /\/genindex\.html$/.test(location.pathname);
  for (const t of article.querySelectorAll('table')) {
    if (t.closest('pre, .highlight') || isIndexPage) continue;
    for (const c of t.querySelectorAll('td, th')) {
      const v = c.textContent.trim();
      if (BAD.has(v)) { badCells.push(v); }
    }
    const cap = t.querySelector(':scope > caption');
    if (!cap || !cap.textContent.trim()) {
      const head = Array.from(t.querySelectorAll('th, td')).slice(0, 3).map(c => c.textContent.trim()).join(' | ');
      uncaptioned.push(head.slice(0, 60));
    }
  }
  // one numbering: no table or figure number twice on a page ("Table 1." beside a Sphinx "Table 1")
  const numbered = {}, dupNumbers = [];
  for (const c of article.querySelectorAll('table > caption, figcaption')) {
    const m = c.textContent.trim().match(/^(Table|Figure|Fig\.)\s+(\d+(?:\.\d+)*)/);
    if (!m) continue;
    const key = (m[1] === 'Table' ? 'Table ' : 'Figure ') + m[2];
    if (numbered[key] && !dupNumbers.includes(key)) dupNumbers.push(key);
    numbered[key] = true;
  }
  // the same picture twice on one page
  const seen = {}, dupImgs = [];
  for (const i of article.querySelectorAll('img')) {
    const src = i.getAttribute('src'); if (!src) continue;
    if (seen[src] && !dupImgs.includes(src)) dupImgs.push(src);
    seen[src] = true;
  }
  // warnings and tracebacks printed by a cell
  const warnings = [];
  for (const o of article.querySelectorAll('.cell_output, div.output')) {
    const t = o.textContent;
    const m = t.match(/Traceback \(most recent call last\)|\b[A-Z]\w*(Warning|Error): .{0,60}/);
    if (m || o.querySelector('.stderr, .output.stderr')) warnings.push((m ? m[0] : 'stderr output').slice(0, 90).replace(/\s+/g, ' '));
    if (warnings.length >= 3) break;
  }
  // display equations cut off: wider than their box, and their box does not scroll
  const clippedMath = [];
  for (const m of document.querySelectorAll('mjx-container[display="true"], mjx-container[jax]')) {
    const r = m.getBoundingClientRect();
    if (r.width === 0) continue;
    const inner = m.firstElementChild ? m.firstElementChild.getBoundingClientRect() : r;
    const ov = getComputedStyle(m).overflowX;
    const scrolls = ov === 'auto' || ov === 'scroll';
    const cut = (inner.width > r.width + 1 && !scrolls) || (r.right > window.innerWidth + 1 && !scrollsOwnBox(m));
    if (cut) clippedMath.push((m.getAttribute('display') === 'true' ? 'display' : 'inline') + ' math ' +
        Math.round(inner.width) + ' px in a ' + Math.round(r.width) + ' px box ending at ' + Math.round(r.right) + ' px');
  }
  const next = document.querySelector('a.right-next');
  const nextHref = next ? new URL(next.getAttribute('href'), location.href).pathname : null;
  const syllabus = Array.from(document.querySelectorAll('.syllabus-chapter a')).map(
      a => new URL(a.getAttribute('href'), location.href).pathname);
  const W = window.innerWidth;
  const doc = document.documentElement;
  const col = document.querySelector('.bd-article-container') || article;
  // elements sticking out of the window, not inside a box that scrolls on its own
  function scrollsOwnBox(e) { for (let p = e.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p); if (s.overflowX === 'auto' || s.overflowX === 'scroll') return true; }
      return false; }
  const scrollsOwn = e => { for (let p = e.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p); if (s.overflowX === 'auto' || s.overflowX === 'scroll' || s.overflowX === 'hidden') return true; }
      return false; };
  const wide = [];
  for (const e of article.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > W + 1 && !scrollsOwn(e)) {
      wide.push(e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : '') + ' (' + Math.round(r.right) + ' px)');
      if (wide.length >= 5) break;
    }
  }
  const scrolled = Array.from(article.querySelectorAll('table')).filter(t => {
      for (let p = t.parentElement; p && p !== article; p = p.parentElement)
        if (p.scrollWidth > p.clientWidth + 1) return true;
      return false; }).length;
  // figures shown at under 60 % of their pixel width: label text may be hard to read
  const shrunk = imgs.filter(i => i.naturalWidth > 0 && i.clientWidth > 0 && i.clientWidth / i.naturalWidth < 0.6)
                     .map(i => i.getAttribute('src') + ' at ' + Math.round(100 * i.clientWidth / i.naturalWidth) + '%');
  return {broken, raw, shrunk, placeholders, runins, badCells, uncaptioned, dupImgs, dupNumbers, warnings,
          clippedMath, nextHref, syllabus, pageWidth: doc.scrollWidth, window: W,
          columnOverflow: col.scrollWidth - col.clientWidth, wide, scrolledTables: scrolled,
          tables: article.querySelectorAll('table').length,
          math: document.querySelectorAll('mjx-container').length};
}
"""

_READER_JS = r"""
async (opts) => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const inCode = e => !!(e && e.closest('pre, code, .highlight, script, style, mjx-container, .MathJax, kbd, samp'));
  const range = document.createRange();
  const charTop = (node, i) => { range.setStart(node, i); range.setEnd(node, i + 1);
      const r = range.getClientRects(); return r.length ? r[0].top : null; };
  // ---- a token broken inside itself: a word or number whose letters sit on two lines
  // (a break after a hyphen or slash between two letters, "pre-/execution", is typography)
  const broken = [];
  const walk = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    const el = node.parentElement;
    if (!el || el.closest('pre, .highlight, script, style, mjx-container, .MathJax')) continue;
    const inTable = !!el.closest('table');
    if (!inTable && (inCode(el) || el.closest('a'))) continue;  // prose: inline code and URLs may wrap
    if (el.getClientRects().length === 0) continue;  // hidden (a closed dropdown)
    for (const m of node.textContent.matchAll(/\S{2,}/g)) {
      range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size < 2) continue;
      const t0 = charTop(node, m.index);
      let k = 1;
      for (; k < m[0].length; k++) { const t = charTop(node, m.index + k); if (t !== null && t > t0 + 2) break; }
      const tok = m[0], before = tok[k - 1] || '', after = tok[k] || '';
      const prev = tok[k - 2] || '';
      if (/[-\u2010\u2013\u2014\/]/.test(before) && /[\p{L}\p{N}]/u.test(prev) && /[\p{L}\p{N}]/u.test(after)
          && !(/\p{N}/u.test(prev) && /\p{N}/u.test(after))) continue;  // a compound ("stale-/2"), not a range or an arrow
      if (!inTable && /[-\u2010\u2013\u2014\/]/.test(before)) continue;
      if (!/[\p{L}\p{N}]/u.test(before) && !/[\p{L}\p{N}]/u.test(after)) continue;  // between two marks (")/."): no word or number broken
      if (inCode(el) && /[._\u200b]/.test(before)) continue;  // an identifier in code breaks after its '.' or '_'  // prose may break after a hyphen, dash or slash ("2\u2013/4", "\u03c4\u00b2-/bench")
      broken.push((inTable ? 'table: ' : 'text: ') + tok.slice(0, k) + '/' + tok.slice(k));
    }
  }
  // ---- a cell whose content spills out of it into the next one
  const spilled = [];
  for (const c of article.querySelectorAll('table td, table th')) {
    if (c.closest('pre, .highlight') || c.getClientRects().length === 0) continue;
    if (c.scrollWidth > c.clientWidth + 1) spilled.push(c.textContent.trim().slice(0, 40) +
        ' (' + c.scrollWidth + ' px in ' + c.clientWidth + ')');
  }
  // ---- captions: say what the table shows, not only its column names; no empty table;
  // no caption twice on a page
  const columnsOnly = [], emptyTables = [], dupCaptions = [], captionsSeen = {};
  const words = s => (s.toLowerCase().match(/[\p{L}\p{N}^]+/gu) || []);
  for (const t of article.querySelectorAll('table')) {
    if (t.closest('pre, .highlight') || /\/genindex\.html$/.test(location.pathname)) continue;
    const cap = t.querySelector(':scope > caption');
    if (!t.querySelector('tbody tr, tr td')) emptyTables.push(cap ? cap.textContent.trim().slice(0, 60) : '(no caption)');
    if (!cap) continue;
    const full = cap.textContent.replace(/\s+/g, ' ').trim();
    const what = full.replace(/^(Table|Tab\.)\s*[\d.]+\s*/, '').replace(/Unit:[^.]*\./g, '')
                     .replace(/\bn\s*=\s*[\d,]+[^.]*\.?\s*$/, '').trim();
    const head = new Set(words(Array.from(t.querySelectorAll('thead th, tr:first-child th')).map(h => h.textContent).join(' ')));
    ['by', 'and', 'of', 'per'].forEach(w => head.add(w));
    const ws = words(what);
    if (ws.length === 0 || ws.every(w => head.has(w) || /^\d+$/.test(w))) columnsOnly.push(full.slice(0, 80));
    const key = full.replace(/^(Table|Tab\.)\s*[\d.]+\s*/, '');
    if (captionsSeen[key] && !dupCaptions.includes(key)) dupCaptions.push(key.slice(0, 80));
    captionsSeen[key] = true;
  }
  // ---- nan-like text anywhere outside code: NaN, <NA>, NaT, inf, a negative zero, a Python tuple
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, .highlight, mjx-container, .MathJax').forEach(e => e.remove());
  const text = clone.textContent.replace(/\s+/g, ' ');
  const nanLike = [];
  const NAN_RE = [/(^|[^\w.])(nan|NaN|NAN|NaT|<NA>)(?!\w)/g, /(^|[\s(\[=])[-+\u2212]?(inf|Inf)(?=[\s,.;)\]]|$)/g,
                  /(^|[^\w.\d])[-\u2212]0(\.0+)?(?![\d.])/g, /\((True|False|None), /g, /\('[^']*', /g,
                  /(^|[\s(=])None(?=[,)])/g];
  for (const re of NAN_RE) for (const m of text.matchAll(re)) {
    if (nanLike.length < 6) nanLike.push('"' + text.slice(Math.max(0, m.index - 30), m.index + m[0].length + 20).trim() + '"'); }
  // ---- a list run into a paragraph: a bullet character inside a paragraph
  const bullets = [];
  for (const p of article.querySelectorAll('p')) {
    if (inCode(p) || p.closest('.cell_output pre')) continue;
    if (/\u2022|\u25e6|\u25aa/.test(p.textContent)) bullets.push(p.textContent.trim().slice(0, 70).replace(/\s+/g, ' '));
  }
  // ---- figure labels: every text of an SVG figure at least opts.minLabelPx on screen;
  // a bitmap figure shown below half its pixel size is reported (its labels cannot be read)
  const smallLabels = [];
  for (const img of article.querySelectorAll('img')) {
    if (img.clientWidth === 0) continue;
    const src = img.getAttribute('src') || '';
    if (/\.svg(\?|$)/i.test(src)) {
      let svgText = '';
      try { svgText = await (await fetch(img.src)).text(); } catch (e) { continue; }
      const holder = document.createElement('div');
      holder.style.cssText = 'position:absolute;left:-10000px;top:0;width:' + img.clientWidth + 'px';
      holder.innerHTML = svgText.replace(/^[\s\S]*?(<svg)/, '$1');
      const svg = holder.querySelector('svg');
      if (!svg) continue;
      svg.setAttribute('width', img.clientWidth); svg.setAttribute('height', img.clientHeight);
      svg.setAttribute('preserveAspectRatio', 'none');
      document.body.appendChild(holder);
      let least = null, which = '';
      for (const t of svg.querySelectorAll('text')) {
        if (!t.textContent.trim()) continue;
        const m = t.getScreenCTM() || {a: 1, b: 0};
        const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);  // rotated labels too
        if (least === null || px < least) { least = px; which = t.textContent.trim().slice(0, 30); }
      }
      const glyphs = svg.querySelectorAll('text').length;
      holder.remove();
      if (glyphs === 0) smallLabels.push(src + ': SVG without text elements (labels drawn as paths cannot be measured)');
      else if (least < opts.minLabelPx) smallLabels.push(src + ': label "' + which + '" is ' + least.toFixed(1) + ' px');
    } else if (img.naturalWidth > 0 && img.closest('figure, .cell_output') && img.clientWidth / img.naturalWidth < opts.minBitmapScale) {
      smallLabels.push(src + ': bitmap shown at ' + Math.round(100 * img.clientWidth / img.naturalWidth) + ' % of its pixels');
    }
  }
  // ---- tables as text (for the comparison with the chapter's CSV files)
  const tables = Array.from(article.querySelectorAll('table')).filter(t => !t.closest('pre, .highlight')).map(t => ({
      caption: (t.querySelector(':scope > caption') || {textContent: ''}).textContent.trim().slice(0, 80),
      cells: Array.from(t.querySelectorAll('tbody td')).map(c => c.textContent.trim())}));
  // ---- glossary terms: the first use of each term in the prose is a link to the glossary
  const unlinked = [];
  if (opts.terms && opts.terms.length) {
    const nodes = [];
    const w2 = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    for (let n = w2.nextNode(); n; n = w2.nextNode()) {
      const el = n.parentElement;
      // raw HTML a cell printed (a run note) is outside the book's text: the site cannot link inside it
      if (!el || !el.closest('p, li, dd') || inCode(el) || el.closest('h1, h2, h3, h4, h5, h6, table, caption, figcaption, .cell_output pre, .text_html, .agentstudies-run-note, .admonition-title, cite, .math, mjx-container')) continue;
      const a = el.closest('a');
      if (a && !/glossary\.html#term-/.test(a.getAttribute('href') || '')) continue;  // another link (a citation)
      nodes.push(n);
    }
    for (const term of opts.terms) {
      const esc = term.text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const re = new RegExp('(^|[^\\p{L}\\p{N}_-])' + esc + '(s|es)?(?![\\p{L}\\p{N}_-])', 'iu');
      for (const n of nodes) {
        if (!re.test(n.textContent)) continue;
        const a = n.parentElement.closest('a');
        if (!a || !/glossary\.html#term-/.test(a.getAttribute('href') || '')) {  // linked (to this term or a longer one)
          const m = n.textContent.match(re);
          unlinked.push(term.text + ' in "' + n.textContent.slice(Math.max(0, m.index - 25), m.index + term.text.length + 25).replace(/\s+/g, ' ').trim() + '"');
        }
        break;
      }
    }
  }
  // ---- the chapter's result-first box (above the first section) and its rerun box
  const finds = article.querySelector('.agentstudies-finds');
  const firstH2 = article.querySelector('section section h2, h2');
  const findsFirst = !!finds && (!firstH2 || (finds.compareDocumentPosition(firstH2) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0);
  const rerun = article.querySelector('.agentstudies-rerun');
  const rerunText = rerun ? rerun.textContent.replace(/\s+/g, ' ') : '';
  return {broken, spilled, columnsOnly, emptyTables, dupCaptions, nanLike, bullets, smallLabels, tables,
          unlinked, findsFirst, hasFinds: !!finds, rerunText};
}
"""


#: Smallest label on a figure at 390 px (CSS px on screen; SVG text measured in the page).
MIN_LABEL_PX = 7.0
#: A bitmap figure shown below this share of its pixel width is reported as unreadable.
MIN_BITMAP_SCALE = 0.5
_NUMBER = re.compile(r"(?<![\w.])[-\u2212]?\d+\.\d+(?![\w.])")


def glossary_terms(html: Path) -> list[dict[str, str]]:
    """The glossary's terms as ``[{"id": "term-Cluster", "text": "Cluster"}, ...]`` (none without it)."""
    page = html / "glossary.html"
    if not page.is_file():
        return []
    out = []
    for m in re.finditer(r'<dt id="(term-[^"]+)"[^>]*>(.*?)</dt>', page.read_text(errors="replace"), re.S):
        text = re.sub(r"<[^>]+>", "", m.group(2)).replace("\u00b6", "").replace("#", "").strip()
        if text:
            out.append({"id": m.group(1), "text": text})
    return out


def _csv_numbers(path: Path) -> list[float]:
    """Every finite number in a CSV file (any column), as floats."""
    import csv

    out = []
    with path.open(newline="") as fh:
        for row in csv.reader(fh):
            for v in row:
                try:
                    x = float(v)
                except ValueError:
                    continue
                if x == x and abs(x) != float("inf"):
                    out.append(x)
    return out


def numbers_against_csv(tables: list[dict], csv_files: list[Path]) -> list[str]:
    """Displayed numbers that disagree with their CSV at the shown digits: rounded twice.

    ``tables``: ``[{"caption": str, "cells": [cell text, ...]}]`` as a page shows them;
    ``csv_files``: the chapter's CSV artifacts. A table is matched to the CSV whose values,
    written with each displayed number's digits, reproduce most of its numbers (at least
    two and at least half of them). A displayed number that no value of any of the CSVs
    rounds to, but that a value of the matched CSV rounded to fewer digits and padded with
    zeros gives, was
    rounded twice: "0.270" shown where the CSV holds 0.2667 (rounded to 0.27, then shown
    with three decimals), "-0.0010" where it holds -0.0015.
    """
    values = {f.name: _csv_numbers(f) for f in csv_files}
    out = []
    for t in tables:
        shown = sorted({m.group(0).replace("\u2212", "-") for c in t["cells"] for m in _NUMBER.finditer(c)})
        if len(shown) < 2:
            continue
        hits = {name: sum(any(_at(v, x) == x for v in vals) for x in shown) for name, vals in values.items()}
        best = max(hits, key=hits.get, default=None)
        if best is None or hits[best] < 2 or hits[best] < 0.5 * len(shown):
            continue
        vals = values[best]
        every = [v for vs in values.values() for v in vs]
        for x in shown:
            d = len(x.split(".")[1])
            if d < 2 or any(_at(v, x) == x for v in every):  # a stacked table: ours and the paper's CSV
                continue
            twice = [v for v in vals if any(_at(float(f"{v:.{k}f}"), x) == x for k in range(d))]
            if twice:
                v = min(twice, key=lambda v: abs(v - float(x)))
                out.append(f"{t['caption'][:50]!r}: shows {x}, {best} holds {v:.{d + 2}g}")
    return out


def _at(v: float, shown: str) -> str:
    """``v`` with as many decimals as ``shown`` has, a negative zero written as zero."""
    text = f"{v:.{len(shown.split('.')[1])}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _reader_problems(state: dict, rel: str, width: int) -> list[str]:
    """What a reader meets on one page, from ``_READER_JS``'s answer, as problem lines."""
    found = [f"token broken inside itself: {x}" for x in state["broken"][:5]]
    if len(state["broken"]) > 5:
        found.append(f"... {len(state['broken'])} broken tokens in all")
    found += [f"cell spills into the next: {x}" for x in state["spilled"][:5]]
    found += [f"caption only lists columns: \"{x}\"" for x in state["columnsOnly"][:5]]
    found += [f"table with no rows: \"{x}\"" for x in state["emptyTables"]]
    found += [f"same caption twice on the page: \"{x}\"" for x in state["dupCaptions"]]
    found += [f"nan-like text outside code: {x}" for x in state["nanLike"]]
    found += [f"list run into a paragraph (bullet character): \"{x}\"" for x in state["bullets"][:3]]
    if width <= 390:
        found += [f"figure label too small at {width} px: {x}" for x in state["smallLabels"]]
    found += [f"glossary term not linked on first use: {x}" for x in state["unlinked"][:8]]
    if rel.startswith("chapters/"):
        name = rel.removeprefix("chapters/").removesuffix(".html")
        if not state["hasFinds"]:
            found.append("no \"What this chapter finds\" box")
        elif not state["findsFirst"]:
            found.append("the \"What this chapter finds\" box is not above the first section")
        if f"agentstudies run {name}" not in state["rerunText"] or "pip install" not in state["rerunText"]:
            found.append(f"no \"Run this chapter yourself\" box with `pip install` and `agentstudies run {name}`")
    return found


def _same_origin_only(base: str, events: list[str]):
    """A route handler: requests under ``base`` go through, others are aborted and noted."""

    def route(r, request=None):
        url = r.request.url
        if url.startswith(base + "/") or url == base:
            r.continue_()
        else:
            events.append(f"request to another origin: {url}")
            r.abort()

    return route


def check_book(html: Path, shots: Path | None = SHOTS, widths=WIDTHS,
               search_term: str = SEARCH_TERM, search_timeout_ms: int = 15000,
               artifacts: Path | None = None) -> tuple[list[str], dict]:
    """Open every page of the built book ``html`` in Chromium; return (problems, report).
    ``search_timeout_ms``: how long the search page may take to list its first hit;
    ``artifacts``: the folder of the chapters' CSV files (``<artifacts>/<chapter>/*.csv``)
    that a chapter page's displayed numbers are compared with (None: not compared)."""
    from playwright.sync_api import sync_playwright

    pages = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                   if not p.relative_to(html).parts[0].startswith("_"))
    problems: list[str] = []
    report: dict = {"pages": len(pages), "widths": list(widths), "per_page": {}}
    if shots is not None:
        shutil.rmtree(shots, ignore_errors=True)
    t0 = time.perf_counter()
    nexts: dict[str, str | None] = {}  # page -> path of its "Next" link
    terms = glossary_terms(html)
    skip_terms = {"glossary.html", "genindex.html", "search.html", "references.html"}
    syllabus: dict[str, list[str]] = {}  # "order": chapter paths in the syllabus page's order
    with serve(html) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        try:
            for width in widths:
                ctx = browser.new_context(viewport={"width": width, "height": 900},
                                          device_scale_factor=1, service_workers="block")
                events: list[str] = []

                ctx.route("**/*", _same_origin_only(base, events))
                page = ctx.new_page()
                page.on("console", lambda m, ev=events: ev.append(f"console {m.type}: {m.text}")
                        if m.type == "error" else None)
                page.on("pageerror", lambda e, ev=events: ev.append(f"page error: {e}"))
                # a request the page itself cancels (net::ERR_ABORTED, e.g. MathJax swapping
                # its font styles) is not a failure; a missing file still shows as HTTP 404
                page.on("requestfailed", lambda q, ev=events: ev.append(
                    f"failed request: {q.url} ({q.failure})")
                        if q.url.startswith(base) and "ERR_ABORTED" not in str(q.failure) else None)
                page.on("response", lambda r, ev=events: ev.append(
                    f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
                for rel in pages:
                    events.clear()
                    if 'http-equiv="refresh"' in (html / rel).read_text(errors="replace")[:3000].lower():
                        # a redirect page (index.html -> intro.html): it must land without error
                        target = re.search(r'url=([^"\'>\s]+)', (html / rel).read_text(errors="replace"), re.I)
                        page.goto(f"{base}/{rel}", wait_until="commit")
                        if target:
                            page.wait_for_url(f"**/{target.group(1)}", wait_until="load")
                        problems += [f"{rel} @ {width}px: {e}" for e in events]
                        continue
                    page.goto(f"{base}/{rel}", wait_until="load")
                    state = page.evaluate(_PAGE_STATE_JS)
                    page.wait_for_timeout(50)
                    found = list(events)
                    found += [f"image not loaded: {src}" for src in state["broken"]]
                    found += [f"untypeset math: {raw}" for raw in state["raw"]]
                    found += [f"unfilled placeholder: {x}" for x in state["placeholders"]]
                    found += [f"bullet run into a paragraph (literal '- '): \"{x}\"" for x in state["runins"][:3]]
                    if state["badCells"]:
                        found.append(f"{len(state['badCells'])} table cell(s) read "
                                     f"{sorted(set(state['badCells']))}")
                    found += [f"table without caption: starts \"{x}\"" for x in state["uncaptioned"][:5]]
                    found += [f"image shown twice: {x}" for x in state["dupImgs"]]
                    found += [f"number used twice on the page: {x}" for x in state["dupNumbers"]]
                    found += [f"warning or traceback in an output: {x}" for x in state["warnings"]]
                    found += [f"equation cut off: {x}" for x in state["clippedMath"][:3]]
                    reader = page.evaluate(_READER_JS, {
                        "terms": [] if rel in skip_terms else terms, "minLabelPx": MIN_LABEL_PX,
                        "minBitmapScale": MIN_BITMAP_SCALE})
                    found += _reader_problems(reader, rel, width)
                    if artifacts is not None and rel.startswith("chapters/") and width == widths[0]:
                        chapter = rel.removeprefix("chapters/").removesuffix(".html")
                        csvs = sorted((artifacts / chapter).glob("*.csv"))
                        found += [f"number differs from its CSV: {x}"
                                  for x in numbers_against_csv(reader["tables"], csvs)[:8]]
                    nexts.setdefault(rel, state["nextHref"])
                    if state["syllabus"]:
                        syllabus.setdefault("order", state["syllabus"])
                    if state["pageWidth"] > state["window"] + 1:
                        found.append(f"page is {state['pageWidth']} px wide in a {state['window']} px "
                                     f"window; widest: {', '.join(state['wide']) or '?'}")
                    if state["columnOverflow"] > 1:
                        found.append(f"text column overflows by {state['columnOverflow']} px; "
                                     f"widest: {', '.join(state['wide']) or '?'}")
                    problems += [f"{rel} @ {width}px: {f}" for f in found]
                    report["per_page"].setdefault(rel, {})[str(width)] = {
                        k: state[k] for k in ("tables", "scrolledTables", "math", "pageWidth", "shrunk")}
                    if shots is not None:
                        out = shots / str(width) / (rel.replace("/", "__").removesuffix(".html") + ".png")
                        out.parent.mkdir(parents=True, exist_ok=True)
                        page.screenshot(path=str(out), full_page=(rel == "intro.html"))
                # search finds a known term
                page.goto(f"{base}/search.html?q={search_term}", wait_until="load")
                try:
                    page.wait_for_selector("#search-results ul.search li", timeout=search_timeout_ms)
                    hits = page.locator("#search-results ul.search li").count()
                except Exception:  # noqa: BLE001 - reported as a problem below
                    hits = 0
                report.setdefault("search_hits", {})[str(width)] = hits
                if hits == 0:
                    problems.append(f"search.html @ {width}px: searching {search_term!r} found nothing")
                problems += [f"search.html @ {width}px: {e}" for e in events
                             if "another origin" in e or "error" in e]
                ctx.close()
        finally:
            browser.close()
    problems += _next_link_problems(nexts, syllabus.get("order"), has_syllabus="syllabus.html" in pages)
    report["syllabus_order"] = syllabus.get("order", [])
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["scrolled_tables_1280"] = {p: v["1280"]["scrolledTables"] for p, v in report["per_page"].items()
                                      if v.get("1280", {}).get("scrolledTables")}
    report["shrunk_figures_1280"] = {p: v["1280"]["shrunk"] for p, v in report["per_page"].items()
                                     if v.get("1280", {}).get("shrunk")}
    report["problems"] = problems
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        (shots / "report.json").write_text(json.dumps(report, indent=1))
    return problems, report


def _next_link_problems(nexts: dict[str, str | None], order: list[str] | None, has_syllabus: bool) -> list[str]:
    """Each chapter's "Next" link must lead to the next chapter of the syllabus page's order.

    ``nexts``: page (relative path) -> URL path of its Next link; ``order``: the URL paths
    of the chapters as the syllabus page lists them (elements ``.syllabus-chapter a``).
    """
    if not has_syllabus:
        return []
    if not order:
        return ["syllabus.html: no chapter list (.syllabus-chapter links) to check the Next links against"]
    out = []
    page_of = {rel: "/" + rel for rel in nexts}
    by_path = {v: k for k, v in page_of.items()}
    for here, there in zip(order, order[1:]):
        rel = by_path.get(here)
        if rel is None:
            out.append(f"syllabus lists {here}, which is not a page of the book")
            continue
        if nexts.get(rel) != there:
            out.append(f"{rel}: 'Next' leads to {nexts.get(rel)}, the syllabus continues with {there}")
    return out


# ---------------------------------------------------------------------------- the test
def _copy_book(dest: Path) -> Path:
    """A build root: a copy of book/ (no build, no chapters), notebooks/ and data/ linked."""
    shutil.copytree(REPO / "book", dest / "book", ignore=shutil.ignore_patterns("_build", "chapters"))
    for name in ("notebooks", "data"):
        if (REPO / name).exists():
            (dest / name).symlink_to(REPO / name, target_is_directory=True)
    (dest / "book" / "chapters").mkdir()
    return dest


@pytest.fixture(scope="module")
def browser_available() -> None:
    """Skip (user's machine) or fail (``CI`` set) before building anything."""
    reason = _missing_browser_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser check required in CI: {reason}")
        pytest.skip(f"browser check skipped: {reason}")


#: built book folder -> the artifacts folder its chapters wrote (for the CSV comparison)
_ARTIFACTS_OF: dict[str, Path] = {}


@pytest.fixture(scope="module")
def built_book(browser_available, smoke_runs, tmp_path_factory) -> Path:
    given = os.environ.get("AGENTSTUDIES_BROWSER_HTML")
    if given:
        html = Path(given).resolve()
        assert (html / "index.html").is_file(), f"AGENTSTUDIES_BROWSER_HTML={given}: no index.html there"
        return html
    from agentstudies.book import runner

    root = _copy_book(tmp_path_factory.mktemp("browser_book"))
    for name in runner.toc_chapters(REPO):
        result = smoke_runs.get(name)  # raises (naming the chapter) if it does not run
        shutil.copy2(result.output_path, root / "book" / "chapters" / f"{name}.ipynb")
    saved = os.environ.get("AGENTSTUDIES_ARTIFACTS")
    os.environ["AGENTSTUDIES_ARTIFACTS"] = str(smoke_runs.artifacts)  # for generated indexes
    try:
        index = runner.build_book(root, echo=lambda _m: None)
    finally:
        if saved is None:
            os.environ.pop("AGENTSTUDIES_ARTIFACTS", None)
        else:
            os.environ["AGENTSTUDIES_ARTIFACTS"] = saved
    _ARTIFACTS_OF[str(index.parent)] = Path(smoke_runs.artifacts)
    return index.parent


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.browser
def test_every_page_in_chromium(built_book):
    artifacts = _ARTIFACTS_OF.get(str(built_book)) or Path(
        os.environ.get("AGENTSTUDIES_ARTIFACTS") or built_book.parents[2] / "artifacts")
    problems, report = check_book(built_book, artifacts=artifacts if artifacts.is_dir() else None)
    assert report["pages"] > 1, f"only {report['pages']} page(s) in {built_book}"
    assert not problems, (
        f"{len(problems)} problem(s) on {report['pages']} pages (screenshots: {SHOTS}):\n  "
        + "\n  ".join(problems[:60])
    )


_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>t</title></head>
<body><main><article class="bd-article">{body}</article></main></body></html>"""


@pytest.mark.browser
def test_the_checker_catches_what_it_claims(browser_available, tmp_path):
    """A tiny hand-made site: one clean page and one page per kind of fault."""
    site = tmp_path / "site"
    site.mkdir()
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    import base64

    (site / "dot.png").write_bytes(base64.b64decode(png))
    pages = {
        "clean.html": '<p>fine text with <code>$$ in code</code></p><img src="dot.png">',
        "cdn.html": '<p>x</p><script src="https://cdn.example.org/lib.js"></script>',
        "console.html": "<p>x</p><script>console.error('boom')</script>",
        "missing.html": '<p>x</p><img src="nope.png">',
        "math.html": "<p>the estimate \\(\\hat I\\) and $\\tau_i$ are raw</p>",
        "wide.html": '<p>x</p><div style="width: 2000px">wide</div>',
        "nan.html": '<table><caption>Table 1. t</caption><tr><td>NaN</td><td>&lt;NA&gt;</td></tr></table>',
        "nocap.html": '<table><tr><td>1</td></tr></table>',
        "twice.html": '<img src="dot.png"><p>again</p><img src="dot.png">',
        "dupnum.html": ('<table><caption>Table 2.1. ours</caption><tr><td>1</td></tr></table>'
                        '<table><caption><span>Table 2.1 </span>a markdown table</caption><tr><td>2</td></tr></table>'
                        '<table><caption>Table 2.2. next</caption><tr><td>3</td></tr></table>'),
        "texttt.html": '<p>the \\texttt{inspect_ai} log, a stray $d = 0.8 and a price of $5</p>',
        "placeholder.html": '<p>a gain of {paper_gain:.4f} and paper_gain:.4f over (n_pool tasks)</p>',
        "runin.html": '<p>Summary.\n- first point\n- second point</p>',
        "warning.html": '<div class="cell_output"><pre>/tmp/x.py:3: RuntimeWarning: invalid value</pre></div>',
    }
    # what a reader meets: one page per defect (the glossary holds one term, "Cluster")
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="500" viewBox="0 0 1000 500">'
           '<text x="10" y="100" style="font-size: {px}px">success rate</text>'
           '<text transform="rotate(-90 60 300)" x="60" y="300" style="font-size: {px}px">coverage</text></svg>')
    (site / "tiny.svg").write_text(svg.format(px=10))  # shown 300 px wide: 3 px on screen
    (site / "big.svg").write_text(svg.format(px=40))  # 12 px on screen, the rotated label too
    fixed = 'style="table-layout: fixed; width: {w}px"'
    cap = '<caption>Table 1. Coverage of the fixed rule by number of clusters. n = 1 row.</caption>'
    reader_pages = {
        "clean.html": ('<p>fine text with <code>$$ in code</code>; a <a href="glossary.html#term-Cluster">cluster</a>'
                       ' and another cluster.</p><img src="dot.png">'
                       '<figure><img src="big.svg" style="width: 300px"></figure>'
                       f'<table>{cap}<thead><tr><th>clusters</th><th>coverage</th></tr></thead>'
                       '<tbody><tr><td>200</td><td>0.951</td></tr></tbody></table>'),
        "broken.html": (f'<table {fixed.format(w=70)}>{cap}<thead><tr><th>M</th><th>coverage</th></tr></thead>'
                        '<tbody><tr><td>200</td><td style="overflow-wrap: anywhere">0.123456789</td></tr></tbody></table>'),
        "spill.html": (f'<table {fixed.format(w=80)}>{cap}<thead><tr><th>M</th><th>c</th></tr></thead>'
                       '<tbody><tr><td>estimatesse</td><td>1</td></tr></tbody></table>'),
        "colcap.html": ('<table><caption>Table 2. estimate, se by workflow. n = 2 rows.</caption><thead><tr>'
                        '<th>workflow</th><th>estimate</th><th>se</th></tr></thead><tbody>'
                        '<tr><th>a</th><td>0.1</td><td>0.01</td></tr><tr><th>b</th><td>0.2</td><td>0.02</td></tr>'
                        '</tbody></table>'),
        "nanprose.html": "<p>ours NaN; critical value nan; a bias of -0.000 and (True, 'passed', None).</p>",
        "bullets.html": "<p>Findings:<br>\u2022 coverage reappears<br>\u2022 power is low</p>",
        "tinyfig.html": '<figure><img src="tiny.svg" style="width: 300px"></figure>',
        "term.html": "<p>Every cluster is one task with all its runs.</p>",
        "codeok.html": (f'<table {fixed.format(w=90)}>{cap}<thead><tr><th>why</th></tr></thead><tbody><tr><td>set by '
                        '<code>ToolAgentProfile.\u200bp_\u200bdependency_\u200bgiveup</code> and <code>Profile.'
                        '<wbr>p_<wbr>dependency_<wbr>giveup</code></td></tr></tbody></table>'),
        "codebad.html": (f'<table {fixed.format(w=90)}>{cap}<thead><tr><th>why</th></tr></thead><tbody><tr><td>'
                         '<code style="overflow-wrap: anywhere">dependencygiveupfraction</code></td></tr></tbody></table>'),
    }
    pages.update(reader_pages)
    chapter_pages = {  # chapter pages need the result-first box and the rerun box
        "chapters/boxed.html": ('<h1>Boxed</h1><div class="agentstudies-finds"><p>One finding.</p></div>'
                                '<div class="agentstudies-rerun"><pre>pip install -e .\nagentstudies run boxed'
                                '</pre></div><section><h2>Learning goals</h2></section>'),
        "chapters/nobox.html": "<h1>No box</h1><section><h2>Learning goals</h2></section>",
        "chapters/csvdemo.html": (f'<table><caption>Table 3. Coverage by the size of the family. n = 3 rows.'
                                  '</caption><thead><tr><th>size</th><th>coverage</th></tr></thead><tbody>'
                                  '<tr><td>1</td><td>0.270</td></tr><tr><td>2</td><td>0.333</td></tr>'
                                  '<tr><td>3</td><td>0.123</td></tr></tbody></table>'),
    }
    (site / "chapters").mkdir()
    pages.update(chapter_pages)
    artifacts = tmp_path / "artifacts"
    (artifacts / "csvdemo").mkdir(parents=True)
    (artifacts / "csvdemo" / "coverage.csv").write_text("size,coverage\n1,0.266666667\n2,0.333333333\n3,0.1234\n")
    (site / "glossary.html").write_text(_PAGE.format(
        body='<dl class="glossary"><dt id="term-Cluster">Cluster<a class="headerlink" href="#term-Cluster">#</a>'
             '</dt><dd><p>The unit of inference.</p></dd></dl>'))
    for name, body in pages.items():
        (site / name).write_text(_PAGE.format(body=body))
    (site / "search.html").write_text(_PAGE.format(body='<div id="search-results"></div>'))
    # the empty search page must fail: waiting 15 s for a hit that never comes would only cost time
    problems, report = check_book(site, shots=None, widths=(390,), search_timeout_ms=1500,
                                  artifacts=artifacts)
    by_page = {name: [p for p in problems if p.startswith(name)] for name in pages}
    assert by_page["clean.html"] == []
    assert [p for p in problems if p.startswith("glossary.html")] == []
    assert any("token broken inside itself: table: 0." in p for p in by_page["broken.html"]), by_page["broken.html"]
    assert not any("broken" in p for p in by_page["codeok.html"]), by_page["codeok.html"]
    assert any("token broken inside itself: table: " in p for p in by_page["codebad.html"]), by_page["codebad.html"]
    assert any("cell spills into the next: estimatesse" in p for p in by_page["spill.html"]), by_page["spill.html"]
    assert [p for p in by_page["colcap.html"] if "only lists columns" in p] == [
        'colcap.html @ 390px: caption only lists columns: "Table 2. estimate, se by workflow. n = 2 rows."']
    nan_found = " ".join(p for p in by_page["nanprose.html"] if "nan-like" in p)
    assert all(x in nan_found for x in ("ours NaN", "value nan", "-0.000", "(True, ")), nan_found
    assert any("bullet character" in p for p in by_page["bullets.html"])
    assert [p for p in by_page["tinyfig.html"] if "too small" in p] == [
        'tinyfig.html @ 390px: figure label too small at 390 px: tiny.svg: label "success rate" is 3.0 px']
    assert any("not linked on first use: Cluster in" in p for p in by_page["term.html"])
    assert by_page["chapters/boxed.html"] == []
    nobox = " ".join(by_page["chapters/nobox.html"])
    assert "What this chapter finds" in nobox and "agentstudies run nobox" in nobox
    differs = [p for p in by_page["chapters/csvdemo.html"] if "differs from its CSV" in p]
    assert len(differs) == 1 and differs[0].endswith("shows 0.270, coverage.csv holds 0.26667"), differs
    assert any("another origin: https://cdn.example.org/lib.js" in p for p in by_page["cdn.html"])
    assert any("console error: boom" in p for p in by_page["console.html"])
    assert any("image not loaded: nope.png" in p for p in by_page["missing.html"])
    assert any("HTTP 404" in p for p in by_page["missing.html"])
    assert sum("untypeset math" in p for p in by_page["math.html"]) == 2  # \\( and $..$
    assert any("2000" in p or "wider" in p or "px wide" in p for p in by_page["wide.html"])
    assert any("found nothing" in p for p in problems)  # the empty search page
    assert any("['<NA>', 'NaN']" in p for p in by_page["nan.html"])
    assert any("without caption" in p for p in by_page["nocap.html"])
    assert not any("without caption" in p for p in by_page["nan.html"])
    assert any("image shown twice: dot.png" in p for p in by_page["twice.html"])
    assert [p for p in by_page["dupnum.html"] if "used twice" in p] == [
        "dupnum.html @ 390px: number used twice on the page: Table 2.1"]
    assert any("\\texttt" in p for p in by_page["texttt.html"])
    assert [p for p in by_page["texttt.html"] if "raw $" in p] == [
        'texttt.html @ 390px: untypeset math: raw $ in "the \\texttt{inspect_ai} log, a stray $d = 0.8 and a price of $5"']
    assert sum("placeholder" in p for p in by_page["placeholder.html"]) == 3
    assert any("literal '- '" in p for p in by_page["runin.html"])
    assert any("RuntimeWarning" in p for p in by_page["warning.html"])



def test_numbers_against_csv_flags_only_numbers_rounded_twice(tmp_path):
    """Hand-worked: 0.2667 rounded to 0.27 and shown as 0.270, -0.00146 (-0.0015 at four
    decimals) rounded to -0.001 and shown as -0.0010, are flagged; 0.267 (right) and 0.158
    (another value of the table) are not."""
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n0.266666667,-0.00146\n0.333333333,0.1234\n0.6065306597,0.158\n")
    shown = [{"caption": "T", "cells": ["0.270", "0.333", "0.610", "0.123", "\u22120.0010", "0.158", "0.607"]}]
    found = numbers_against_csv(shown, [csv])
    assert [f.split("shows ")[1] for f in found] == [
        "-0.0010, t.csv holds -0.00146", "0.270, t.csv holds 0.26667", "0.610, t.csv holds 0.60653"]
    assert numbers_against_csv([{"caption": "T", "cells": ["0.267", "0.333", "0.607", "0.158 [0.123, 0.333]"]}],
                               [csv]) == []
    # a table that matches no CSV (another unit, another quantity) is not compared at all
    assert numbers_against_csv([{"caption": "T", "cells": ["26.70", "33.30"]}], [csv]) == []

def test_next_links_must_follow_the_syllabus():
    order = ["/chapters/a.html", "/chapters/b.html", "/chapters/c.html"]
    good = {"chapters/a.html": "/chapters/b.html", "chapters/b.html": "/chapters/c.html",
            "chapters/c.html": None}
    assert _next_link_problems(good, order, has_syllabus=True) == []
    bad = dict(good, **{"chapters/a.html": "/chapters/c.html"})
    found = _next_link_problems(bad, order, has_syllabus=True)
    assert found == ["chapters/a.html: 'Next' leads to /chapters/c.html, the syllabus continues with /chapters/b.html"]
    assert "no chapter list" in _next_link_problems(good, [], has_syllabus=True)[0]


@pytest.mark.parametrize("ci", [None, "1"])
def test_missing_browser_is_a_skip_locally_and_a_failure_in_ci(monkeypatch, ci):
    """The policy above, checked without a browser: skip with the reason, or fail in CI."""
    monkeypatch.setattr(sys.modules[__name__], "chromium_path", lambda: None)
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    reason = _missing_browser_reason()
    assert reason is not None and ("Chromium" in reason or "playwright" in reason)
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match="Chromium|playwright"):
        browser_available.__wrapped__()


if __name__ == "__main__":  # python tests/test_browser.py book/_build/html [artifacts]
    found, rep = check_book(Path(sys.argv[1]).resolve(),
                            artifacts=Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else None)
    print(json.dumps({k: v for k, v in rep.items() if k != "per_page"}, indent=1))
    sys.exit(1 if found else 0)
