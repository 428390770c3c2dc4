"""Issue 46 item 1, reasons first: --explain (explain=True in Python, "explain" in a --judges
entry's options) asks every built-in template's judge for a short explanation, then the
verdict alone on a last line; the verdict is read from that line only, the explanation is
kept (judge_explanation, Judgement.explanation) and shown on the page, and max_tokens
defaults to 512. Through the real command line against the loopback stub, whose judge
answers as a real one does: reasons, then the verdict; or reasons and no verdict; or the
verdict followed by trailing spaces and markdown."""
import html
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from batch_engine import run_batch  # noqa: E402
from stub import StubTestCase, chat, rating_logprobs, run_main, run_process  # noqa: E402

ASKED = "First explain your judgement in a few sentences. Then end your reply with one line"

# what the explanation says before the verdict: it quotes verdicts that are not the judge's
WHY = ('The response says "Rating: [[1]]" would be fair and that [[B]] is better, but its '
       'arithmetic is right.\nVerdict: no, say its critics; I disagree.')


def last_line(prompt):
    """The verdict a judge asked to explain gives, by the form its prompt names."""
    if '"Rating: [[N]]"' in prompt:
        return "Rating: [[4]]"
    if '"Verdict: yes"' in prompt or '"Verdict: 1"' in prompt:
        return "Verdict: yes"
    if '"[[A]]" if assistant A' in prompt:  # the answer that says "good" wins
        a = prompt.split("[The Start of Assistant A's Answer]")[1].split("[The End")[0]
        return "[[A]]" if "good" in a else "[[B]]"
    if "the two scores, Assistant 1's then Assistant 2's" in prompt:
        return "3 8"
    if "the name of one option" in prompt:
        return "Good"
    raise AssertionError("no form asked for: " + prompt[-300:])


def judge_replies(request):
    """A judge as a real one answers: asked to explain, it does, then gives the verdict."""
    prompt = request.prompt
    if '{"reasoning": "<two or three sentences>"' in prompt:
        return chat('{"reasoning": "Right, and on point.", "correctness": 8, "relevance": 6}')
    if ASKED not in prompt:
        return chat("[[A]]" if "[[A]]" in prompt else "4")
    return chat(WHY + "\n\n" + last_line(prompt))


CRITERION = {"name": "helpfulness", "description": "Does it help?",
             "options": {"Good": 1.0, "Bad": 0.0}}


class ExplainTest(StubTestCase):
    def setUp(self):
        super().setUp()
        self.srv.responder = judge_replies

    def run_code(self, rows, *argv, code=0):
        data = self.write_jsonl("in.jsonl", rows)
        got, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                  "--no-preflight", "-o", self.path("out.jsonl"),
                                  "--summary", self.path("s.json")] + list(argv) + [data])
        self.assertEqual(got, code, err)
        return err

    def sent(self):
        return [r.prompt for r in self.srv.requests if r.json]


class RatingTest(ExplainTest):
    def test_the_verdict_is_read_from_the_last_line_and_the_explanation_kept(self):
        self.run_code([{"question": "2+2?", "response": "4"}], "--explain")
        record = self.records()[0]
        self.assertEqual((record["judge_status"], record["judge_value"], record["judge_score"]),
                         ("ok", 4, 0.75))
        self.assertEqual(record["judge_explanation"], WHY)
        self.assertEqual(record["judge_raw"], WHY + "\n\nRating: [[4]]")
        self.assertEqual(record["judge_run"]["request"]["explain"], True)
        prompt, = self.sent()
        self.assertTrue(prompt.endswith(
            "\n[The End of the Response]\n\nFirst explain your judgement in a few sentences. "
            "Then end your reply with one line that\nholds only your rating, written "
            "\"Rating: [[N]]\" with N a number from 1 to 5.\nWrite nothing after that line."),
            prompt[-300:])
        self.assertNotIn("Reply with the rating only", prompt)
        self.assertEqual(self.srv.requests[0].json["max_tokens"], 512)

    def test_a_verdict_quoted_in_the_explanation_is_never_read(self):
        # without --explain, the bracketed "[[1]]" outranks the last line's "Rating: 2"
        reply = 'It deserves better than "Rating: [[1]]" and better than [[B]].\nRating: 2'
        self.srv.responder = lambda request: chat(reply)
        self.run_code([{"question": "q", "response": "r"}])
        self.assertEqual(self.records()[0]["judge_value"], 1)
        self.run_code([{"question": "q", "response": "r"}], "--explain")
        record = self.records()[0]
        self.assertEqual((record["judge_value"], record["judge_explanation"]),
                         (2, 'It deserves better than "Rating: [[1]]" and better than [[B]].'))
        for last in ("Rating: [[5]]", "Rating: [[5]]  \t", "**Rating: [[5]]**\n\n```\n\n---\n  ",
                     "Rating: [[5]]\n\n<!-- -->"):
            with self.subTest(last=last):
                self.srv.responder = lambda request: chat(
                    "Rating: 2 was my first thought.\nOn reflection it is complete.\n" + last)
                self.run_code([{"question": "q", "response": "r"}], "--explain")
                record = self.records()[0]
                self.assertEqual((record["judge_status"], record["judge_value"]), ("ok", 5))
                self.assertEqual(record["judge_explanation"],
                                 "Rating: 2 was my first thought.\nOn reflection it is complete.")

    def test_a_reply_without_a_final_verdict_line_is_a_parse_error_saying_so(self):
        for reply, line in (("The response is right and complete.", "The response is right "
                             "and complete."),
                            ("Rating: [[4]]\nI hope this helps!", "I hope this helps!"),
                            ("Because of the error, I would not rate it [[5]].\nIt is wrong.",
                             "It is wrong.")):
            with self.subTest(reply=reply):
                self.srv.responder = lambda request: chat(reply)
                self.run_code([{"question": "q", "response": "r"}], "--explain", code=1)
                record = self.records()[0]
                self.assertEqual(record["judge_status"], "parse_error")
                self.assertEqual(record["judge_error"], "no final verdict line: the judge's last "
                                 "line holds no rating: {!r}".format(line))
                self.assertNotIn("judge_explanation", record)
                self.assertEqual(record["judge_raw"], reply)

    def test_a_reply_without_its_verdict_line_is_reasked_for_the_verdict_alone(self):
        def replies(request):
            if len(request.json["messages"]) == 1:
                return chat("Right and complete.\nI hope this helps!")
            return chat("Rating: [[5]]")
        self.srv.responder = replies
        self.run_code([{"question": "q", "response": "r"}], "--explain", "--reask", "1")
        record = self.records()[0]
        self.assertEqual((record["judge_status"], record["judge_value"]), ("ok", 5))
        self.assertEqual(record["judge_reasks"], ["Right and complete.\nI hope this helps!"])
        self.assertNotIn("judge_explanation", record)  # the reply read gave none
        self.assertIn("Reply again with the rating alone",
                      self.srv.requests[-1].json["messages"][-1]["content"])

    def test_a_judge_that_gives_the_verdict_alone_has_no_explanation(self):
        self.srv.responder = lambda request: chat("4")
        self.run_code([{"question": "q", "response": "r"}], "--explain")
        record = self.records()[0]
        self.assertEqual((record["judge_status"], record["judge_value"]), ("ok", 4))
        self.assertNotIn("judge_explanation", record)

    def test_reasoning_stays_apart_from_the_explanation(self):
        think = "<think>Rating: [[1]]? No.\n</think>"
        self.srv.responder = lambda request: chat(think + "Clear and right.\nRating: [[5]]",
                                                  reasoning_content="It might be a 2.")
        self.run_code([{"question": "q", "response": "r"}], "--explain")
        record = self.records()[0]
        self.assertEqual((record["judge_value"], record["judge_explanation"],
                          record["judge_reasoning"]), (5, "Clear and right.", "It might be a 2."))

    def test_a_reply_cut_off_in_its_explanation_is_truncated(self):
        self.srv.responder = lambda request: chat("The response is right, because",
                                                  finish_reason="length")
        self.run_code([{"question": "q", "response": "r"}], "--explain", code=1)
        self.assertEqual(self.records()[0]["judge_status"], "truncated")

    def test_max_tokens_given_wins_and_the_dry_run_says_what_a_reply_may_take(self):
        self.run_code([{"question": "q", "response": "r"}], "--explain", "--max-tokens", "300")
        self.assertEqual(self.srv.requests[0].json["max_tokens"], 300)
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = run_main(["--dry-run", "--explain", "--judge-model", "m", data])
        self.assertEqual(code, 0, err)
        self.assertIn(ASKED, out)
        self.assertIn("at most 512 completion tokens (max_tokens); --explain: max_tokens 512 a "
                      "reply, for the explanation then the verdict\n", err)

    def test_logprobs_weigh_the_verdict_token_not_one_in_the_explanation(self):
        lead = ["It", " is", " a", " 4", ".\n", "Rating", ":", " [["]
        self.srv.responder = lambda request: chat(
            "It is a 4.\nRating: [[4]]",
            logprobs=rating_logprobs({"4": 0.5, "5": 0.5}, lead=lead))
        self.run_code([{"question": "q", "response": "r"}], "--explain", "--logprobs")
        record = self.records()[0]
        self.assertEqual((record["judge_score_source"], record["judge_expected_rating"]),
                         ("logprobs", 4.5))


class ModesTest(ExplainTest):
    def check(self, mode_args, rows, value, score):
        self.run_code(rows, "--explain", *mode_args)
        record = self.records()[0]
        self.assertEqual((record["judge_status"], record["judge_value"], record["judge_score"]),
                         ("ok", value, score), record)
        self.assertEqual(record["judge_explanation"], WHY)
        self.assertTrue(all(ASKED in prompt for prompt in self.sent()))
        return record

    def test_binary_math_and_trajectory(self):
        item = {"question": "2+2?", "answer": "4", "response": "four"}
        self.check(["--mode", "binary"], [item], True, 1.0)
        self.check(["--mode", "math", "--binary-format", "01"], [item], True, 1.0)
        self.assertIn('"Verdict: 1" if the final answers are equivalent,\n"Verdict: 0" if they '
                      'are not.', self.sent()[-1])
        self.check(["--mode", "trajectory"], [{"messages": [
            {"role": "user", "content": "Say hi."}, {"role": "assistant", "content": "hi"}]}],
            True, 1.0)

    def test_criterion_and_its_options_reversed(self):
        criteria = self.write("c.json", json.dumps(CRITERION))
        record = self.check(["--mode", "criterion", "--criteria", criteria, "--check-position"],
                            [{"question": "q", "response": "r"}], "Good", 1.0)
        self.assertEqual(record["judge_positional_bias"], False)
        self.assertEqual(len(self.sent()), 2)

    def test_comparative(self):
        self.check(["--mode", "comparative"],
                   [{"question": "q", "response_a": "x", "response_b": "y"}], [3, 8], 7 / 9)
        self.assertNotIn("Please first output", self.sent()[0])

    def test_pairwise_keeps_each_orders_explanation(self):
        record = self.check(["--mode", "pairwise"],
                            [{"question": "q", "response_a": "a good one", "response_b": "bad"}],
                            "A", 1.0)
        self.assertEqual(record["judge_explanation_swapped"], WHY)
        self.assertEqual(record["judge_consistent"], True)
        self.assertEqual(len(self.sent()), 2)
        self.check(["--mode", "pairwise", "--single-order"],
                   [{"question": "q", "response_a": "bad", "response_b": "a good one"}], "B", 0.0)
        self.assertNotIn("judge_explanation_swapped", self.records()[0])

    def test_systems_keep_each_pairs_explanations(self):
        self.run_code([{"question": "q", "responses": {"x": "a good one", "y": "bad",
                                                       "z": "meh"}}], "--explain",
                      "--mode", "systems")
        record = self.records()[0]
        self.assertEqual(record["judge_status"], "ok")
        self.assertNotIn("judge_explanation", record)
        self.assertEqual(len(record["judge_pairs"]), 3)
        for pair in record["judge_pairs"]:
            self.assertEqual((pair["explanation"], pair["explanation_swapped"]), (WHY, WHY))

    def test_rubric_asks_as_before_and_keeps_its_reasoning_as_the_explanation(self):
        self.run_code([{"question": "q", "response": "r"}], "--mode", "rubric")
        before = self.sent()
        self.assertNotIn("judge_explanation", self.records()[0])
        self.run_code([{"question": "q", "response": "r"}], "--mode", "rubric", "--explain")
        record = self.records()[0]
        self.assertEqual((record["judge_status"], record["judge_explanation"]),
                         ("ok", "Right, and on point."))
        self.assertEqual(self.sent(), before * 2)  # the same prompt, the same 512 tokens
        self.assertEqual(self.srv.requests[0].json, self.srv.requests[1].json)

    def test_a_custom_template_is_sent_as_written_and_read_by_its_last_line(self):
        template = self.write("t.txt", "Judge {response}. Explain, then end with the rating.")
        self.srv.responder = lambda request: chat("I'd give it [[2]] at first.\n5")
        self.run_code([{"response": "r"}], "--explain", "--template", template)
        record = self.records()[0]
        self.assertEqual((record["judge_value"], record["judge_explanation"]),
                         (5, "I'd give it [[2]] at first."))
        self.assertEqual(self.sent(), ["Judge r. Explain, then end with the rating."])
        self.assertEqual(self.srv.requests[0].json["max_tokens"], 512)


class RunTest(ExplainTest):
    def test_a_panel_of_judges_one_explaining(self):
        judges = self.write("judges.json", json.dumps([
            {"name": "why", "url": self.srv.url, "model": "m", "options": {"explain": True}},
            {"name": "terse", "url": self.srv.url, "model": "m"}]))
        self.run_code([{"question": "q", "response": "r"}], "--judges", judges)
        record = self.records()[0]
        self.assertEqual((record["why_value"], record["why_explanation"]), (4, WHY))
        self.assertEqual(record["terse_value"], 4)
        self.assertNotIn("terse_explanation", record)
        self.run_code([{"question": "q", "response": "r"}], "--judges", judges, "--jury", "mean")
        record = self.records()[0]
        self.assertEqual(record["judge_members"]["why"]["explanation"], WHY)
        self.assertNotIn("explanation", record["judge_members"]["terse"])
        self.assertNotIn("judge_explanation", record)  # they do not agree

    def test_repeats_keep_each_explanation(self):
        self.run_code([{"question": "q", "response": "r"}], "--explain", "--repeats", "2")
        record = self.records()[0]
        self.assertEqual([m["explanation"] for m in record["judge_members"]], [WHY, WHY])
        self.assertEqual(record["judge_explanation"], WHY)  # the repeats agree

    def test_explain_is_part_of_the_cache_key(self):
        cache = self.path("cache.jsonl")
        self.run_code([{"question": "q", "response": "r"}], "--cache", cache)
        self.run_code([{"question": "q", "response": "r"}], "--cache", cache, "--explain")
        self.assertEqual(self.srv.chat_count, 2)  # not the verdict alone cached before
        self.assertEqual(self.records()[0]["judge_explanation"], WHY)
        self.run_code([{"question": "q", "response": "r"}], "--cache", cache, "--explain")
        self.assertEqual(self.srv.chat_count, 2)
        record = self.records()[0]
        self.assertEqual((record["judge_value"], record["judge_explanation"]), (4, WHY))

    def test_batch_export_then_import(self):
        rows = [{"question": "q%d" % k, "response": "r"} for k in range(3)]
        data = self.write_jsonl("in.jsonl", rows)
        head = ["--judge-model", "m", "--explain", "-o", self.path("out.jsonl")]
        code, _, err = run_main(head + ["--batch-export", self.path("requests.jsonl"), data])
        self.assertEqual(code, 0, err)
        parts = [os.path.join(self.tmp, n) for n in os.listdir(self.tmp)
                 if n.startswith("requests.")]
        run_batch(parts, self.path("results.jsonl"), self.srv.url + "/v1/chat/completions")
        self.assertTrue(all(ASKED in prompt for prompt in self.sent()))
        code, _, err = run_main(head + ["--batch-import", self.path("results.jsonl"), data])
        self.assertEqual(code, 0, err)
        self.assertEqual([(r["judge_value"], r["judge_explanation"]) for r in self.records()],
                         [(4, WHY)] * 3)

    def test_report_reads_the_explanation_as_it_reads_the_raw_reply(self):
        self.run_code([{"question": "q", "response": "r"}, {"question": "q2", "response": "r"}],
                      "--explain")
        records = self.records()
        _, summary = self.report(self.path("out.jsonl"))
        self.assertEqual(summary["mean_score"], 0.75)
        # not read for any figure: another tool's value of any kind is shown, never run
        records[1]["judge_explanation"] = {"why": "<b>5</b>"}
        self.write_jsonl("odd.jsonl", records)
        _, again = self.report(self.path("odd.jsonl"), "--html", self.path("page.html"))
        self.assertEqual(again["mean_score"], 0.75)
        with open(self.path("page.html"), encoding="utf-8") as f:
            self.assertIn("<pre>{&quot;why&quot;: &quot;&lt;b&gt;5&lt;/b&gt;&quot;}</pre>",
                          f.read())

    def test_the_page_shows_the_explanation_escaped(self):
        self.srv.responder = lambda request: chat("<script>alert(1)</script> is harmless.\n"
                                                  "Rating: [[3]]")
        self.run_code([{"question": "q", "response": "r"}], "--explain",
                      "--html", self.path("page.html"))
        with open(self.path("page.html"), encoding="utf-8") as f:
            page = f.read()
        self.assertNotIn("<script>", page)
        self.assertIn("</details><pre>{}</pre>".format(
            html.escape("<script>alert(1)</script> is harmless.")), page)

    def test_in_a_process_of_its_own(self):
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        done = run_process("--judge-url", self.srv.url, "--judge-model", "m", "--no-preflight",
                           "--explain", "-q", data, universal_newlines=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        record = json.loads(done.stdout)
        self.assertEqual((record["judge_value"], record["judge_explanation"]), (4, WHY))


class OptionTest(ExplainTest):
    def test_a_wrong_value_is_refused_wherever_it_comes_from(self):
        judges = self.write("judges.json", json.dumps([
            {"name": "j", "url": self.srv.url, "model": "m", "options": {"explain": "yes"}}]))
        code, _, err = run_main(["--judges", judges, "--dry-run", self.write_jsonl("in.jsonl", [
            {"question": "q", "response": "r"}])])
        self.assertEqual(code, 2)
        self.assertIn("minijudge: error: judge j: explain must be true or false; got 'yes'", err)
        for bad in (1, "true", None):
            with self.subTest(bad=bad):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(self.srv.url, model="m", explain=bad)
                self.assertEqual(str(caught.exception),
                                 "explain must be true or false; got {!r}".format(bad))

    def test_what_explain_cannot_go_with(self):
        criteria = self.write("c.json", json.dumps(CRITERION))
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for extra, error in (
                (["--mode", "criterion", "--criteria", criteria, "--assess"],
                 "explain (--explain) and assess (--assess) both ask for the judge's reasons, "
                 "assess in a turn of its own: choose one"),
                (["--structured"], "explain (--explain) asks for the verdict on the reply's "
                 "last line, structured (--structured) for a reply of one JSON object: choose "
                 "one")):
            with self.subTest(extra=extra):
                code, _, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                         "--explain", "--dry-run", *extra, data])
                self.assertEqual((code, err), (2, "minijudge: error: " + error + "\n"))
        judge = minijudge.LLMJudge(self.srv.url, model="m", template="rubric", explain=True,
                                   structured=True)  # its JSON has its reasoning
        self.assertIn("reasoning", json.dumps(judge.params["response_format"]))


class PythonTest(ExplainTest):
    def test_judge_and_compare_give_the_explanation(self):
        judge = minijudge.LLMJudge(self.srv.url, model="m", explain=True)
        j = judge.judge({"question": "q"}, {"response": "r"})
        self.assertEqual((j.status, j.value, j.explanation), ("ok", 4, WHY))
        self.assertEqual(j.to_dict()["explanation"], WHY)
        self.assertIn(ASKED, judge.messages({"question": "q"}, "r")[-1]["content"])
        plain = minijudge.LLMJudge(self.srv.url, model="m").judge({"question": "q"}, "r")
        self.assertIsNone(plain.explanation)
        pairwise = minijudge.LLMJudge(self.srv.url, model="m", template="pairwise", explain=True)
        j = pairwise.compare({"question": "q"}, "bad", "a good one")
        self.assertEqual((j.value, j.explanation, j.details["explanation_swapped"]),
                         ("B", WHY, WHY))

    def test_judge_fn_and_scored_record(self):
        judge = minijudge.LLMJudge(judge_fn=lambda messages: "Fine.\n\nRating: [[3]]\n",
                                   explain=True, model="m")
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.value, j.explanation), (3, "Fine."))
        record = minijudge.scored_record(judge, {"question": "q", "response": "r"}, line=1)
        self.assertEqual(record["judge_explanation"], "Fine.")
        self.assertEqual(record["judge_run"]["request"]["explain"], True)


if __name__ == "__main__":
    import unittest
    unittest.main()
