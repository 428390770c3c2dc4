"""Migration traps that gave wrong scores without a word: a JSON reply with several
numbers averaged, the rubric's schema sent for a template of one's own, a Jinja template
sent with no item in it, and one named judge with --summary. Against the loopback stub.
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from test_cli import CLITest, parse_lines  # noqa: E402

SCORE_TEMPLATE = 'Score the response 0-10 as JSON {{"score": n}}.\n{question}\n{response}'


class MigrationTest(CLITest):
    def judge(self, **options):
        judge = minijudge.LLMJudge(self.srv.url, model="judge-model", max_retries=0,
                                   **options)
        self.addCleanup(judge.close)
        return judge

    def test_a_json_reply_with_several_numbers_is_not_averaged(self):
        judge = self.judge(template=SCORE_TEMPLATE, parser="json", scale=(0, 10))
        self.srv.content = '{"score": 9, "accuracy": 2, "fluency": 2}'
        j = judge.judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.score), ("parse_error", 0.0))  # was 0.433
        self.assertEqual(j.error, "no JSON object with one number (several: which scores?) "
                         "found in the judge's reply: '{\"score\": 9, \"accuracy\": 2, "
                         "\"fluency\": 2}'")
        self.srv.content = '{"score": 9, "why": "good"}'
        self.assertEqual(judge.judge({"question": "q"}, "r").score, 0.9)
        self.srv.content = '{"correctness": 8, "relevance": 6, "confidence": 3}'
        j = self.judge(template="rubric").judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.score), ("ok", 0.7))  # the rubric reads its two keys

    def test_structured_sends_no_rubric_schema_for_a_template_of_ones_own(self):
        self.srv.content = '{"score": 7}'
        j = self.judge(template=SCORE_TEMPLATE, parser="json", scale=(0, 10),
                       structured=True).judge({"question": "q"}, "r")
        self.assertEqual((j.status, j.score), ("ok", 0.7))
        self.assertNotIn("response_format", self.srv.requests[-1].json)
        self.judge(template="rubric", structured=True).judge({"question": "q"}, "r")
        self.assertEqual(sorted(self.srv.requests[-1].json["response_format"]["json_schema"][
            "schema"]["properties"]), ["correctness", "reasoning", "relevance"])

    def test_a_jinja_template_is_refused_before_anything_is_sent(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        template = self.write("t.txt", "Question: {{ doc.question }}\nAnswer: {{ doc.response "
                                       "}}\nRate it 1-5.")
        code, out, err = self.main("--judge-url", self.srv.url, "--template", template, source)
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: template has no field such as {response} or "
                              "{doc[question]}; this looks like a Jinja template\n")
        with self.assertRaises(minijudge.TemplateError):
            self.judge(template="Rate the answer 1-5.")
        self.assertEqual(self.srv.chat_count, 0)

    def test_comparative_keeps_the_records_context_and_instruction(self):
        source = self.write_jsonl("in.jsonl", [{
            "question": "q", "response_a": "a", "response_b": "b",
            "context": "[Context]\nThe user is a child.\n\n", "instruction": "Judge tone only."}])
        self.srv.content = "7 9"
        code, out, err = self.main("--judge-url", self.srv.url, "--mode", "comparative", source)
        self.assertEqual(code, 0, err)
        prompt = self.srv.requests[-1].prompt
        self.assertTrue(prompt.startswith("[Context]\nThe user is a child.\n\n[Question]\nq"))
        self.assertIn("[System]\nJudge tone only.\n", prompt)  # not the built-in default

    def test_one_named_judge_with_a_summary_file(self):
        config = self.write("judges.json", json.dumps([{"name": "quality"}]))
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = self.main("--judge-url", self.srv.url, "--judges", config,
                                   "--summary", self.path("s.json"), source)
        self.assertEqual(code, 0, err)  # was KeyError: 'judge'
        self.assertEqual(parse_lines(out)[0]["quality_score"], 0.75)
        summary = json.loads(self.read("s.json"))
        self.assertEqual(list(summary), ["judges"])
        self.assertEqual(summary["judges"]["quality"]["records"], 1)

    def test_comparative_asks_on_the_judges_scale(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response_a": "a",
                                                "response_b": "b"}])
        self.srv.content = "3 8"
        code, out, err = self.main("--judge-url", self.srv.url, "--mode", "comparative",
                                   "--scale", "0,10", source)
        self.assertEqual(code, 0, err)
        self.assertIn("on a scale of 0 to 10,", self.srv.requests[-1].prompt)  # was 1 to 10
        self.assertEqual(parse_lines(out)[0]["judge_score"], 0.8)

    def test_a_context_given_in_python_gets_its_own_section(self):
        self.srv.content = "7 9"
        judge = self.judge(template="comparative")
        j = judge.judge({"question": "q"}, response_a="a", response_b="b",
                        context="The user is a child.")
        self.assertEqual(j.status, "ok")
        self.assertTrue(self.srv.requests[-1].prompt.startswith(
            "[Context]\nThe user is a child.\n\n[Question]\nq\n"))  # was "child.[Question]"
        judge.judge({"question": "q"}, response_a="a", response_b="b")
        self.assertTrue(self.srv.requests[-1].prompt.startswith("[Question]\nq\n"))

    def test_a_rubric_reply_that_is_almost_json_is_read(self):
        judge = self.judge(template="rubric")
        for reply in ['correctness: 8\nrelevance: 6',
                      '**Correctness**: 8/10\n**Relevance**: 6/10\nSolid, a little long.',
                      '{"correctness": 8, "relevance": 6,}',
                      "{'correctness': 8, 'relevance': 6, 'reasoning': 'it's fine'}",
                      "Here you go:\n{'correctness': 8,\n 'relevance': 6,\n}\nDone."]:
            self.srv.content = reply
            j = judge.judge({"question": "q"}, "r")
            self.assertEqual((j.status, j.score), ("ok", 0.7), reply)
        for reply in ["Step 1: 3\nStep 2: 4", "correctness: 8, relevance is fine",
                      "{'correctness': 8}"]:
            self.srv.content = reply
            self.assertEqual(judge.judge({"question": "q"}, "r").status, "parse_error", reply)
        judge = self.judge(template=SCORE_TEMPLATE, parser="json", scale=(0, 10))
        self.srv.content = "Score: 8"
        self.assertEqual(judge.judge({"question": "q"}, "r").score, 0.8)
        self.srv.content = "Accuracy: 8\nFluency: 2"  # which one scores? not their mean
        self.assertEqual(judge.judge({"question": "q"}, "r").status, "parse_error")

    def test_the_summary_gives_the_mean_on_the_judges_own_scale(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 3)
        self.srv.push("Rating: 4", "Rating: 2", "no idea")
        code, out, err = self.main("--judge-url", self.srv.url, "--concurrency", "1",
                                   "--max-retries", "0", "--max-error-rate", "1",
                                   "--summary", self.path("s.json"), source)
        self.assertEqual(code, 0, err)
        summary = json.loads(self.read("s.json"))
        self.assertEqual((summary["mean_value"], summary["mean_score_judged"]), (3, 0.5))
        self.assertIn("; 0.5 over the 2 judged (3 on the 1-5 scale, 95% CI [2.0, 4.0]); 95% CI",
                      err)
        self.srv.content = "yes"
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r", "answer": "a"}])
        code, out, err = self.main("--judge-url", self.srv.url, "--mode", "binary",
                                   "--summary", self.path("s.json"), source)
        self.assertEqual(code, 0, err)
        self.assertIsNone(json.loads(self.read("s.json"))["mean_value"])

    def test_pass_threshold_in_python_and_its_bounds(self):
        j = self.judge(pass_threshold=0.75).judge({"question": "q"}, "r")  # "Rating: 4"
        self.assertEqual((j.score, j.details["pass"]), (0.75, True))
        self.assertIs(self.judge(pass_threshold=0.8).judge({"question": "q"}, "r").details[
            "pass"], False)
        self.assertNotIn("pass", self.judge().judge({"question": "q"}, "r").details)
        for bad in (1.5, -0.1, float("nan")):
            with self.assertRaisesRegex(minijudge.JudgeError, "pass_threshold must be a "
                                        "number from 0 to 1"):
                self.judge(pass_threshold=bad)
        source, sent = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}]), 3
        code, out, err = self.main("--judge-url", self.srv.url, "--pass-threshold", "7",
                                   source)
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: --pass-threshold must be a number from 0 "
                              "to 1 (scores are 0-1); got 7.0\n")
        self.assertEqual(self.srv.chat_count, sent)  # none for the run

    def test_an_lm_eval_score_template_on_0_to_10_works_unchanged(self):
        # lm-eval's llm_judge prompts ask for "Score: X.XX" on 0-10 and read it as value / 10
        template = self.write("lm_eval.txt", "Rate the answer from 0 to 10.\n{question}\n"
                                             "{response}\nEnd with: Score: X.XX")
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}] * 3)
        self.srv.push("Mostly right.\nScore: 8.50", "Score: 10.00", "Score: 0.00")
        code, out, err = self.main("--judge-url", self.srv.url, "--template", template,
                                   "--scale", "0,10", "--concurrency", "1", source)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_score"] for r in parse_lines(out)], [0.85, 1.0, 0.0])


if __name__ == "__main__":
    unittest.main()
