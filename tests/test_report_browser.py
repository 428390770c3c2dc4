"""The HTML report in a real browser: headless Chromium opens the page, photographs it and
dumps its DOM after scripts ran.

Thirty records scored against the stub (human labels, a parse error now and then) and one
hostile record (its question, response and the judge's reply hold a <script>, a
</details> breakout with an onerror image, a javascript: link and an <svg onload>, each
of which would set the title) go through ``minijudge report --html`` in a subprocess. The
screenshot must be a PNG of the window's size; the DOM must keep the page's title and its
SVG charts, hold the payloads as text and no element made from them; and the browser,
pointed at a recording proxy, must have asked for nothing beyond its own start-up calls.

Skipped where no Chromium is installed (``.ci/run`` installs Debian's as a dev-only tool).
"""
import html.parser
import os
import struct
import sys
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from screenshot_report import (BROWSER_OWN, BROWSERS, HEIGHT, WIDTH,  # noqa: E402
                               find_chromium, headless, html_supported, report_html)
from stub import StubServer, StubTestCase, chat, run_main  # noqa: E402

BROWSER = find_chromium()
PAYLOADS = [
    "<script>document.title='pwned'</script>",
    "</details><img src=x onerror=alert(1)>",
    "</details></td></tr></table><img src=x onerror=\"document.title='pwned'\">",
    "<a href=\"javascript:document.title='pwned'\">click me</a>",
    "<svg onload=\"document.title='pwned'\"><circle r=5></circle></svg>",
]
HOSTILE = " ".join(PAYLOADS)
REPLIES = ["Rating: [[2]]", "Rating: [[4]]", "Rating: [[5]]", "no idea"]
# attributes whose value the browser fetches (an <a href> is followed only when clicked)
LOADS = {"src", "srcset", "poster", "data", "action", "formaction", "background"}


class _Dom(html.parser.HTMLParser):
    """Every element (tag, attrs, text inside it directly), the title and all the text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.text, self._open = [], [], []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append([tag, dict(attrs), ""])
        if tag not in ("img", "br", "hr", "meta", "link", "input", "source", "wbr"):
            self._open.append(self.elements[-1])

    def handle_endtag(self, tag):
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data):
        self.text.append(data)
        if self._open:
            self._open[-1][2] += data

    def tags(self, name):
        return [e for e in self.elements if e[0] == name]

    @property
    def title(self):
        titles = self.tags("title")
        return titles[0][2] if titles else None


def _png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


@unittest.skipUnless(BROWSER, "no Chromium (looked for %s)" % ", ".join(BROWSERS))
class BrowserTest(StubTestCase):
    @classmethod
    def setUpClass(cls):
        if not html_supported():
            raise unittest.SkipTest("this minijudge's report has no --html")

    def setUp(self):
        super().setUp()
        self.srv.responder = self.respond
        records = [{"id": n, "question": "q%d" % n, "answer": "a", "response": "r" * n,
                    "label": 1 + n % 5} for n in range(30)]
        records.append({"id": "hostile", "question": "Which is it? " + PAYLOADS[0],
                        "answer": "a", "response": HOSTILE, "label": 3})
        data = self.write_jsonl("data.jsonl", records)
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                 "--human-field", "label", data, "-o", self.path("out.jsonl"),
                                 "-q"])
        self.assertIn(code, (0, 1), err)
        self.page = self.path("report.html")
        code, err = report_html(self.path("out.jsonl"), self.page, "--human-field", "label")
        self.assertIn(code, (0, 1), err)
        with open(self.page, encoding="utf-8") as f:
            self.source = _Dom(f.read())

    @staticmethod
    def respond(request):
        if "pwned" in request.prompt:  # the judge echoes the payload: a parse error
            return chat("I refuse. " + HOSTILE)
        return chat(REPLIES[zlib.crc32(request.prompt.encode()) % len(REPLIES)])

    def browse(self, *args):
        proxy = StubServer().start()  # any http(s) request the page makes lands here
        self.addCleanup(proxy.stop)
        out, _ = headless(BROWSER, self.page, *args, profile=self.path("profile"),
                          proxy=proxy.url)
        asked = [r.method + " " + r.path for r in proxy.requests if r.path not in BROWSER_OWN]
        self.assertEqual(asked, [], "the page asked the network")
        return out

    def test_the_page_renders_and_the_hostile_record_stays_text(self):
        png = self.path("shot.png")
        dom = _Dom(self.browse("--screenshot=" + png, "--dump-dom"))  # one launch does both
        self.assertGreater(os.path.getsize(png), 1000)
        self.assertEqual(_png_size(png), (WIDTH, HEIGHT))

        title = self.source.title
        self.assertTrue(title and "pwned" not in title, title)
        self.assertEqual(dom.title, title)
        svgs = len(self.source.tags("svg"))
        self.assertGreater(svgs, 0, "the page has no SVG chart")
        self.assertEqual(len(dom.tags("svg")), svgs)
        self.assertGreater(len(dom.tags("details")), 30)

        for tag, attrs, inner in dom.elements:
            with self.subTest(tag=tag, attrs=attrs):
                self.assertNotIn("pwned", inner if tag in ("script", "style") else "")
                for name, value in attrs.items():
                    value = (value or "").strip().lower()
                    self.assertFalse(name.startswith("on") and ("pwned" in value or
                                                                "alert" in value))
                    self.assertFalse(value.startswith("javascript:"))
                    self.assertNotIn("pwned", value)
                self.assertFalse(tag == "img" and attrs.get("src") == "x")
        text = "".join(dom.text)
        for payload in PAYLOADS:
            with self.subTest(payload=payload):
                self.assertTrue(payload in text, "the payload does not show as text")

    def test_the_page_references_nothing_outside_itself(self):
        for tag, attrs, inner in self.source.elements:
            for name, value in attrs.items():
                if name in LOADS or name in ("href", "xlink:href") and tag != "a":
                    with self.subTest(tag=tag, name=name, value=value):
                        self.assertRegex(value or "", r"^(#|data:|$)")
            if tag == "style":
                self.assertNotRegex(inner, r"(?i)url\(\s*['\"]?(?!#|data:)|@import")
            if tag == "script":
                self.assertNotIn("src", attrs)


if __name__ == "__main__":
    unittest.main()
