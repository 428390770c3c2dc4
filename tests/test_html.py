"""The HTML page (--html), read back with the standard library's html.parser.

Each mode's page is checked for its structure (header table, statuses, charts as inline SVG,
the records table with a <details> a row), for referencing nothing outside itself, and for
showing hostile judged text as text: a response holding <script>, </details>, a javascript:
link and an SVG payload must not become elements. The key never appears in it.
"""
import html.parser
import json
import os
import re
import subprocess
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import PYTHON, JUDGE_ENV, StubTestCase, chat, error, run_main  # noqa: E402
from test_batch_files import DATA, EXAMPLES, REPLIES, REPO  # noqa: E402

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
