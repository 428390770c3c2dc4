"""The HTML page (the section "The HTML page"; --html), read back with the standard
library's html.parser, and in a real browser where Chromium is installed: its structure in
each mode, nothing outside itself, hostile text shown as text, each field capped, the score
row as the printed summary says it, and the hostile campaigns' pages.

The HTML page (--html), read back with the standard library's html.parser.

Each mode's page is checked for its structure (header table, statuses, charts as inline SVG,
the records table with a <details> a row), for referencing nothing outside itself, and for
showing hostile judged text as text: a response holding <script>, </details>, a javascript:
link and an SVG payload must not become elements. The key never appears in it.
"""
import html
import html.parser
import json
import os
import re
import struct
import subprocess
import sys
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from screenshot_report import (BROWSER_OWN, BROWSERS, HEIGHT, WIDTH,  # noqa: E402
                               find_chromium, headless, html_supported, report_html)
from stub import (PYTHON, JUDGE_ENV, CommandLineTestCase, StubServer, StubTestCase,  # noqa: E402
                  chat, error, run_main)
from stub import read_text as read  # noqa: E402
from test_batch_files import DATA, EXAMPLES, REPLIES, REPO  # noqa: E402
from test_modes import preferring  # noqa: E402

HOSTILE = ("<script>document.title='pwned'</script></details></td></tr></table>"
           "<a href=\"javascript:alert(1)\">click</a><svg onload=alert(1)><circle r=9 /></svg>"
           "<img src=x onerror=alert(1)><link rel=stylesheet href=https://evil.example/x.css>")


class Page(html.parser.HTMLParser):
    """Every element as (tag, attributes), every text, and the elements still open."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.texts, self.open = [], [], []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in ("meta", "rect", "line", "circle", "br"):
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()

    def handle_data(self, data):
        self.texts.append(data)

    def tags(self, name):
        return [attrs for tag, attrs in self.elements if tag == name]


class HTMLTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.mode = "rating"
        self.srv.responder = lambda request: chat(REPLIES[self.mode][zlib.crc32(
            request.prompt.encode()) % len(REPLIES[self.mode])])

    def page(self, mode, *more, data=None):
        self.mode = mode
        data = data or os.path.join(EXAMPLES, DATA.get(mode, "qa.jsonl"))
        criteria = ["--criteria", os.path.join(EXAMPLES, "helpfulness.json")] * (
            mode == "criterion")
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                 "--mode", mode, "-q", "--html", self.path("page.html"), "-o",
                                 self.path("out.jsonl")] + criteria + list(more) + [data])
        self.assertIn(code, (0, 1), err)
        with open(self.path("page.html"), encoding="utf-8") as f:
            text = f.read()
        return text, Page(text)

    def assert_self_contained(self, text, page):
        self.assertEqual(page.open, [])  # every element closed where it opened
        for tag in ("script", "img", "iframe", "object", "embed", "link", "a", "image"):
            self.assertEqual(page.tags(tag), [], tag)
        for tag, attrs in page.elements:
            self.assertFalse([k for k in attrs if k.startswith("on") or k in ("src", "href")],
                             (tag, attrs))
        values = [v or "" for _, attrs in page.elements for v in attrs.values()]
        self.assertEqual([v for v in values if re.search(r"(?i)://|url\(|javascript:", v)], [])
        style = text[text.index("<style>"):text.index("</style>")]
        self.assertNotRegex(style, r"(?i)url\(|@import|://")
        csp = [m for m in page.tags("meta") if m.get("http-equiv") == "Content-Security-Policy"]
        self.assertEqual(csp[0]["content"].split(";")[0], "default-src 'none'")

    def test_every_mode_renders_a_whole_self_contained_page(self):
        for mode in REPLIES:
            with self.subTest(mode=mode):
                text, page = self.page(mode)
                self.assert_self_contained(text, page)
                self.assertEqual(len(page.tags("h1")), 1)
                with open(self.path("out.jsonl")) as f:
                    records = len(f.readlines())
                self.assertEqual(len(page.tags("details")), records)
                self.assertGreaterEqual(len(page.tags("svg")), 1)
                self.assertIn("judge-model", page.texts)
                statuses = [t for t in page.texts if t in ("ok", "parse_error",
                                                           "empty_response")]
                self.assertTrue(statuses, mode)
                if mode == "systems":
                    self.assertIn("Win rates (95% interval: normal approximation), ranked",
                                  page.texts)
                if mode == "pairwise":
                    self.assertIn("A's win rate (95% interval: bootstrap, 1000 resamples, "
                                  "seed 0)", page.texts)

    def test_hostile_judged_text_shows_as_text(self):
        with open(self.path("hostile.jsonl"), "w") as f:
            for n in range(4):
                f.write(json.dumps({"question": HOSTILE, "answer": HOSTILE, "response": HOSTILE,
                                    HOSTILE: HOSTILE, "id": n}) + "\n")
        self.srv.responder = lambda request: chat("Rating: [[3]] " + HOSTILE)
        text, page = self.page("rating", "--save-prompts", data=self.path("hostile.jsonl"))
        self.assert_self_contained(text, page)
        # the charts' own elements, none of the payload's
        self.assertEqual({tuple(sorted(attrs)) for attrs in page.tags("svg")},
                         {("height", "viewbox", "width")})  # html.parser lowercases
        self.assertNotIn("9", [attrs.get("r") for attrs in page.tags("circle")])
        self.assertTrue(any(HOSTILE in t for t in page.texts))  # shown, whole, as text
        self.assertEqual(page.tags("title"), [{}])
        self.assertNotIn("pwned", [t for t in page.texts if t.startswith("minijudge")])

    def test_the_key_never_appears_and_the_rows_are_the_worst_first(self):
        key = "sk-page-secret-0123456789"
        self.srv.responder = lambda request: (
            error(500, "upstream rejected key " + key) if "Canberra" in request.prompt
            else chat(REPLIES["rating"][zlib.crc32(request.prompt.encode()) % 3]))
        code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m", "-q",
                                 "--max-retries", "0", "--html", self.path("page.html"),
                                 "--html-rows", "5", "-o", self.path("out.jsonl"),
                                 os.path.join(EXAMPLES, "qa.jsonl")],
                                env={"LLM_JUDGE_API_KEY": key})
        with open(self.path("page.html"), encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn(key, text)
        self.assertNotIn("0123456789", text)
        page = Page(text)
        self.assertEqual(len(page.tags("details")), 5)
        with open(self.path("out.jsonl")) as f:
            records = [json.loads(line) for line in f]
        worst = sorted(records, key=lambda r: (r["judge_status"] in ("ok", "empty_response"),
                                               r["judge_score"]))[:5]
        shown = re.findall(r'<tr(?: class="bad")?><td>\d+</td><td>(\w+)</td>', text)
        self.assertEqual(shown, [r["judge_status"] for r in worst])
        self.assertIn("the 5 of {} records with a failure or the lowest scores, those first "
                      "(--html-rows)".format(len(records)), page.texts)

    def test_report_writes_the_page_of_several_files(self):
        for k in range(2):
            run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model", "-q",
                      "--shard", "%d/2" % k, "-o", self.path("s%d.jsonl" % k),
                      os.path.join(EXAMPLES, "qa.jsonl")])
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        proc = subprocess.run([*PYTHON, "-m", "minijudge", "report", self.path(
            "s0.jsonl"), self.path("s1.jsonl"), "--html", self.path("r.html"), "-q"], cwd=REPO,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        self.assertIn(proc.returncode, (0, 1), proc.stderr)
        with open(self.path("r.html"), encoding="utf-8") as f:
            text = f.read()
        page = Page(text)
        self.assert_self_contained(text, page)
        self.assertEqual(len(page.tags("details")), 24)
        self.assertIn("minijudge: s0.jsonl, s1.jsonl", page.texts)


BROWSER = find_chromium()


PAYLOADS = [
    "<script>document.title='pwned'</script>",
    "</details><img src=x onerror=alert(1)>",
    "</details></td></tr></table><img src=x onerror=\"document.title='pwned'\">",
    "<a href=\"javascript:document.title='pwned'\">click me</a>",
    "<svg onload=\"document.title='pwned'\"><circle r=5></circle></svg>",
]


PAYLOADS_TEXT = " ".join(PAYLOADS)


RATING_REPLIES = ["Rating: [[2]]", "Rating: [[4]]", "Rating: [[5]]", "no idea"]


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
    """The HTML report in a real browser: headless Chromium opens the page, photographs it and
    dumps its DOM after scripts ran.

    Thirty records scored against the stub (human labels, a parse error now and then) and
    one hostile record (its question, response and the judge's reply hold a <script>, a
    </details> breakout with an onerror image, a javascript: link and an <svg onload>, each
    of which would set the title) go through ``minijudge report --html`` in a subprocess.
    The screenshot must be a PNG of the window's size; the DOM must keep the page's title
    and its SVG charts, hold the payloads as text and no element made from them; and the
    browser, pointed at a recording proxy, must have asked for nothing beyond its own start-
    up calls.

    Skipped where no Chromium is installed (``.ci/run`` installs Debian's as a dev-only
    tool)."""

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
                        "answer": "a", "response": PAYLOADS_TEXT, "label": 3})
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
            return chat("I refuse. " + PAYLOADS_TEXT)
        return chat(RATING_REPLIES[zlib.crc32(request.prompt.encode()) % len(RATING_REPLIES)])

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


_MIB = 1024 * 1024


_FIELD_CHARS, _FIELDS = 2000, 100  # what docs/outputs.md's "The HTML page" promises


class PageSizeTest(StubTestCase):
    """Issue 28: the --html page shows at most a capped part of each field."""

    def test_each_field_shows_at_most_its_cap_with_what_was_left_out(self):
        # records of 1 MiB (40 made the 42 MB page): a run in a real process, then
        # report over its output
        items = [{"question": "q{}".format(i), "response": "x" * _MIB, "notes": {"n": "y" * 9999}}
                 for i in range(4)]
        page, data = self.path("page.html"), self.write_jsonl("in.jsonl", items)
        self.srv.content = "Rating: 3"
        proc = subprocess.run(
            [*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url, "--html", page,
             "-o", self.path("out.jsonl"), data], cwd=REPO, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        code, out, err = run_main(["report", self.path("out.jsonl"), "--html",
                                   self.path("report.html")])
        self.assertEqual(code, 0, err)
        cap = _FIELD_CHARS
        notes = json.dumps({"n": "y" * 9999})
        for name in (page, self.path("report.html")):
            with open(name, encoding="utf-8") as f:
                html = f.read()
            with self.subTest(page=os.path.basename(name)):
                self.assertLess(len(html.encode("utf-8")), 40000)
                self.assertEqual(html.count("<pre>{}… {} more characters</pre>".format(
                    "x" * cap, _MIB - cap)), 4)
                self.assertEqual(html.count("<pre>{}… {} more characters</pre>".format(
                    minijudge._esc(notes[:cap]), len(notes) - cap)), 4)
                self.assertIn("<pre>Rating: 3</pre>", html)  # short fields whole

    def test_a_record_with_many_fields_shows_the_first_and_the_last_ones(self):
        fields = {"f{:04d}".format(i): i for i in range(1000)}
        data = self.write_jsonl("in.jsonl", [dict(fields, question="q", response="r")])
        page = self.path("page.html")
        self.srv.content = "Rating: 3"
        code, out, err = run_main(["--judge-url", self.srv.url, "--html", page, data])
        self.assertEqual(code, 0, err)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        half, record = _FIELDS // 2, json.loads(out)
        names = list(record)
        filled = {name for name in names if record[name] not in (None, "", {}, [])}
        shown = re.findall(r"<p><b>(.*?)</b></p>", html)
        self.assertEqual(shown, [n for n in names[:half] if n in filled] + ["…"] + [
            n for n in names[-half:] if n in filled])  # the judge's fields come last: shown
        self.assertIn("<pre>Rating: 3</pre>", html)
        self.assertIn("<p><b>…</b></p><pre>{} more fields</pre>".format(len(names) - 2 * half),
                      html)


KEY = "sk-first30c-0123456789abcdef"


def score_row(page):
    """The text of the page's score row (each judge's section has one)."""
    rows = re.findall(r"<tr><th>score</th><td>(.*?)</td></tr>", page, re.S)
    return [html.unescape(row) for row in rows]


class ScoreRowTest(StubTestCase):
    """Issue 30, the first hour (first30c).

    The page's score row says what the printed summary says, a count in every mode."""

    def run_page(self, records, *flags):
        data = self.write_jsonl("data.jsonl", records)
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                   "--html", self.path("page.html"), "-o",
                                   self.path("out.jsonl"), *flags, data],
                                  env={"LLM_JUDGE_API_KEY": KEY})
        page = read(self.path("page.html"))
        for text in (out, err, page, read(self.path("out.jsonl"))):
            self.assertNotIn(KEY, text)
            self.assertNotIn("0123456789", text)
        return code, err, page

    def assert_row(self, records, line, *flags, code=0):
        got, err, page = self.run_page(records, *flags)
        self.assertEqual(got, code, err)
        self.assertEqual(score_row(page), [line])
        self.assertIn("\n  " + line + "\n", err)  # the summary's line, word for word
        got, _, err = run_main(["report", self.path("out.jsonl"), "--html",
                                self.path("again.html")])
        self.assertEqual(got, code, err)
        self.assertEqual(score_row(read(self.path("again.html"))), [line])
        self.assertIn("\n  " + line + "\n", err)

    def test_rating_the_mean_over_the_n_judged(self):
        self.srv.responder = lambda request: chat(
            "Rating: [[5]]" if "good" in request.prompt else "no rating here")
        records = [{"question": "q", "response": text} for text in ("good", "good", "bad")]
        self.assert_row(records, "mean score 0.6667 with failures as 0.0; 1.0 over the 2 "
                                 "judged (5 on the 1-5 scale, 95% CI [5.0, 5.0]); 95% CI [0.0, "
                                 "1.0] (bootstrap, "
                                 "1000 resamples, seed 0)", code=1)

    def test_pairwise_a_s_win_rate_over_the_n_judged(self):
        self.srv.responder = preferring("right", "wrong")
        records = [{"question": "q%d" % i, "response_a": a, "response_b": b}
                   for i, (a, b) in enumerate([("right", "wrong"), ("wrong", "right"),
                                               ("right", "wrong")])]
        self.assert_row(records, "A's win rate 0.6667 (ties count half) over the 3 judged; "
                                 "95% CI [0.0, 1.0] (bootstrap, 1000 resamples, seed 0)",
                        "--mode", "pairwise")

    def test_systems_each_system_s_win_rate_over_the_n_judged(self):
        # the row was empty: "with failures as 0.0;  over the judged; 95% interval"
        self.srv.responder = preferring("x by <b>Ünï</b>", "x by sys1")
        records = [{"question": "q%d" % i, "responses": {
            "sys1": "x by sys1", "<b>Ünï</b>": "x by <b>Ünï</b>", "none judged": "?"}}
            for i in range(2)]
        self.assert_row(records, "ranking over the 2 judged (win rates, ties count half): "
                                 "<b>Ünï</b> 1.0 (4 comparisons), sys1 0.5 (4 comparisons), "
                                 "none judged 0.0 (4 comparisons)", "--mode", "systems")
        self.assertNotIn("<b>Ünï</b>", read(self.path("page.html")))  # escaped

    def test_none_judged_says_so_in_every_mode(self):
        self.srv.content = "no verdict here"
        cases = [("rating", [{"question": "q", "response": "r"}],
                  "mean score 0.0 with failures as 0.0; none judged; 95% CI [0.0, 0.0] "
                  "(bootstrap, 1000 resamples, seed 0)"),
                 ("pairwise", [{"question": "q", "response_a": "a", "response_b": "b"}],
                  "A's win rate: none judged"),
                 ("systems", [{"question": "q", "responses": {"a": "1", "b": "2"}}],
                  "ranking: none judged")]
        for mode, records, line in cases:
            with self.subTest(mode=mode):
                self.assert_row(records, line, "--mode", mode, code=1)


class PageKeepsEveryShownFieldHostileTest(CommandLineTestCase):
    """Issue 28's independent hostile campaign (hostC).

    The page cuts long field names and hides the middle of a long record; a name cut to
    the same text as another's, or a field named like the hidden-fields marker, was dropped
    from the page without a word (on main: one of the two values was not on the page)."""

    def test_two_long_names_alike_in_their_first_2000_characters(self):
        page = self.path("page.html")
        source = self.write_jsonl("in.jsonl", [{"question": "2+2?", "response": "four",
                                                "A" * 2500 + "1": "value-one",
                                                "A" * 2500 + "2": "value-two"}])
        self.srv.content = "4"
        code, records, err = self.run_cli("--html", page, source)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual((code, "value-one" in text, "value-two" in text), (0, True, True))

    def test_a_field_named_like_the_marker_of_hidden_fields(self):
        page = self.path("page.html")
        record = {"question": "2+2?", "response": "four", "\u2026": "value-mine"}
        record.update(("f%d" % i, "v") for i in range(300))
        source = self.write_jsonl("in.jsonl", [record])
        self.srv.content = "4"
        code, records, err = self.run_cli("--html", page, source)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("value-mine", text)
        self.assertIn("<b>\u2026 (2)</b></p><pre>214 more fields</pre>", text)


class PageAgreesWithTheSummaryHostileTest(StubTestCase):
    """Issue 28's second hostile campaign (host2B).

    --html drew a judge that never answered at an offset of 0.0 from the panel (the summary:
    null), as if it had agreed with the panel on every record; a harsh judge's negative offset
was a bar of negative width (none drawn) and its value at x=-216, off the picture."""

    def test_a_judge_with_none_judged_has_no_offset_on_the_page(self):
        other = self.start_stub()
        other.content = "Rating: 1"
        self.srv.content = "Rating: 5"
        down_url = self.down_url()
        config = self.write("judges.json", json.dumps([
            {"name": "j0", "url": self.srv.url}, {"name": "j1", "url": other.url},
            {"name": "j2", "url": down_url, "options": {"max_retries": 0}}]))
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        page, summary = self.path("p.html"), self.path("s.json")
        code, _, err = run_main(["--no-preflight", "--judge-model", "m", "--judges", config,
                                 "--jury", "mean", "--quorum", "2", "--html", page,
                                 "--summary", summary, "--max-error-rate", "1", source])
        self.assertEqual(code, 0, err)
        with open(summary, encoding="utf-8") as f:
            self.assertEqual(json.load(f)["panel"]["offsets"], {"j0": 0.5, "j1": -0.5,
                                                                "j2": None})
        with open(page, encoding="utf-8") as f:
            text = f.read()
        chart = text[text.index("offset from the panel"):]
        chart = chart[:chart.index("</svg>")]
        self.assertIn('<text x="0" y="57">j2</text><text x="184.0" y="57">none judged</text>',
                      chart)
        self.assertNotIn(">0.0<", chart)
        self.assertIn('<text x="0" y="35">j1</text><rect x="180" y="23" width="400.0" '
                      'height="16" fill="#4a7ab5"/><text x="584.0" y="35">-0.5</text>', chart)


if __name__ == "__main__":
    unittest.main()
