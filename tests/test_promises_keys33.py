"""Issue 33's rate limits are an account's: two judges on one server with different API keys
(two accounts) are each held by their own --rpm, not by one limiter they share; judges with
the same key share one, as every thread does."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import StubTestCase  # noqa: E402


class AccountsTest(StubTestCase):
    def judge(self, key, **options):
        return minijudge.LLMJudge(self.srv.url, model="m", api_key=key, rpm=60, **options)

    def test_two_keys_on_one_server_are_two_limits(self):
        first, second = self.judge("sk-first-account"), self.judge("sk-second-account")
        self.assertIsNot(first._limits, second._limits)

    def test_one_key_is_one_limit(self):
        first, second = self.judge("sk-same"), self.judge("sk-same")
        self.assertIs(first._limits, second._limits)

    def test_a_key_sent_in_another_header_is_another_account(self):
        first = self.judge("sk-one", key_header="api-key")
        second = self.judge("sk-two", key_header="api-key")
        self.assertIsNot(first._limits, second._limits)

    def test_the_key_is_not_in_the_limiters_keys(self):
        judge = self.judge("sk-secret-1234567")
        self.assertNotIn("sk-secret-1234567", repr(list(minijudge._LIMITERS.keys())))
        self.assertIsNotNone(judge)


if __name__ == "__main__":
    unittest.main()
