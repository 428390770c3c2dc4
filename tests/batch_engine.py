"""A small batch engine for minijudge's tests: OpenAI batch input in, batch output out.

It reads OpenAI Batch API input lines (``{"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body"}``), POSTs each body to a chat-completions URL (a
tests/stub.py StubServer, so every reply is the stub's), and writes output lines in the
shape OpenAI's output and error files use::

    with StubServer("Rating: [[4]]") as srv:
        run_batch(["requests.000.jsonl"], "results.jsonl",
                  srv.url + "/v1/chat/completions",
                  errors={"k1"}, failures={"k2": "batch_expired"}, missing={"k3"},
                  shuffle_seed=0)

A line per request, as OpenAI's batch guide (platform.openai.com/docs/guides/batch) and
its OpenAPI schema BatchRequestOutput show them; an HTTP error goes to the error file with
``error`` null and the server's body under ``response`` (openai/openai-openapi#302)::

    {"id": "batch_req_...", "custom_id": ..., "response": {"status_code": 200,
     "request_id": ..., "body": {chat completion}}, "error": null}
    {"id": ..., "custom_id": ..., "response": {"status_code": 400, "request_id": ...,
     "body": {"error": {"message", "type", "param", "code"}}}, "error": null}
    {"id": ..., "custom_id": ..., "response": null,
     "error": {"code": "batch_expired", "message": ...}}

Faults are injected by custom_id: ``errors`` get a 500 with OpenAI's error body and no
request is sent; ``failures`` (an iterable, or a mapping to a code: batch_expired,
batch_cancelled, request_timeout) get ``"response": null`` and an error; ``missing``
get no line. Lines are in input order unless ``shuffle_seed`` is given (OpenAI: the
output order "may not match" the input's). The input is checked as OpenAI's guide asks before a batch
runs: a custom_id repeated, a method or url other than POST /v1/chat/completions, or
(with ``single_model``, the default) a second model in one input file raises ValueError
naming the file and line.

Command line: ``python tests/batch_engine.py IN.jsonl [IN ...] -o OUT --url URL``.

Python 3.8+, standard library only.
"""

import json
import random
import sys
import urllib.error
import urllib.request

__all__ = ["run_batch", "output_line", "failed_line", "vllm_error_line", "malformed_lines",
           "main"]

ENDPOINT = "/v1/chat/completions"

# what OpenAI says on a 500 from a chat completion
SERVER_ERROR = {"error": {
    "message": "The server had an error while processing your request. Sorry about that!",
    "type": "server_error", "param": None, "code": None}}

# the codes OpenAI's schema lists for a request that got no HTTP reply; the first message
# is the guide's word for word; the other two are the schema's descriptions of the codes,
# since OpenAI shows no example line for them
FAILURE_MESSAGES = {
    "batch_expired": "This request could not be executed before the completion window "
                     "expired.",
    "batch_cancelled": "The batch was cancelled before this request executed.",
    "request_timeout": "The underlying call to the model timed out.",
}


def _hex(rng, n):
    return "%0*x" % (n, rng.getrandbits(4 * n))


def output_line(custom_id, status, body, *, rng=random):
    """One output line for a request that got an HTTP reply (any status)."""
    return {"id": "batch_req_" + _hex(rng, 24), "custom_id": custom_id,
            "response": {"status_code": status, "request_id": _hex(rng, 32), "body": body},
            "error": None}


def failed_line(custom_id, code="batch_expired", *, rng=random):
    """One output line for a request that never got a reply (expired, cancelled)."""
    message = FAILURE_MESSAGES.get(code, "The request failed: %s." % code)
    return {"id": "batch_req_" + _hex(rng, 24), "custom_id": custom_id,
            "response": None, "error": {"code": code, "message": message}}


def vllm_error_line(custom_id, message, *, rng=random):
    """The line vLLM's run_batch writes for a request it could not run: status 400, a null
    body, and the message as a bare string in ``error`` (its make_error_request_output)."""
    return {"id": "vllm-" + _hex(rng, 32), "custom_id": custom_id,
            "response": {"status_code": 400, "request_id": "vllm-batch-" + _hex(rng, 32),
                         "body": None},
            "error": message}


def _read_requests(paths, single_model):
    seen = {}
    for path in paths:
        model = None
        with open(path, encoding="utf-8") as f:
            for number, text in enumerate(f, 1):
                if not text.strip():
                    continue
                where = "%s line %d" % (path, number)
                try:
                    line = json.loads(text)
                except ValueError as exc:
                    raise ValueError("%s: not JSON (%s)" % (where, exc)) from None
                custom_id = line.get("custom_id") if isinstance(line, dict) else None
                if not isinstance(custom_id, str) or not custom_id:
                    raise ValueError("%s: no custom_id" % where)
                if line.get("method") != "POST" or line.get("url") != ENDPOINT:
                    raise ValueError("%s: expected POST %s; got %s %s" % (
                        where, ENDPOINT, line.get("method"), line.get("url")))
                if not isinstance(line.get("body"), dict):
                    raise ValueError("%s: body is not a JSON object" % where)
                if single_model:
                    model = model or (line["body"].get("model"), where)
                    if line["body"].get("model") != model[0]:
                        raise ValueError("%s: model %r, but %s has %r; a batch file holds "
                                         "one model" % (where, line["body"].get("model"),
                                                        model[1], model[0]))
                if custom_id in seen:
                    raise ValueError("%s: custom_id %r repeats %s" % (
                        where, custom_id, seen[custom_id]))
                seen[custom_id] = where
                yield custom_id, line["body"]


def _post(url, body, timeout):
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:  # an error reply is a reply: keep its body
        try:
            status, raw = exc.code, exc.read()
        finally:
            exc.close()
    try:
        return status, json.loads(raw.decode("utf-8"))
    except ValueError:
        # OpenAI's bodies are always JSON; a proxy's HTML page is kept as a string
        return status, raw.decode("utf-8", "replace")


def run_batch(input_paths, output_path, url, *, errors=(), failures=(), missing=(),
              shuffle_seed=None, single_model=True, timeout=10.0):
    """Answer every request in ``input_paths`` through ``url``; write ``output_path``.

    Returns the number of lines written. A request the server cannot be reached for
    raises (urllib's URLError): the engine is for tests, and a test should see it.
    """
    if isinstance(input_paths, str):
        input_paths = [input_paths]
    errors, missing = set(errors), set(missing)
    if not isinstance(failures, dict):
        failures = dict.fromkeys(failures, "batch_expired")
    rng = random.Random(shuffle_seed)
    lines = []
    # every line is checked before any is sent, as OpenAI validates a file before it runs
    for custom_id, body in list(_read_requests(input_paths, single_model)):
        if custom_id in missing:
            continue
        if custom_id in failures:
            lines.append(failed_line(custom_id, failures[custom_id], rng=rng))
        elif custom_id in errors:
            lines.append(output_line(custom_id, 500, SERVER_ERROR, rng=rng))
        else:
            status, reply = _post(url, body, timeout)
            lines.append(output_line(custom_id, status, reply, rng=rng))
    if shuffle_seed is not None:
        rng.shuffle(lines)
    with open(output_path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return len(lines)


def malformed_lines(custom_id="k-0"):
    """Output lines an importer must count and name, not crash on: (name, text) pairs.

    ``custom_id`` should be one the run asked for, so only the body is wrong in the last.
    """
    completion_not = {"object": "list", "data": []}
    return [
        ("not_json", '{"id": "batch_req_0", "custom_id": '),
        ("no_custom_id", json.dumps(
            {"id": "batch_req_1", "response": {"status_code": 200, "request_id": "r1",
                                               "body": {}}, "error": None})),
        ("unknown_custom_id", json.dumps(output_line("no-such-request", 200,
                                                     completion_not))),
        ("not_a_completion", json.dumps(output_line(custom_id, 200, completion_not))),
    ]


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(
        prog="batch_engine.py", description="Answer OpenAI batch input files through a "
        "chat-completions URL; write one batch output file.")
    parser.add_argument("inputs", nargs="+", metavar="IN", help="batch input .jsonl files")
    parser.add_argument("-o", "--output", required=True, metavar="OUT")
    parser.add_argument("--url", required=True,
                        help="full chat-completions URL, e.g. http://127.0.0.1:8000"
                             "/v1/chat/completions")
    parser.add_argument("--shuffle-seed", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        count = run_batch(args.inputs, args.output, args.url,
                          shuffle_seed=args.shuffle_seed)
    except (OSError, ValueError) as exc:
        print("batch_engine.py: error: %s" % exc, file=sys.stderr)
        return 1
    print("batch_engine.py: %d lines to %s" % (count, args.output), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
