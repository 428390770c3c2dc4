"""LLMJudge's options refused where they would be lost (issue 44 item 6): a criterion given
a pairwise judge never reaches its prompt, so it is a JudgeError at once, in the words of
the command line's refusal of --criteria outside --mode criterion, before any request."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import minijudge  # noqa: E402

TONE = {"name": "tone", "description": "Is the answer polite?",
        "options": {"Polite": 1.0, "Rude": 0.0}}
REFUSED = ("criterion is for template 'criterion' (or your own); got template 'pairwise', "
           "whose prompt names no criterion")
Q = {"question": "Which is kinder?"}


class PairwiseCriterionTest(unittest.TestCase):
    def setUp(self):
        self.sent = []

    def reply(self, messages):
        self.sent.append(messages)
        return "[[A]]"

    def pairwise(self, **options):
        return minijudge.LLMJudge(judge_fn=self.reply, template="pairwise", **options)

    def test_a_pairwise_judge_made_with_a_criterion_is_refused(self):
        with self.assertRaises(minijudge.JudgeError) as caught:
            self.pairwise(criterion=TONE)
        self.assertEqual(str(caught.exception), REFUSED)

    def test_a_criterion_given_per_item_is_refused_before_any_request(self):
        judge = self.pairwise()
        calls = {
            "compare": lambda: judge.compare(Q, "Sure!", "No.", criterion=TONE),
            "compare, one order": lambda: judge.compare(Q, "Sure!", "No.", criterion=TONE,
                                                        both_orders=False),
            "compare_systems": lambda: judge.compare_systems(
                Q, {"x": "Sure!", "y": "No.", "z": "Maybe."}, criterion=TONE),
            "judge": lambda: judge.judge(Q, response_a="Sure!", response_b="No.",
                                         criterion=TONE),
            "messages": lambda: judge.messages(Q, response_a="Sure!", response_b="No.",
                                               criterion=TONE),
        }
        for name, call in calls.items():
            with self.subTest(name):
                with self.assertRaises(minijudge.JudgeError) as caught:
                    call()
                self.assertEqual(str(caught.exception), REFUSED)
        self.assertEqual(self.sent, [])

    def test_pairs_without_a_criterion_are_judged_as_before(self):
        j = self.pairwise().compare(Q, "Sure!", "No.", criterion=None, both_orders=False)
        self.assertEqual((j.status, j.value, j.score), ("ok", "A", 1.0))
        self.assertEqual(len(self.sent), 1)

    def test_a_criterion_still_reaches_the_templates_that_show_it(self):
        judge = minijudge.LLMJudge(judge_fn=self.reply, criterion=TONE)  # template criterion
        self.assertIn("Criterion: tone", judge.messages(Q, "Sure!")[-1]["content"])
        own = "Criterion: {criterion_name}\n{question}\nA: {response_a}\nB: {response_b}"
        judge = minijudge.LLMJudge(judge_fn=self.reply, template=own, parser="verdict",
                                   criterion=TONE)  # pairs under a criterion, your own way
        j = judge.compare(Q, "Sure!", "No.", both_orders=False)
        self.assertEqual((j.status, j.value), ("ok", "A"))
        self.assertTrue(self.sent[0][-1]["content"].startswith("Criterion: tone\n"))


if __name__ == "__main__":
    unittest.main()
