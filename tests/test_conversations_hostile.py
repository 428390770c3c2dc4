"""Conversations under a hostile pass (issue 44): records a careless or hostile user writes,
read alike by the command line and Python, and never a crash nor a silent lie. Each test
names the defect the pass found: a null 'messages' beside MT-Bench's layout, a record's
own field named like a built-in template's section, one field named as both the
conversation and the response, MT-Bench's bad entries named by their place, 100,000
messages, nesting too deep to show, a null reply beside a dialogue, a response keyword
beside a finished conversation, a lone surrogate in --dry-run, and judge_messages given
something that is not a list of messages.

The command line runs in a real subprocess (against the loopback stub where it sends);
Python through its public API."""
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase  # noqa: E402
from test_conversations import CommandLine, assistant, shown, user  # noqa: E402

OFFLINE = "http://127.0.0.1:9/v1"  # never reached: messages() sends nothing


def offline(**options):
    return minijudge.LLMJudge(OFFLINE, "m", **options)


class NullConversationFieldTest(CommandLine):
    """A null 'messages' is no conversation, as a missing one: the command line refused a
    record that Python judged (a dataset holding both layouts has nulls in each's fields)."""

    def test_a_null_messages_beside_mtbench_is_read_as_mtbench_by_both(self):
        record = {"turns": ["q1", "q2"], "answers": ["a1", "a2"], "messages": None}
        printed = self.dry_run([record])[0]
        self.assertEqual(printed, shown(offline().messages(record)))
        self.assertIn("[Question]\nq2\n\n[The Start of the Response]\na2\n", printed)

    def test_a_null_messages_alone_is_a_missing_response_in_both(self):
        records = self.judged([{"id": 1, "messages": None}])
        self.assertEqual(records[0]["judge_error"], "line 1: no 'response' field (choose one "
                         "with --response-field; the record has id, messages)")
        judgement = minijudge.LLMJudge(self.srv.url, "m").judge({"id": 1, "messages": None})
        self.assertEqual(judgement.status, "template_error")

    def test_a_named_conversation_field_holding_null_is_still_refused(self):
        record = {"turns": ["q1"], "answers": ["a1"], "chat": None}
        records = self.judged([record], "--conversation-field", "chat")
        self.assertEqual(records[0]["judge_error"], "line 1: field 'chat' is a null, expected "
                         "a list of messages (--conversation-field chat)")


if __name__ == "__main__":
    unittest.main()
