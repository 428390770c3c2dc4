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


if __name__ == "__main__":
    unittest.main()
