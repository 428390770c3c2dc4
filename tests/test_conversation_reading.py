"""Reading a record's conversation once: the command line does not make the judge look for a
conversation in a record it found none in.

Issue 32 had every record read for a conversation twice: by the command line
(_record_conversation, as its flags say) and again by the judge (_example_conversation,
as a Python caller's example is read). Where the two read alike (the default
--conversation-field, the response in field 'response'), the command line's finding of
none now stands for both. These tests hold it to that: over records of every layout the
two readers know (a messages list, a text or null there beside a response or not,
MT-Bench's turns and answers or choices, broken ones), under the flags that change what
the command line reads, the judge's values and prompt are the same with the command line's
finding as when it looks again, and the command line's prompts (--dry-run, a real
process) are those the judge makes of each record alone.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import PYTHON  # noqa: E402

CORPUS = [
    {"question": "q", "response": "r"},
    {"question": "q", "response": "r", "messages": "a text beside a response"},
    {"question": "q", "messages": "a text and no response"},
    {"question": "q", "answer": "r", "messages": "a text, the response in 'answer'"},
    {"question": "q", "response": "r", "messages": None},
    {"question": "q", "messages": None},
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
    {"messages": [{"role": "user", "content": "hi"}], "response": "a reply"},
    {"turns": ["first", "second"], "answers": ["one", "two"]},
    {"turns": ["first"], "choices": [{"index": 0, "turns": ["one"]}]},
    {"turns": ["first"], "answers": ["one", "two too many"]},
    {"turns": "not a list", "answers": ["one"], "question": "q", "response": "r"},
    {"question": "q", "response": "r", "answer": "a reference", "context": "c"},
    {"context": "a context only", "response": "r", "reference": "ref"},
]
FLAGS = [[], ["--response-field", "answer"], ["--turn", "1"],
         ["--conversation-field", "messages"]]


def outcome(call):
    """What ``call()`` returns, or the type and text of what it raises."""
    try:
        return call()
    except Exception as exc:  # the comparison is of the errors too
        return type(exc).__name__, str(exc)


class TheJudgeFindsWhatTheCommandLineFound(unittest.TestCase):
    def setUp(self):
        self.judge = minijudge.LLMJudge(model="judge-model", base_url="http://127.0.0.1:9/v1")
        self.addCleanup(self.judge.close)

    def test_values_and_prompt_are_those_of_a_judge_that_looks_again(self):
        marked = 0
        for flags in FLAGS:
            args = minijudge._arg_parser().parse_args(flags + ["data.jsonl"])
            for number, record in enumerate(CORPUS, 1):
                with self.subTest(flags=flags, record=record):
                    fields = minijudge._item_fields(args, number, record, "rating")
                    if isinstance(fields, minijudge._BadLine):
                        continue
                    looking = {k: v for k, v in fields.items() if k != "_conversation"
                               or v is not minijudge._NO_CONVERSATION}
                    marked += len(looking) < len(fields)
                    self.assertEqual(  # copies: the judge takes its own fields out
                        outcome(lambda: self.judge._values(record, None, dict(fields))),
                        outcome(lambda: self.judge._values(record, None, dict(looking))))
                    self.assertEqual(
                        outcome(lambda: self.judge.messages(record, **fields)),
                        outcome(lambda: self.judge.messages(record, **looking)))
        self.assertGreater(marked, 5)  # the finding was used, not only passed over

    def test_the_command_lines_prompts_are_the_judges_of_each_record_alone(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "data.jsonl")
            with open(path, "w") as f:
                f.writelines(json.dumps(record) + "\n" for record in CORPUS)
            done = subprocess.run([*PYTHON, "-m", "minijudge", "--judge-model", "judge-model",
                                   "--judge-url", "http://127.0.0.1:9/v1", "--dry-run", path],
                                  cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(done.returncode, 0, done.stderr)
        printed = done.stdout.decode("utf-8")
        for record in CORPUS:
            if "reference" in record:  # the command line reads 'answer' alone by default
                continue
            with self.subTest(record=record):
                messages = outcome(lambda: self.judge.messages(record))
                if isinstance(messages, tuple):  # the judge refuses it: so does the run
                    continue
                self.assertIn(messages[-1]["content"], printed)


if __name__ == "__main__":
    unittest.main()
