"""Templates: every built-in renders; fields, aliases and refusals behave as documented."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from minijudge import TEMPLATES, LLMJudge, TemplateError, render  # noqa: E402
from stub import JUDGE_ENV, PYTHON, StubTestCase  # noqa: E402

RECORD = {"question": "What is 2+2?", "answer": "4", "response": "four",
          "response_a": "4", "response_b": "5", "category": "math",
          "criterion_name": "accuracy", "criterion_description": "Is it right?",
          "criterion_options": "- Right\n- Wrong", "rubric_criteria": "- accuracy (1 to 5)",
          "rubric_form": '{"accuracy": <1 to 5>}'}


class RenderTest(unittest.TestCase):
    def test_every_template_renders(self):
        for name in TEMPLATES:
            with self.subTest(template=name):
                text = render(name, RECORD, reference="4")
                self.assertIn("What is 2+2?", text)
                self.assertNotRegex(text, r"\{(?:[a-z_]+|doc\[.*?\])\}")

    def test_rating_without_reference_has_no_reference_section(self):
        self.assertNotIn("Reference", render("rating", question="q", response="r"))
        self.assertIn("[Reference Answer]\na", render("rating_ref", question="q",
                                                      reference="a", response="r"))

    def test_aliases_and_record_fields(self):
        text = render("{answer}|{reference}|{prediction}|{pred}|{output}|{doc[category]}"
                      "|{category}|{extra}", RECORD, reference="4", response="four",
                      extra="x")
        self.assertEqual(text, "4|4|four|four|four|math|math|x")

    def test_a_field_the_record_has_wins_over_an_alias_of_another(self):
        # issue 44: {output} was the response even where the record had its own "output"
        record = {"question": "q", "response": "the model's", "output": "the expected",
                  "answer": "a model's answer", "prediction": "p", "pred": "pd"}
        text = render("{output}|{answer}|{prediction}|{pred}|{response}|{reference}", record,
                      reference="gold", response="the model's")
        self.assertEqual(text, "the expected|a model's answer|p|pd|the model's|gold")
        # a field the record leaves null is not there: the alias stands for it
        self.assertEqual(render("{output}|{answer}", {"output": None, "answer": None},
                                response="r", reference="g"), "r|g")

    def test_keywords_win_over_record(self):
        self.assertEqual(render("{question}", RECORD, question="other"), "other")

    def test_judged_text_with_braces_is_data(self):
        self.assertEqual(render("[{response}]", response="{doc.__class__} {0}"),
                         "[{doc.__class__} {0}]")

    def test_comparative_defaults_and_overrides(self):
        text = render("comparative", RECORD)
        self.assertIn("scale of 1 to 10", text)
        self.assertIn("scale of 0 to 5", render("comparative", RECORD, low=0, high=5))

    def test_errors_word_for_word(self):
        for template, message in [
            ("{missing}", "template needs field 'missing'; got category, question"),
            ("{doc[nope]}", "template field {doc[nope]}: the record has no 'nope'"),
            ("{question.__class__}", "template field {question.__class__} is not allowed: "
                                     "use a name or doc[key], no attribute access; "
                                     "write literal braces as {{ and }}"),
            ("{doc[_private]}", "template field {doc[_private]} is private and refused"),
            ("{_x}", "template field {_x} is private and refused"),
            ("{0}", "template field {0} is positional; name it, e.g. {response}"),
            ('{"score": 4}', "template field {\"score\"} is not allowed: use a name or "
                             "doc[key], no attribute access; write literal braces as {{ and }}"),
            ("{question", "template is not valid str.format text (expected '}' before end "
                          "of string); double literal braces as {{ and }}"),
        ]:
            with self.subTest(template=template):
                with self.assertRaises(TemplateError) as caught:
                    render(template, {"question": "q", "category": "c"})
                self.assertEqual(str(caught.exception), message)
                self.assertIsInstance(caught.exception, ValueError)

    def test_custom_template_error_is_a_judgement_not_a_crash(self):
        judge = LLMJudge("http://127.0.0.1:9", model="m", template="{question} {missing}")
        result = judge.judge({"question": "q"}, {"response": "r"})
        self.assertEqual((result.status, result.score), ("template_error", 0.0))
        self.assertEqual(result.error, "template needs field 'missing'; got question, "
                                       "response")


class ReferenceLineTest(StubTestCase):
    """The summary says "judged without a reference" only where the judge got none."""

    def summary(self, *argv):
        env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
        env["PYTHONPATH"] = os.path.dirname(HERE)
        done = subprocess.run([*PYTHON, "-m", "minijudge", "--judge-url", self.srv.url,
                               "--judge-model", "judge-model", "-o", self.path("out.jsonl")]
                              + list(argv), cwd=self.tmp, env=env, stderr=subprocess.PIPE,
                              timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stderr.decode()

    def test_a_template_that_shows_no_reference_field_is_not_told_it_judged_without_one(self):
        # issue 44: a template showing the reference as {gold} was told "judged without a
        # reference" because the records have no 'answer'
        data = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r", "gold": "g"}])
        template = self.write("gold.txt", "{question}\nGold: {gold}\n{response}\nRate it 1-5.")
        err = self.summary("--template", template, data)
        self.assertEqual(self.srv.requests[-1].prompt, "q\nGold: g\nr\nRate it 1-5.")
        self.assertNotIn("fields:", err)
        # a template that would show a record's 'answer' (the default, rating or rating_ref,
        # or one with {reference_section}) still says so
        shown = self.write("shown.txt", "{question}\n{reference_section}{response}")
        for argv in ([data], ["--template", shown, data]):
            with self.subTest(argv=argv):
                self.assertIn("  fields: no record has field 'answer': judged without a "
                              "reference\n", self.summary(*argv))


if __name__ == "__main__":
    unittest.main()
