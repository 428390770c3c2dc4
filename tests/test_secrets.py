"""Secrets (and sizes): the API key and every other secret a run is given stay out of
what it prints and writes, and off its command line; what a hostile URL, header,
environment, template or record must not get out of a run.

Issue 11, secrets and sizes: what a hostile URL, header, environment, template or
record must not get out of ``python -m minijudge``.

A signature in the URL, the token of an ``Authorization: Bearer`` header, a cookie, any
unknown ``--header``: none of them may show in stdout, stderr, the -o file or the
--summary file, even when the server echoes them (decoded or percent-encoded). An
OPENAI_API_KEY bound for a plain-http remote judge is warned about. A template asking
for a 100 MB width is refused, and no message lists 10,000 names.

A run holding a secret the server echoes back (a signed URL, a header's token) is the real
command line in a subprocess against the loopback StubServer: what could leak is anything
the process writes. The rest (a key typed on the command line, the clear-text warning, a
template's width, lists of names) is main() in this process, which refuses, warns and
names alike (0.05 s of CPU less a run, some 30 runs). No traffic leaves the machine (the
remote URLs are only ever --dry-run).
"""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
import stub  # noqa: E402
from stub import (PYTHON, CommandLineTestCase, StubTestCase, run_main,  # noqa: E402
                  without_judge)

SIG_DECODED = "Zm9vYmFy+c2VjcmV0/ZXhhbXBsZQ=="  # an Azure SAS signature, base64
SIG_ENCODED = "Zm9vYmFy%2Bc2VjcmV0%2FZXhhbXBsZQ%3D%3D"
AZURE_QUERY = "api-version=2024-02-01&sp=r&sig={}&code=s3cr".format(SIG_ENCODED)
BEARER = "sk-hdr-4f9a8b7c6d5e"
COOKIE = "ck-session-77aa88bb"
GATEWAY = "gw-token-31415926"
ORG = "org-visible-2718"
KEY = "sk-env-0123456789abcdef"


def start(argv, *, env=None):
    """``python -m minijudge argv``, started; no judge settings of ours leak in."""
    env = without_judge(env)
    return subprocess.Popen([*PYTHON, "-m", "minijudge"] + [str(a) for a in argv],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc, timeout=30):
    """(exit code, stdout, stderr) of a process from start()."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return proc.returncode, out.decode(), err.decode()


def run(argv, *, env=None, timeout=30):
    return finish(start(argv, env=env), timeout)


def run_all(runs):
    """main() for each of {name: (argv, env)}, in this process, one after another, ``env``
    added to the environment. {name: (exit code, stdout, stderr)}"""
    return {name: run_main(argv, env) for name, (argv, env) in runs.items()}


def echo(status, *parts):
    """An OpenAI-style error whose message repeats what the request carried."""
    def body(request, server):
        message = " ".join(part(request) if callable(part) else part for part in parts)
        return {"error": {"message": message, "type": "invalid_request_error"}}
    return stub.error(status, "")._replace(body=body)


class SecretsHostileTest(StubTestCase):
    def records(self, n=3, **extra):
        return self.write_jsonl("in.jsonl", [dict({"id": i, "question": "q%d" % i,
                                                  "response": "r%d" % i}, **extra)
                                             for i in range(n)])

    def everything(self, stdout, stderr):
        """Every text the user keeps: the streams, the -o file and the --summary file."""
        texts = {"stdout": stdout, "stderr": stderr}
        for name in ("out.jsonl", "summary.json"):
            if os.path.exists(self.path(name)):
                with open(self.path(name), encoding="utf-8") as f:
                    texts[name] = f.read()
        return texts

    def assertNowhere(self, secret, texts):
        for where, text in texts.items():
            self.assertNotIn(secret, text, "{} leaked into {}".format(secret, where))


class UrlSignatureHostileTest(SecretsHostileTest):
    def test_sas_signature_hidden_in_summaries_records_check_and_repr(self):
        url = "{}/openai/deployments/judge/chat/completions?{}".format(self.srv.url,
                                                                       AZURE_QUERY)
        # the server echoes the signature as it was sent and as it decoded it
        self.srv.push(echo(403, "signature", SIG_DECODED, "does not match for",
                           lambda r: "sig=" + SIG_ENCODED + " in " + r.path))
        code, out, err = run(["--judge-url", url, "--judge-model", "judge-model",
                              "--max-retries", "0", "--concurrency", "1",
                              "-o", self.path("out.jsonl"),
                              "--summary", self.path("summary.json"), self.records()])
        self.assertEqual(code, 1, err)  # one record of three failed: over --max-error-rate
        self.assertEqual(self.srv.requests[-1].query["sig"], SIG_DECODED)  # it was sent
        shown = (self.srv.url + "/openai/deployments/judge/chat/completions?"
                 "api-version=2024-02-01&sp=r&sig=<hidden>&code=<hidden>")
        with open(self.path("summary.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["judge_url"], shown)
        self.assertIn("at " + shown, err)
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            first = json.loads(f.readline())
        self.assertEqual(first["judge_error"], "http 403 from POST {}: signature <hidden> "
                         "does not match for sig=<hidden> in /openai/deployments/judge/"
                         "chat/completions".format(shown))
        code, check_out, check_err = run(["--check", "--judge-url", url,
                                          "--judge-model", "judge-model"])
        self.assertEqual((code, check_out.splitlines()[0]), (0, "url: " + shown), check_err)
        texts = dict(self.everything(out, err), check=check_out + check_err,
                     repr=repr(minijudge.LLMJudge(url, "m")))
        self.assertEqual(texts["repr"], "LLMJudge({!r}, model='m', template='rating')".format(
            shown))
        for secret in (SIG_DECODED, SIG_ENCODED, "sig=Zm9v", "code=s3cr"):
            self.assertNowhere(secret, texts)

    def test_signature_in_an_error_naming_the_url_is_hidden(self):
        url = "{}/v1?{}".format(self.srv.url, AZURE_QUERY)
        self.srv.models = ["a", "b"]  # no model given and two listed: the error names the URL
        code, out, err = run(["--judge-url", url, self.records()])
        self.assertEqual(code, 1)
        self.assertEqual(err, "minijudge: error: preflight failed: no model given and GET "
                         "{}/v1/models?api-version=2024-02-01&sp=r&sig=<hidden>&code=<hidden> "
                         "lists a, b: pass one with model= or --judge-model\n".format(
                             self.srv.url))


class HeaderSecretHostileTest(SecretsHostileTest):
    def test_bearer_token_cookie_and_unknown_header_hidden_when_echoed(self):
        self.srv.require_key = BEARER  # the key comes only from --header
        self.srv.push(echo(401, "incorrect API key provided:", BEARER, "cookie", COOKIE,
                           "gateway", GATEWAY, "organization", ORG))
        code, out, err = run([
            "--judge-url", self.srv.url, "--judge-model", "judge-model", "--max-retries", "0",
            "--header", "Authorization: Bearer " + BEARER,
            "--header", "Cookie: theme=dark; session=" + COOKIE,
            "--header", "X-Gateway: " + GATEWAY, "--header", "OpenAI-Organization: " + ORG,
            "-o", self.path("out.jsonl"), "--summary", self.path("summary.json"),
            self.records()])
        self.assertEqual(code, 1, err)  # a 401 stops the run
        sent = self.srv.requests[-1].headers
        self.assertEqual((sent["authorization"], sent["cookie"], sent["x-gateway"]),
                         ("Bearer " + BEARER, "theme=dark; session=" + COOKIE, GATEWAY))
        texts = self.everything(out, err)
        self.assertIn("incorrect API key provided: <hidden> cookie <hidden> gateway <hidden> "
                      "organization " + ORG, texts["out.jsonl"])  # a harmless one stays
        self.assertIn("<hidden>", texts["summary.json"])
        for secret in (BEARER, COOKIE, GATEWAY):
            self.assertNowhere(secret, texts)


class ClearTextKeyHostileTest(SecretsHostileTest):
    WARNING = ("minijudge: warning: sending OPENAI_API_KEY in clear text to "
               "http://judge.invalid:8000 (not https, not loopback); set LLM_JUDGE_API_KEY "
               "for this judge, or unset OPENAI_API_KEY if it needs no key\n")

    def test_openai_key_to_plain_http_remote_is_warned_once(self):
        code, out, err = run_main(["--dry-run", "--judge-url", "http://judge.invalid:8000/v1",
                              "--judge-model", "m", self.records(2)],
                             env={"OPENAI_API_KEY": KEY})
        err = "".join(line for line in err.splitlines(True)  # but the estimate
                      if not line.startswith("minijudge: --dry-run: "))
        self.assertEqual((code, err), (0, self.WARNING))
        self.assertEqual(out.count("--- line"), 2)  # the run itself went on

    def test_no_warning_for_https_loopback_or_a_judge_key(self):
        cases = {"https": ("https://judge.invalid:8000", {"OPENAI_API_KEY": KEY}),
                 "loopback": (self.srv.url, {"OPENAI_API_KEY": KEY}),
                 "localhost": ("http://localhost:9", {"OPENAI_API_KEY": KEY}),
                 "LLM_JUDGE_API_KEY": ("http://judge.invalid:8000", {
                     "OPENAI_API_KEY": KEY, "LLM_JUDGE_API_KEY": "sk-judge-1234567890"}),
                 "no key": ("http://judge.invalid:8000", {}),
                 "no URL: a dry run sends nothing": (None, {"OPENAI_API_KEY": KEY})}
        source = self.records(1)
        results = run_all({name: (["--dry-run", "--judge-model", "m", source] + (
            ["--judge-url", url] if url else []), env) for name, (url, env) in cases.items()})
        for name, (code, out, err) in results.items():
            with self.subTest(name):
                err = "".join(line for line in err.splitlines(True)  # but the estimate
                              if not line.startswith("minijudge: --dry-run: "))
                self.assertEqual((code, err), (0, ""))


class TemplateBoundHostileTest(SecretsHostileTest):
    def test_huge_width_or_precision_is_refused_before_anything_is_sent(self):
        cases = {"{response!r:>99999999}": "template field {response}: format spec "
                 "'>99999999' has a width or precision over 1000",
                 "{question:.5000}": "template field {question}: format spec '.5000' has "
                 "a width or precision over 1000",
                 "{doc[id]:0>1001d}": "template field {doc[id]}: format spec '0>1001d' has "
                 "a width or precision over 1000",
                 "{response:>" + "0" * 60 + "1001}": "template field {response}: format "
                 "spec '>" + "0" * 49 + "' has a width or precision over 1000"}  # cut at 50
        source = self.records(1)
        results = run_all({template: (["--judge-url", self.srv.url, "--judge-model", "m",
                                       "--template", self.write("t%d.txt" % i, template),
                                       source], None)
                           for i, template in enumerate(cases)})
        for template, message in cases.items():
            with self.subTest(template):
                self.assertEqual(results[template], (2, "", "minijudge: error: " + message
                                                     + "\n"))
        self.assertEqual(self.srv.requests, [])

    def test_width_within_the_bound_is_filled(self):
        code, out, err = run_main(["--dry-run", "--judge-url", self.srv.url, "--template",
                              self.write("t.txt", "[{response:>1000}] {doc[id]:03d}"),
                              self.records(1)])
        err = "".join(line for line in err.splitlines(True)  # but the estimate
                      if not line.startswith("minijudge: --dry-run: "))
        self.assertEqual((code, err), (0, ""))
        self.assertIn("[" + " " * 998 + "r0] 000", out)


class NameListHostileTest(SecretsHostileTest):
    FIELDS = {"f%05d" % i: i for i in range(10000)}

    def test_record_with_ten_thousand_fields_and_no_response(self):
        source = self.write_jsonl("in.jsonl", [dict(self.FIELDS, question="q")])
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                   "-o", self.path("out.jsonl"), source])
        self.assertEqual(code, 1, err[:500])
        with open(self.path("out.jsonl"), encoding="utf-8") as f:
            error = json.loads(f.read())["judge_error"]
        names = ", ".join("f%05d" % i for i in range(20))
        self.assertEqual(error, "line 1: no 'response' field (choose one with "
                         "--response-field; the record has {} and 9981 more)".format(names))
        self.assertLess(len(err), 2000)

    def test_template_field_missing_from_a_huge_record(self):
        source = self.write_jsonl("in.jsonl", [dict(self.FIELDS, response="r")])
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                   "--template", self.write("t.txt", "{nosuch}"), source])
        self.assertEqual((code, out), (2, ""))
        self.assertEqual(err, "minijudge: error: line 1 (the first record): template needs "
                         "field 'nosuch' (the template reads the record's field of that name, "
                         "or --var nosuch=VALUE's; the record has {} and 9981 more)\n".format(
                             ", ".join(sorted(self.FIELDS)[:20])))

    def test_server_listing_a_thousand_models(self):
        self.srv.models = ["model-%04d" % i for i in range(1000)]
        results = run_all({"run": (["--judge-url", self.srv.url, self.records(1)], None),
                           "check": (["--check", "--judge-url", self.srv.url,
                                      "--judge-model", "model-0999"], None)})
        code, out, err = results["run"]
        self.assertEqual(code, 1)
        self.assertEqual(err, "minijudge: error: preflight failed: no model given and GET "
                         "{}/v1/models lists {} and 980 more: pass one with model= or "
                         "--judge-model\n".format(self.srv.url, ", ".join(
                             self.srv.models[:20])))
        code, out, err = results["check"]
        self.assertEqual(code, 0, err)
        self.assertIn("\nmodels: {} and 980 more\n".format(", ".join(self.srv.models[:20])),
                      out)


ACCENTED_KEY = "sk-first30b-\u00e9-SECRET-0123456789"


class KeyFlagsTest(CommandLineTestCase):
    """Issue 30, part first30b: `--api-key KEY`, `--model M` and their kin are answered with a
    hint (exit 2), the key never echoed nor taken as the input file.

    `--api-key KEY` was an unrecognised argument and the key the input file's name
    (`--api-key=KEY` and a key after the input were echoed whole; `--key KEY` was taken as
    --key-header KEY); `--model M` an unrecognised argument."""

    def assert_no_key(self, *texts):
        for text in texts:
            self.assertNotIn(ACCENTED_KEY, text)
            self.assertNotIn("SECRET", text)

    def test_a_key_flag_is_refused_with_the_variables_to_set(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        hint = ("minijudge takes no API key on the command line (other users can read it in "
                "the process list): set LLM_JUDGE_API_KEY (or OPENAI_API_KEY) in the "
                "environment")
        cases = ((["--api-key", ACCENTED_KEY, source], "--api-key"),
                 (["--api-key=" + ACCENTED_KEY, source], "--api-key"),
                 ([source, "--api-key", ACCENTED_KEY], "--api-key"),
                 (["--api_key", ACCENTED_KEY, source], "--api_key"),
                 (["--openai-api-key", ACCENTED_KEY, source], "--openai-api-key"),
                 (["--OPENAI_API_KEY=" + ACCENTED_KEY, source], "--OPENAI_API_KEY"),
                 (["report", "--token", ACCENTED_KEY, source], "--token"))
        for argv, flag in cases:
            with self.subTest(argv=argv):
                # in the test's folder, as a process started there: no file named the key
                code, out, err = run_main(["--judge-url", self.srv.url] + argv, cwd=self.tmp)
                self.assertEqual((code, out, err), (2, "", "minijudge: error: {}: {}\n".format(
                    flag, hint)))
                self.assert_no_key(out, err)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["in.jsonl"])  # no file named the key
        self.assertEqual(self.srv.requests, [])

    def test_key_is_no_abbreviation_of_key_header(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, out, err = self.run_cli("--key", ACCENTED_KEY, source)
        self.assertEqual((code, out, err), (2, [], "minijudge: error: --key: minijudge takes "
                         "no API key on the command line (other users can read it in the "
                         "process list): set LLM_JUDGE_API_KEY (or OPENAI_API_KEY) in the "
                         "environment; --key-header NAME names the header it is sent in\n"))
        self.assertEqual(self.srv.requests, [])

    def test_any_other_flag_named_for_a_secret_is_not_echoed(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for flag in ("--my-secret-" + ACCENTED_KEY, "--judge-api-key",
                     "--hf_token=" + ACCENTED_KEY, "--passwd", "--bearer",
                     "--auth=" + ACCENTED_KEY):
            with self.subTest(flag=flag[:16]):
                code, out, err = self.run_cli(flag, source)
                self.assertEqual((code, out), (2, []))
                self.assertTrue(err.startswith("minijudge: error: an option named for a key "
                                               "or token: minijudge takes no API key"), err)
                self.assert_no_key(err)

    def test_real_flags_with_such_words_still_work(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        code, records, err = self.run_cli("--max-tokens", "20", "--key-header", "api-key",
                                          source)
        self.assertEqual((code, records[0]["judge_status"]), (0, "ok"))
        self.assertEqual(self.srv.requests[0].json["max_tokens"], 20)

    def test_a_model_or_url_flag_points_to_the_judges_own(self):
        source = self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])
        for argv, error in (
                (["--model", "gpt-4o"], "--model: the judge's model is --judge-model M (or "
                 "LLM_JUDGE_MODEL in the environment)"),
                (["--model_name=gpt-4o"], "--model_name: the judge's model is --judge-model M "
                 "(or LLM_JUDGE_MODEL in the environment)"),
                (["--base-url", "http://h/v1"], "--base-url: the judge's URL is --judge-url URL "
                 "(or LLM_JUDGE_API_BASE in the environment)")):
            with self.subTest(argv=argv):
                code, out, err = run_main(argv + [source])
                self.assertEqual((code, out, err), (2, "", "minijudge: error: " + error + "\n"))

    def test_after_a_double_dash_it_is_a_file_name(self):
        self.write_jsonl("--model", [{"question": "q", "response": "r"}])
        code, out, err = self.subprocess("--judge-url", self.srv.url, "--no-preflight", "--",
                                         "--model")
        self.assertEqual(code, 0, err)


KEY_HINT = ("minijudge takes no API key on the command line (other users can read it in the "
            "process list): set LLM_JUDGE_API_KEY (or OPENAI_API_KEY) in the environment")


class KeyOnTheCommandLineHostileTest(CommandLineTestCase):
    """Issue 30's hostile pass (host30).

    Spellings of a key on the command line that first30b's hints did not catch."""

    KEY = "sk-host30-SECRET-0123456789"  # ASCII: a key with an accent is refused up front

    def cli(self, *argv):
        """main() in this process, in the test's folder (where a relative name is read), the
        key in the environment as the README tells a user to set it, so that a test can
        check it shows nowhere: (exit code, stdout, stderr)."""
        return run_main(argv, env={"LLM_JUDGE_API_KEY": self.KEY}, cwd=self.tmp)

    def source(self):
        return self.write_jsonl("in.jsonl", [{"question": "q", "response": "r"}])

    def test_the_value_after_an_unknown_option_is_not_echoed(self):
        # argparse said "unrecognized arguments: -k sk-..." on stderr
        source = self.source()
        for argv, shown in (([source, "-k", self.KEY], "-k"),
                            ([source, "--foo=" + self.KEY], "--foo"),
                            ([source, "--foo", self.KEY, "-x", self.KEY], "--foo -x")):
            with self.subTest(argv=argv):
                code, out, err = self.cli("--judge-url", self.srv.url, *argv)
                self.assertEqual(code, 2)
                self.assertEqual(err.splitlines()[-1], "minijudge: error: unrecognized "
                                 "arguments: {} (the values given them not shown: one may be "
                                 "a key)".format(shown))
                self.assertNotIn(self.KEY, out + err)
        self.assertEqual(self.srv.chat_count, 0)

    def test_a_stray_file_name_is_still_named(self):
        source = self.source()
        code, out, err = self.cli("--judge-url", self.srv.url, source, "--dry-run",
                                  "other.jsonl")
        self.assertEqual(code, 2)
        self.assertEqual(err.splitlines()[-1],
                         "minijudge: error: unrecognized arguments: other.jsonl")

    def test_k_and_ke_are_answered_like_key(self):
        # argparse took --k and --ke for --key-header: the run went ahead and sent the key
        # typed on the command line as a header's name
        source = self.source()
        for flag in ("--k", "--ke", "--KE"):
            with self.subTest(flag=flag):
                code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                          "--no-preflight", flag, self.KEY, source)
                self.assertEqual((code, out), (2, ""))
                self.assertEqual(err, "minijudge: error: {}: {}; --key-header NAME names the "
                                 "header it is sent in\n".format(flag, KEY_HINT))
        self.assertEqual(self.srv.requests, [])

    def test_the_key_given_as_a_file_name_is_not_echoed(self):
        # the key pasted where the input (or --judges) goes came back in "No such file"
        for argv in ([self.KEY], ["--judges", self.KEY, "in.jsonl"]):
            with self.subTest(argv=argv[0]):
                code, out, err = self.cli("--judge-url", self.srv.url, *argv)
                self.assertEqual((code, out), (2, ""))
                self.assertIn("No such file or directory: '<hidden>'", err)
                self.assertNotIn(self.KEY, err)

    def test_a_value_with_spaces_that_starts_like_a_flag_is_a_value(self):
        # argparse reads "--- ... token ..." as --system's value, but the key check refused
        # it as "an option named for a key or token"
        source = self.source()
        system = "--- Judge strictly; the token budget is not your concern."
        code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                  "--dry-run", "--system", system, source)
        self.assertEqual(code, 0, err)
        self.assertTrue(out.startswith("--- line 1 ---\n[system]\n{}\n".format(system)), out)

    def test_key_header_abbreviated_past_key_still_works(self):
        source = self.source()
        code, out, err = self.cli("--judge-url", self.srv.url, "--judge-model", "m",
                                  "--no-preflight", "--key-h", "x-api-key", source)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.srv.requests[-1].headers["x-api-key"], self.KEY)


if __name__ == "__main__":
    unittest.main()
