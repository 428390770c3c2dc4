"""Template variables (issue 46, item 6 d): ``--var NAME=VALUE`` (repeatable), a
``--judges`` entry's ``"vars"`` and ``LLMJudge(vars=...)`` fill ``{NAME}`` in a custom
template, checked alike wherever they come from.

The rule for a name that is taken: one of ours (a field minijudge fills: question,
response, the sections, ...) is refused before any request; a record's own field of that
name is filled by the variable (the run's constant, as a Python keyword is), warned of
once, and ``{doc[name]}`` still reads the record's; an item's keyword in Python wins over
the judge's variable. A variable the template never reads is warned of.

Each case runs ``python -m minijudge`` in a subprocess against a stub that rates as a
real judge would (its reasons, then the rating), and its Python twin side by side.
"""
import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase, chat, run_main  # noqa: E402

TEMPLATE = ("The reader speaks {lang}. Rate how well the response serves that reader, "
            "from 1 to 5.\nQuestion: {question}\nResponse: {response}\nGive your reasons, "
            "then end with Rating: N.")


def by_language(request):
    """A judge's reply: a French reader gets a 5 for a French answer, else a 2."""
    prompt = request.prompt or ""
    match = re.search(r"The reader speaks (\w+)", prompt)
    if not match:
        return None
    if match.group(1) == "French" and "Bonjour" in prompt:
        return chat("It answers in the reader's language.\nRating: 5")
    return chat("It does not speak to this reader.\nRating: 2")


class TemplateVarsTest(StubTestCase):

    def setUp(self):
        super().setUp()
        self.twin = self.start_stub()
        self.srv.responder = self.twin.responder = by_language
        self.template = self.write("lang.txt", TEMPLATE)
        self.source = self.write_jsonl("in.jsonl", [{"question": "Greet me", "response": "Bonjour"},
                                                    {"question": "Greet me", "response": "Hi"}])

    def cli(self, *argv, source=None):
        """(exit code, stderr) of main() in this process: the parser and checks of
        ``python -m minijudge``, without a process's 0.1 s of CPU each (13 runs)."""
        code, self.out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "m",
                                        "--no-preflight", "-o", self.path("out.jsonl"),
                                        "--summary", self.path("s.json"), *argv,
                                        source or self.source])  # out: --dry-run's prompts
        return code, err

    def python_judge(self, **options):
        judge = minijudge.LLMJudge(self.twin.url, model="m", template=TEMPLATE, **options)
        self.addCleanup(judge.close)
        return judge

    def prompts(self, srv):
        return sorted(request.prompt for request in srv.requests if request.json)

    def test_a_var_fills_the_template_from_the_flag_and_python(self):
        code, err = self.cli("--template", self.template, "--var", "lang=French")
        self.assertEqual(code, 0, err)
        self.assertNotIn("warning", err)
        self.assertEqual([r["judge_value"] for r in self.records()], [5, 2])
        prompts = self.prompts(self.srv)
        self.assertTrue(all(p.startswith("The reader speaks French. ") for p in prompts))
        judge = self.python_judge(vars={"lang": "French"})
        got = [judge.judge({"question": "Greet me"}, text).value for text in ("Bonjour", "Hi")]
        self.assertEqual(got, [5, 2])
        self.assertEqual(self.prompts(self.twin), prompts)
        # an item's keyword wins over the judge's variable
        self.assertEqual(judge.judge({"question": "Greet me"}, "Bonjour", lang="German").value,
                         2)

    def test_vars_repeat_and_a_value_keeps_its_equals_signs(self):
        template = self.write("two.txt", "{lang} / {tone}: {question} {response}")
        code, err = self.cli("--template", template, "--var", "lang=French", "--var",
                             "tone=a=b, c", "--var", " lang = Welsh", "--dry-run")
        self.assertEqual(code, 0, err)
        # the name's spaces are trimmed, the value's kept; the last of a name wins
        self.assertIn("[user]\n Welsh / a=b, c: Greet me Bonjour\n", self.out)

    def test_a_judges_entry_has_its_own_vars_over_the_flags(self):
        judges = self.write("judges.json", json.dumps([
            {"name": "fr", "template": "lang.txt", "vars": {"lang": "French"}},
            {"name": "de", "template": "lang.txt"},
            {"name": "n", "template": "lang.txt", "vars": {"lang": 7}}]))
        code, err = self.cli("--judges", judges, "--var", "lang=German")
        self.assertEqual(code, 0, err)
        record = self.records()[0]
        self.assertEqual((record["fr_value"], record["de_value"], record["n_value"]), (5, 2, 2))
        prompts = self.prompts(self.srv)
        for lang in ("French", "German", "7"):
            self.assertEqual(sum(p.startswith("The reader speaks {}.".format(lang))
                                 for p in prompts), 2)
        # two runs with other values asked other prompts: their stamps differ
        self.assertNotEqual(record["fr_run"]["template_sha256"],
                            record["de_run"]["template_sha256"])

    def test_a_record_field_of_the_same_name_is_filled_by_the_var_and_warned_of(self):
        source = self.write_jsonl("own.jsonl", [
            {"question": "Greet me", "response": "Bonjour", "lang": "English"},
            {"question": "Greet me", "response": "Bonjour", "lang": "English"}])
        template = self.write("both.txt", TEMPLATE + " (record: {doc[lang]})")
        code, err = self.cli("--template", template, "--var", "lang=French", source=source)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_value"] for r in self.records()], [5, 5])
        self.assertEqual(err.count("warning: template variable lang replaces the record's own "
                                   "field of that name in the prompt ({doc[lang]} reads the "
                                   "record's)\n"), 1)
        self.assertTrue(all(p.endswith("(record: English)") for p in self.prompts(self.srv)))
        with self.assertLogs("minijudge", "WARNING") as logs:
            judge = minijudge.LLMJudge(judge_fn=lambda m: "Rating: 3", template=TEMPLATE,
                                       vars={"lang": "French"})
            for _ in range(2):
                judge.judge({"question": "q", "lang": "English"}, "r")
        self.assertEqual(len(logs.records), 1)

    def test_a_var_the_template_never_reads_is_warned_of(self):
        code, err = self.cli("--template", self.template, "--var", "lang=French", "--var",
                             "lnag=French", "--dry-run")
        self.assertEqual(code, 0, err)
        self.assertIn("minijudge: warning: template variable lnag is in no field of the "
                      "template (its fields: lang, question, response): it fills nothing\n",
                      err)
        code, err = self.cli("--var", "lang=French", "--dry-run")  # the built-in rating
        self.assertIn("warning: template variable lang is in no field of the template", err)
        with self.assertLogs("minijudge", "WARNING") as logs:
            minijudge.LLMJudge(judge_fn=lambda m: "3", template=TEMPLATE,
                               vars={"lang": "x", "lnag": "y"})
        self.assertEqual(len(logs.records), 1)
        self.assertIn("template variable lnag is in no field", logs.output[0])

    def test_one_of_our_fields_is_refused_from_each_place(self):
        on_the_command_line = ("question", "response1", "criterion_name")
        for name in on_the_command_line + ("response", "answer", "reference_section", "doc",
                                           "pairwise_focus", "turn", "context", "seed"):
            with self.subTest(name=name):
                message = ("template variable {!r} (--var, vars) is a field minijudge fills "
                           "itself, from the record or the item; give yours another "
                           "name".format(name))
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(judge_fn=lambda m: "3", template=TEMPLATE,
                                       vars={name: "x"})
                self.assertEqual(str(caught.exception), message)
                if name not in on_the_command_line:
                    continue
                code, err = self.cli("--template", self.template, "--var", name + "=x")
                self.assertEqual((code, err), (2, "minijudge: error: " + message + "\n"))
                judges = self.write("j.json", json.dumps(
                    [{"name": "a", "template": "lang.txt", "vars": {name: "x"}}]))
                code, err = self.cli("--judges", judges)
                self.assertEqual((code, err), (2, "minijudge: error: judge a: " + message +
                                               "\n"))
        self.assertEqual(self.srv.requests, [])

    def test_a_malformed_var_is_refused_from_each_place(self):
        expected = ("must be an object of template variables: each name a word (a letter, "
                    "then letters, digits or _), each value text or a number; got ")
        for text in ("lang", "=French"):
            with self.subTest(flag=text):
                code, err = self.cli("--template", self.template, "--var", text)
                self.assertEqual((code, err), (2, "minijudge: error: --var must be NAME=VALUE; "
                                                  "got {!r}\n".format(text)) if "=" not in text
                                 else (2, "minijudge: error: --var " + expected +
                                       "{'': 'French'}\n"))
        nan = {"x": float("nan")}
        for bad in ({"9x": "1"}, {"_x": "1"}, {"x y": "1"}, {"x": True}, {"x": None},
                    {"x": [1]}, {"x": {"y": 1}}, nan, ["lang"], "lang=French",
                    {"x" * 101: "1"}):
            with self.subTest(vars=bad):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    minijudge.LLMJudge(judge_fn=lambda m: "3", template=TEMPLATE, vars=bad)
                got = "vars " + expected + repr(bad)
                self.assertEqual(str(caught.exception), got[:300])
                if bad is nan:  # no JSON holds it
                    continue
                judges = self.write("j.json", json.dumps(
                    [{"name": "a", "template": "lang.txt", "vars": bad}]))
                code, err = self.cli("--judges", judges)
                self.assertEqual(code, 2, err)
                self.assertTrue(err.startswith("minijudge: error: judge a: vars " + expected),
                                err)
        judges = self.write("j.json", json.dumps(
            [{"name": "a", "template": "lang.txt", "options": {"vars": {"lang": "x"}}}]))
        code, err = self.cli("--judges", judges)
        self.assertEqual((code, err), (2, "minijudge: error: judge a: vars goes in the "
                                          "judge's \"vars\", not its options\n"))
        self.assertEqual(self.srv.requests, [])

    def test_a_template_field_no_var_sets_says_var_could(self):
        code, err = self.cli("--template", self.template)
        self.assertEqual(code, 2, err)
        self.assertEqual(err, "minijudge: error: line 1 (the first record): template needs "
                              "field 'lang' (the template reads the record's field of that "
                              "name, or --var lang=VALUE's; the record has question, "
                              "response)\n")

    def test_an_empty_value_and_a_huge_one_fill_as_given(self):
        big = "é" * 100000
        code, err = self.cli("--template", self.template, "--var", "lang=", "--dry-run")
        self.assertEqual(code, 0, err)
        self.assertIn("The reader speaks . Rate", self.out)
        judge = minijudge.LLMJudge(judge_fn=lambda m: "3", template=TEMPLATE, vars={"lang": big})
        content = judge.messages({"question": "q"}, "r")[0]["content"]
        self.assertIn(big, content)
        # braces in a value are text, never read again as fields
        judge = minijudge.LLMJudge(judge_fn=lambda m: "3", template=TEMPLATE,
                                   vars={"lang": "{question.__class__}"})
        self.assertIn("speaks {question.__class__}.", judge.messages({"question": "q"},
                                                                     "r")[0]["content"])


if __name__ == "__main__":
    unittest.main()
