"""A hostile pass over issue 33 (run economics), through the real command line against the
loopback stub: a server's usage that cannot be (negative, true, a float, NaN, text, 10**30),
a record re-asked more often than its run allowed, and --dry-run's run line with a panel's
re-asks."""
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from stub import StubTestCase, chat, run_main  # noqa: E402

# every good reply: 1000 prompt and 20 completion tokens, $0.0033 at --price 3,15
USAGE = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}
BAD = "I think the answer is quite good."


def fixed_usage(request):
    return chat("Rating: 4", usage=dict(USAGE))


def bad_always(request):
    return chat(BAD, usage=dict(USAGE))


class Host33aTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = fixed_usage
        self.data = self.write_jsonl("in.jsonl", [{"question": "q%d" % k, "response": "r"}
                                                  for k in range(3)])

    def run_code(self, *argv):
        return run_main(["--judge-url", self.srv.url, "--no-preflight", "--judge-model",
                         "judge-model", "-o", self.path("out.jsonl"), "--summary",
                         self.path("s.json")] + list(argv) + [self.data])

    def records(self, name="out.jsonl"):
        with open(self.path(name), encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def summary(self, name="s.json"):
        with open(self.path(name), encoding="utf-8") as f:
            return json.load(f)

    def report(self, *argv, name="out.jsonl"):
        return run_main(["report", "--max-error-rate", "1", "--summary", self.path("r.json")]
                        + list(argv)
                        + [self.path(name)])


class ImpossibleUsageTest(Host33aTest):
    """Counts no server can mean were written into the record as sent, summed into the
    summary's tokens (-800 prompt tokens, a total of 10**30) and then refused by report
    over the run's own file: 'judge_usage must be an object of token counts'."""

    CASES = (  # (the server's usage, the record's)
        ({"prompt_tokens": -1000, "completion_tokens": 20, "total_tokens": -980},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": True, "completion_tokens": 20, "total_tokens": 21},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": 21}),
        ({"prompt_tokens": 1000.0, "completion_tokens": 20, "total_tokens": 1020.5},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": float("nan"), "completion_tokens": float("inf"),
          "total_tokens": 7},
         {"prompt_tokens": None, "completion_tokens": None, "total_tokens": 7}),
        ({"prompt_tokens": "1000", "completion_tokens": 20, "total_tokens": "1020"},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": 10 ** 30, "completion_tokens": 20, "total_tokens": 10 ** 30 + 20},
         {"prompt_tokens": None, "completion_tokens": 20, "total_tokens": None}),
        ({"prompt_tokens": 1000, "completion_tokens": 2 ** 62, "total_tokens": 1020},
         {"prompt_tokens": 1000, "completion_tokens": None, "total_tokens": 1020}),
    )

    def run_one(self, usage):
        """A run whose first reply says ``usage`` and the other two USAGE."""
        self.srv.push(chat("Rating: 4", usage=usage))
        code, _, err = self.run_code("--price", "3,15", "--concurrency", "1")
        self.assertEqual(code, 0, err)
        return err

    def assert_summed_without(self, kept, summary):
        """The summary's tokens: the two good replies' and what ``kept`` held."""
        tokens = {name: 2 * count + (kept.get(name) or 0) for name, count in USAGE.items()}
        self.assertEqual(summary["tokens"], tokens)

    def test_each_impossible_count_is_null_in_the_record_and_left_out_of_the_summary(self):
        for usage, kept in self.CASES:
            with self.subTest(usage=usage):
                err = self.run_one(usage)
                records = self.records()
                self.assertEqual(records[0]["judge_usage"], kept)
                self.assertEqual([r["judge_cost"] for r in records], [None, 0.0033, 0.0033])
                self.assert_summed_without(kept, self.summary())
                self.assertEqual(self.summary()["cost"], {
                    "total": 0.0066, "per_record": 0.0033, "records": 2, "without_usage": 1})
                self.assertNotIn("-", err.split("tokens: ")[1].split("\n")[0])

    def test_the_record_is_strict_json(self):
        # NaN and Infinity were written as sent: no JSON, and jq or JSON.parse refuse the line
        self.run_one({"prompt_tokens": float("nan"), "completion_tokens": float("inf")})
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            line = f.readline()
        json.loads(line, parse_constant=lambda name: self.fail("{} in {}".format(name, line)))

    def test_no_count_left_is_no_usage(self):
        self.run_one({"prompt_tokens": -1, "completion_tokens": "x", "total_tokens": 1.5})
        self.assertIsNone(self.records()[0]["judge_usage"])
        self.assertEqual(self.summary()["tokens"], {name: 2 * count
                                                    for name, count in USAGE.items()})

    def test_report_over_the_run_file_agrees_with_the_run(self):
        for usage, _ in self.CASES:
            with self.subTest(usage=usage):
                self.run_one(usage)
                code, _, err = self.report()
                self.assertEqual(code, 0, err)
                ran, reported = self.summary(), self.summary("r.json")
                self.assertEqual(reported["tokens"], ran["tokens"])
                self.assertEqual(reported["cost"], ran["cost"])
                code, _, err = self.report("--price", "3,15")
                self.assertEqual(code, 0, err)
                self.assertEqual(self.summary("r.json")["cost"], ran["cost"])

    def test_a_reask_with_an_impossible_count_leaves_the_sum_unknown_not_low(self):
        # the first reply said -1000 prompt tokens: summed over the re-ask, the record's
        # prompt tokens read 1000 and the record was priced as one request ($0.0036)
        replies = [chat(BAD, usage={"prompt_tokens": -1000, "completion_tokens": 20,
                                    "total_tokens": 1020}), chat("Rating: 4", usage=USAGE)]
        self.srv.push(*replies)
        code, _, err = self.run_code("--price", "3,15", "--concurrency", "1", "--reask", "1")
        self.assertEqual(code, 0, err)
        first = self.records()[0]
        self.assertEqual(first["judge_reasks"], [BAD])
        self.assertEqual(first["judge_usage"], {"prompt_tokens": None, "completion_tokens": 40,
                                                "total_tokens": 2040})
        self.assertIsNone(first["judge_cost"])
        self.assertEqual(self.summary()["cost"]["without_usage"], 1)

    def test_report_reads_an_older_file_whose_counts_no_run_writes_now(self):
        # an older minijudge wrote what the server sent; report names the field, no traceback
        self.run_one(dict(USAGE))
        records = self.records()
        for count in (-5, True, 10 ** 30):
            with self.subTest(count=count):
                usage = dict(USAGE, prompt_tokens=count)
                records[0]["judge_usage"] = usage
                self.write_jsonl("old.jsonl", records)
                code, out, err = self.report(name="old.jsonl")
                self.assertEqual((code, out, err), (2, "", "minijudge: error: {} line 1: "
                                 "judge_usage must be an object of token counts (0 or more) "
                                 "or null; got {!r}\n".format(self.path("old.jsonl"), usage)))
        for count in ("1000", 1000.0):  # what is no whole number is skipped, as a run skips it
            with self.subTest(count=count):
                records[0]["judge_usage"] = dict(USAGE, prompt_tokens=count)
                self.write_jsonl("old.jsonl", records)
                code, _, err = self.report(name="old.jsonl")
                self.assertEqual(code, 0, err)
                self.assertEqual(self.summary("r.json")["tokens"]["prompt_tokens"], 2000)


class ReasksPastTheRunTest(Host33aTest):
    """A record holding more re-asked replies than its run's --reask allowed was counted as
    if sent (report: 're-asked: ... (9 re-asks sent)' of a --reask 1 run); report refuses it
    as it refuses any value no run writes: exit 2, file, line, field."""

    def setUp(self):
        super().setUp()
        self.srv.responder = bad_always

    def assert_refused(self, records, message):
        self.write_jsonl("bad.jsonl", records)
        code, out, err = self.report(name="bad.jsonl")
        self.assertEqual((code, out, err), (2, "", "minijudge: error: {} line 1: {}\n".format(
            self.path("bad.jsonl"), message)))

    def test_more_reasks_than_the_run_allowed_are_refused(self):
        code, _, err = self.run_code("--reask", "1", "--max-error-rate", "1")
        records = self.records()
        self.assertEqual(records[0]["judge_reasks"], [BAD])
        code, _, err = self.report()
        self.assertEqual(code, 0, err)  # the run's own file reads
        records[0]["judge_reasks"] = [BAD] * 3
        self.assert_refused(records, "judge_reasks must be a list of at most 1 replies "
                            "re-asked (the run's --reask 1); got a list of 3")

    def test_a_repeats_member_with_too_many_reasks_is_refused_by_its_place(self):
        code, _, err = self.run_code("--reask", "2", "--repeats", "2", "--max-error-rate", "1")
        records = self.records()
        self.assertEqual(records[0]["judge_members"][1]["reasks"], [BAD, BAD])
        records[0]["judge_members"][1]["reasks"] = [BAD] * 3
        self.assert_refused(records, "judge_members.1.reasks must be a list of at most 2 "
                            "replies re-asked (the run's --reask 2); got a list of 3")

    def test_a_jury_member_is_held_to_its_own_judges_reask(self):
        judges = self.write("j.json", json.dumps([
            {"name": "a", "url": self.srv.url, "model": "m", "options": {"reask": 1}},
            {"name": "b", "url": self.srv.url, "model": "m", "options": {"reask": 2}}]))
        code, _, err = run_main(["--judges", judges, "--jury", "mean", "--no-preflight",
                                 "--max-error-rate", "1", "-o", self.path("out.jsonl"),
                                 self.data])
        records = self.records()
        members = records[0]["judge_members"]
        self.assertEqual((members["a"]["reasks"], members["b"]["reasks"]),
                         ([BAD], [BAD, BAD]))
        code, _, err = self.report()
        self.assertEqual(code, 0, err)
        members["a"]["reasks"] = [BAD, BAD]  # b's limit, not a's
        self.assert_refused(records, "judge_members.a.reasks must be a list of at most 1 "
                            "replies re-asked (the run's --reask 1); got a list of 2")

    def test_a_stamp_whose_reask_is_no_count_is_refused(self):
        code, _, err = self.run_code("--reask", "1", "--max-error-rate", "1")
        records = self.records()
        for record in records:  # a run's records share one stamp
            record["judge_run"]["request"]["reask"] = "9"
        self.assert_refused(records, "judge_run: request must be an object (its on_failure a "
                            "number or null, its reask 0 or more), or a list of them; got "
                            "{!r}".format(records[0]["judge_run"]["request"]))


class DryRunReasksTest(Host33aTest):
    """--dry-run with several judges: each judge's line said '--reask N: up to K re-asks
    more (at most $X)', the run's line left them out, so its total read below the worst
    case --max-cost reserves for."""

    def dry_run(self, *entries):
        judges = self.write("j.json", json.dumps([dict(entry, url=self.srv.url, model="m")
                                                  for entry in entries]))
        code, _, err = run_main(["--judges", judges, "--dry-run", self.data])
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.chat_count, 0)
        return err.splitlines()[-len(entries) - 1:]

    @staticmethod
    def most(line):
        """The dollars a line's re-asks may cost: '(at most $X)'."""
        return float(re.search(r"re-asks more \(at most \$([0-9.]+)\)", line).group(1))

    def test_the_run_line_adds_every_judges_reasks_and_their_cost(self):
        a, b, run = self.dry_run({"name": "a", "options": {"reask": 1, "price": [3, 15]}},
                                 {"name": "b", "options": {"reask": 2, "price": "1,2"}})
        self.assertIn("; --reask 1: up to 3 re-asks more (at most $", a)
        self.assertIn("; --reask 2: up to 6 re-asks more (at most $", b)
        self.assertRegex(run, r"^minijudge: --dry-run: 6 requests, .* at the judges' prices, "
                         r"at most \$[0-9.]+ \(a token per prompt byte: what --max-cost "
                         r"reserves\); up to 9 re-asks more \(at most \$[0-9.]+\)$")
        self.assertAlmostEqual(self.most(run), self.most(a) + self.most(b), delta=2e-6)

    def test_an_unpriced_judges_reasks_are_counted_not_priced(self):
        a, b, run = self.dry_run({"name": "a", "options": {"reask": 1, "price": [3, 15]}},
                                 {"name": "b", "options": {"reask": 1}})
        self.assertTrue(run.endswith("judge b not counted (no --price); up to 6 re-asks more "
                                     "(at most ${:.6f})".format(self.most(a))), run)

    def test_no_judge_priced_no_dollars_and_no_reask_no_words(self):
        _, _, run = self.dry_run({"name": "a", "options": {"reask": 2}}, {"name": "b"})
        self.assertTrue(run.endswith("(max_tokens); up to 6 re-asks more"), run)
        _, _, run = self.dry_run({"name": "a"}, {"name": "b"})
        self.assertTrue(run.endswith("(max_tokens)"), run)
