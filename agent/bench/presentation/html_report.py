"""``REPORT.html``: the same report as ``REPORT.md``, in one self-contained file a browser opens.

The Markdown is rendered by markdown-it-py (CommonMark plus tables; raw HTML in the text, such as a
model's answer, is escaped, never passed through); every plot is inlined as a ``data:`` URI, and the
page loads nothing from anywhere: no scripts, fonts or styles from the network. An image that does
not decode is replaced by a visible line saying so, and each one that does records its size
(``data-rendered``), so a headless browser can check that the plots really render.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

FILE = "REPORT.html"

STYLE = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #1d1d1f; }
h1, h2, h3 { line-height: 1.25; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13px; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tr:nth-child(even) td { background: #fafafa; }
blockquote { margin: 1em 0; padding: .8em 1.2em; background: #f5f5f5; border-left: 5px solid #9e9e9e; }
.verdict-choice h1 + h2 + blockquote { background: #eef6ee; border-left-color: #2e7d32; }
.verdict-tie h1 + h2 + blockquote, .verdict-too_thin h1 + h2 + blockquote,
.verdict-not_measured h1 + h2 + blockquote { background: #fff8e1; border-left-color: #f9a825; }
.verdict-none_qualifies h1 + h2 + blockquote { background: #fdecea; border-left-color: #c62828; }
code { background: #f3f3f3; padding: 0 .25em; border-radius: 3px; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
.missing-plot { color: #b00020; font-weight: bold; }
"""

_IMG = re.compile(r'<img src="([^"]+)" alt="([^"]*)"')


def _inline(html_text: str, out_dir: Path) -> str:
    """Replace each local image reference with a ``data:`` URI of the file's bytes."""

    def replace(match: re.Match[str]) -> str:
        src, alt = html.unescape(match.group(1)), match.group(2)
        path = out_dir / src
        missing = ("this.replaceWith(Object.assign(document.createElement('p'), {className: 'missing-plot', "
                   "textContent: 'Plot could not be displayed: ' + this.alt}))")
        rendered = "this.dataset.rendered = this.naturalWidth + 'x' + this.naturalHeight"
        if "/" in src or not path.is_file():
            return f'<img data-missing="{html.escape(src)}" src="" onerror="{missing}" alt="{alt}"'
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" onload="{rendered}" onerror="{missing}" alt="{alt}"'

    return _IMG.sub(replace, html_text)


def render(markdown_text: str, out_dir: Path, title: str = "Benchmark report", verdict: str | None = None) -> str:
    """The whole page for ``markdown_text``, with the plots it names read from ``out_dir``; ``verdict`` (the
    recommendation's) colours the answer that opens the report: green for a choice, amber for a tie, thin
    evidence or nothing measured, red when nothing qualifies; every other quote stays grey."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown_text)
    opening = f'<body class="verdict-{html.escape(verdict)}">' if verdict else "<body>"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n{opening}\n"
        f"{_inline(body, out_dir)}</body>\n</html>\n"
    )
