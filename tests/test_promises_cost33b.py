"""Issue 33's cost, one record asked several times (--repeats, --reask): when one of its
replies came without usage, the record's tokens and cost are unknown, not the other
replies' alone (that priced a record of two requests as one). And the page (--html) says
what the run spent, as the printed summary does."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, chat, run_main  # noqa: E402
from test_cost import fixed_usage  # noqa: E402


class PartlyUnknownTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = fixed_usage
        self.data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                                  for k in range(2)])

    def run_code(self, *argv):
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--price",
                                 "3,15", "--concurrency", "1", "-o", self.path("out.jsonl"),
                                 "--summary", self.path("s.json")] + list(argv) + [self.data])
        self.assertEqual(code, 0, err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        with open(self.path("s.json"), encoding="utf-8") as f:
            return records, json.load(f), err

    def test_a_repeat_without_usage_leaves_the_records_cost_unknown(self):
        self.srv.push(chat("Rating: 4", usage={}))  # the first record's first repeat
        records, summary, err = self.run_code("--repeats", "2")
        # the second record: two requests of $0.0033 each; the first: one of them unknown
        self.assertEqual([r["judge_cost"] for r in records], [None, 0.0066])
        self.assertEqual(set(records[0]["judge_usage"].values()), {None})
        self.assertEqual(summary["cost"], {"total": 0.0066, "per_record": 0.0066,
                                           "records": 1, "without_usage": 1})
        self.assertIn("1 replies without usage are not counted", err)

    def test_a_reask_without_usage_leaves_the_records_cost_unknown(self):
        self.srv.push(chat("no idea", usage={}))  # read on the re-ask, which has usage
        records, summary, _ = self.run_code("--reask", "1")
        self.assertEqual([r["judge_status"] for r in records], ["ok", "ok"])
        self.assertEqual([r["judge_cost"] for r in records], [None, 0.0033])
        self.assertEqual(summary["cost"]["without_usage"], 1)


class PageTest(StubTestCase):
    def test_the_page_says_the_tokens_and_the_cost(self):
        self.srv.responder = fixed_usage
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(3)])
        page = self.path("page.html")
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--price",
                                 "3,15", "-o", self.path("out.jsonl"), "--html", page, data])
        self.assertEqual(code, 0, err)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        spent = ("<tr><th>spent</th><td>tokens: 3000 prompt, 60 completion<br>cost: "
                 "$0.009900 for 3 records, $0.003300 a record</td></tr>")
        self.assertIn(spent, html)
        code, _, err = run_main(["report", self.path("out.jsonl"), "--html", page])
        self.assertEqual(code, 0, err)
        with open(page, encoding="utf-8") as f:
            self.assertIn(spent, f.read())  # the records' costs, read back


class PriceWordsTest(StubTestCase):
    """--price is two plain numbers: float() alone read '1_0' as 10, and a flag given
    'nan,1' was refused with its parsed form, (nan, 1.0), not the text the user typed."""

    def test_each_wrong_price_is_refused_in_its_own_words(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for text in ("1_0,2", "nan,1", "inf,1", "1e400,1", "1,2,3", "abc", "0x10,1"):
            with self.subTest(text=text):
                code, _, err = run_main(["--judge-url", self.srv.url, "--price", text,
                                         "--dry-run", data])
                self.assertEqual((code, err.strip().splitlines()[-1]), (
                    2, "minijudge: error: --price must be IN,OUT: dollars per million prompt, "
                       "completion tokens, each 0 or more; got {!r}".format(text)))
        code, _, err = run_main(["--judge-url", self.srv.url, "--price", " .5 , 1e2 ",
                                 "--dry-run", data])
        self.assertEqual(code, 0, err)
        self.assertIn("at --price 0.5,100", err)


class StopWordsTest(StubTestCase):
    """--max-cost's first cost_limit said '$0.003300 spent' where the summary then said
    $0.009900: the records in flight were not named. Now what they hold is said, and the
    two add up to the run's total."""

    def test_the_first_cost_limit_names_what_the_records_in_flight_hold(self):
        import re
        self.srv.responder = fixed_usage
        data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                             for k in range(12)])
        code, _, err = run_main(["--judge-url", self.srv.url, "--no-preflight", "--price",
                                 "3,15", "--max-cost", "0.01", "--concurrency", "4", "-o",
                                 self.path("out.jsonl"), "--summary", self.path("s.json"),
                                 data])
        self.assertEqual(code, 1, err)
        with open(self.path("s.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["cost"]["total"], 0.0099)
        first = re.search(r"first cost_limit: not judged: its requests would take the run past "
                          r"--max-cost \$0\.01 \(\$([\d.]+) spent(?:, \$([\d.]+) held for the "
                          r"records being judged)?, \$0\.003300 estimated for this one\)", err)
        self.assertIsNotNone(first, err)
        spent, held = float(first.group(1)), float(first.group(2) or 0)
        self.assertAlmostEqual(spent + held, 0.0099)
