"""A loopback OpenAI-compatible chat server for minijudge's tests.

It listens on ("127.0.0.1", 0) in a daemon thread, records every request, and answers
with replies a test scripts: good completions, the error bodies real servers send, and
the faults the network adds (drops, half bodies, hangs, slow drips)::

    with StubServer("Rating: 4") as srv:
        srv.push(rate_limited("0"), drop(), chat("Rating: [[5]]"))
        results = run_client(base_url=srv.url + "/v1")     # the code under test
        self.assertEqual(srv.chat_count, 3)
        self.assertEqual(srv.requests[0].json["temperature"], 0)
        self.assertEqual(srv.requests[-1].headers["authorization"], "Bearer sk-test")

Routing: POST to any path ending in /chat/completions gets a chat completion (so
gateway and Azure prefixes work); GET any path ending in /models lists `srv.models`;
anything else, a trailing slash included, is a llama-server style 404.

A chat request is answered by the first that applies: 401 if `require_key` is set and
neither `Authorization: Bearer <key>` nor `api-key: <key>` came; 400 if the body is not
a JSON object; 404 if `strict_model` is set and the model is not in `models`; the next
pushed reply; `responder(request)` if it returns a reply; `chat(srv.content)`.
The checks consume no pushed reply; a str pushed or returned means chat(str).
`delay` is waited before any chat answer.

Replies: chat, error, raw, html, rate_limited, drop, drop_mid_body, hang, truncated_json,
invalid_json, choices_null, no_choices, oversized, drip, redirect; framed(reply, how)
sends any of them chunked, close-delimited or after a 100 Continue, and wire(bytes, ...)
sends bytes verbatim: parts apart in time (headers that drip in), or two whole replies
to one request on a connection kept open (a buggy proxy); helpers
rating_logprobs, http_date, mixed_faults. `srv.connections` counts the connections
accepted, `srv.replied` the replies done with (played to their last byte, or cut off
by the client); `srv.wait_replied(n)` waits for the n-th, where a test would sleep.

The network's misbehaviours: `StubServer(tls=(cert, key))` serves https (make a
self-signed pair with `self_signed_cert(folder)`, None without the openssl command);
`stop(hold_port=True)` then `start(port=old)` is a judge restarting on the same port,
refusing connections in between (as a vLLM or Kubernetes rollout does), the port held
meanwhile so no other process's server takes it; `stop_listening()` refuses new
connections while those open hang on (a server shutting down); and since a chat path is
matched by its suffix, the stub also serves as an `http_proxy` for any judge URL (the
absolute URL a client sends a proxy ends in /chat/completions too); with
`tunnel_to=port` it is an `https_proxy` too, answering every CONNECT (recorded as a
request) with a tunnel to 127.0.0.1:port, whatever host was asked for.

For test classes: `StubTestCase` (a stub, a folder, no judge variables, per test; its
`records()`, `summary()` and `report()` read what a run wrote and run `report`);
`SideBySide`, a StubTestCase whose tests all start at once, each on its own instance,
stub and folder, and each reported as its own (for tests that mostly wait on their
subprocesses: retries, restarts, timeouts); `CommandLineTestCase` and
`CommandLineSideBySide`, for tests of the command line that several modules share;
`copy_minijudge(folder)` for a test's clone.

The command line, run and read, written once for every test module: `run_main(argv)` in
this process, `run_process(*argv)` in a ``python -m minijudge`` process of its own
(its environment by default `without_judge()`'s), `read_records(path)` and
`read_summary(path)` for what it wrote.

Python 3.8+, standard library only.
"""

import collections
import email.utils
import functools
import http.server
import json
import math
import os
import random
import select
import socket
import socketserver
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
from unittest import mock

__all__ = [
    "StubServer", "Request", "Reply",
    "chat", "rating_logprobs", "error", "raw", "html", "rate_limited", "redirect",
    "drop", "drop_mid_body", "hang", "truncated_json", "invalid_json", "choices_null",
    "no_choices", "oversized", "drip", "framed", "wire", "mixed_faults", "every_fault", "http_date",
    "StubTestCase", "SideBySide", "JUDGE_ENV", "self_signed_cert", "read_terminal",
    "copy_minijudge", "PYTHON", "REPO", "run_main", "run_process", "without_judge",
    "read_records", "read_summary", "read_text", "default_sigint", "CommandLineTestCase",
    "CommandLineSideBySide",
]

# How a test starts an interpreter for minijudge or a stdlib-only script: minijudge needs
# the standard library only, and -S skips site-packages, whose .pth files run at every
# start (one here imports certifi: ~0.07 s of CPU each, a few hundred times a suite).
# A test of behaviour with site-packages, or one running an example that may need an
# installed package, uses sys.executable alone.
PYTHON = (sys.executable, "-S")


def _compile_minijudge():
    """Write minijudge's .pyc beside it (where pip install puts one), so each
    `python -m minijudge` a test starts loads it instead of compiling 7,000 lines: under
    PYTHONDONTWRITEBYTECODE (set in some shells and CIs) every process would compile it
    again, ~0.12 s each, over 150 times a suite. The process runs the same source: the
    .pyc holds the source's hash, checked at each import (not its mtime, which an edit in
    the same second would leave as it was). Written only if the one there is not that:
    each test module imports this one, in a process of its own under tests/run.py, and
    compiling took ~0.25 s of CPU each time, 20 s a suite."""
    import importlib.util
    import py_compile
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "minijudge.py")
    try:
        with open(source, "rb") as f:  # PEP 552's header of a checked hash's .pyc
            header = importlib.util.MAGIC_NUMBER + (0b11).to_bytes(4, "little") + \
                importlib.util.source_hash(f.read())
        with open(importlib.util.cache_from_source(source), "rb") as f:
            if f.read(len(header)) == header:
                return
    except OSError:
        pass
    try:
        py_compile.compile(source, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    except (OSError, py_compile.PyCompileError):
        pass  # a read-only checkout: the processes compile it, only slower


_compile_minijudge()


def copy_minijudge(folder):
    """Copy minijudge.py into `folder` (a clone of the repo a test makes) with the .pyc
    written above, in folder/__pycache__ as a clone holds it after its first run: each
    ``python -m minijudge`` there loads it rather than compile the file again (0.18 s of
    CPU each). It runs the same source: the .pyc holds the source's hash, checked at each
    import, so a copy that differed would be compiled."""
    import importlib.util
    import shutil
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "minijudge.py")
    target = os.path.join(folder, "minijudge.py")
    shutil.copy(source, target)
    try:
        pyc = importlib.util.cache_from_source(target)
        os.makedirs(os.path.dirname(pyc), exist_ok=True)
        shutil.copy(importlib.util.cache_from_source(source), pyc)
    except (OSError, NotImplementedError):
        pass  # no .pyc (a read-only checkout): the processes compile it, only slower

_NGINX_PAGE = """<html>
<head><title>{status} {phrase}</title></head>
<body>
<center><h1>{status} {phrase}</h1></center>
<hr><center>nginx</center>
</body>
</html>
"""

# -- Records -------------------------------------------------------------------------

Reply = collections.namedtuple("Reply", "kind status headers body arg")
Reply.__doc__ = """What the server plays: kind is send, drop, drop_mid, hang, drip, wire,
or a framing (chunked, until_close, continue); headers a tuple of (name, value); body bytes,
or a function (request, server) returning bytes or a JSON-able object, built when played
so it can echo the request."""


class Request(collections.namedtuple("Request", "method path query headers body json")):
    """One request as the server saw it; header names are lower-cased."""

    __slots__ = ()

    @property
    def messages(self):
        return self.json.get("messages") if isinstance(self.json, dict) else None

    @property
    def prompt(self):
        """The text of the last user message, or None."""
        for message in reversed(self.messages or []):
            if isinstance(message, dict) and message.get("role") == "user":
                return _text(message.get("content"))
        return None


def _text(content):
    # content may be a list of parts: [{"type": "text", "text": ...}, ...]
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content


# -- Replies -------------------------------------------------------------------------

def _reply(status, body, headers=None, *, kind="send", arg=None,
           content_type="application/json"):
    extra = tuple((headers or {}).items())
    if content_type and not any(k.lower() == "content-type" for k, _ in extra):
        extra = (("Content-Type", content_type),) + extra
    return Reply(kind, status, extra, body, arg)


def _completion(request, server, choices, *, model=None, usage=None, text=None,
                fingerprint=None):
    body = request.json if isinstance(request.json, dict) else {}
    served = server.models[0] if server.models else "stub-model"
    texts = [_text(m.get("content")) for m in request.messages or [] if isinstance(m, dict)]
    prompt = " ".join(t for t in texts if isinstance(t, str))
    if usage is None:
        usage = {"prompt_tokens": len(prompt.split()),
                 "completion_tokens": len((text or "").split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    out = {"id": "chatcmpl-%024x" % random.getrandbits(96), "object": "chat.completion",
           "created": int(time.time()), "model": model or body.get("model") or served,
           "choices": choices}
    if fingerprint is not None:
        out["system_fingerprint"] = fingerprint
    out["usage"] = usage
    return out


def chat(content="4", *, finish_reason="stop", model=None, usage=None,
         reasoning_content=None, reasoning=None, refusal=None, logprobs=None,
         system_fingerprint=None, status=200, headers=None):
    """A chat.completion like OpenAI's; `model` defaults to the one requested."""
    message = {"role": "assistant", "content": content}
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    if reasoning is not None:
        message["reasoning"] = reasoning
    message["refusal"] = refusal
    choice = {"index": 0, "message": message, "logprobs": logprobs,
              "finish_reason": finish_reason}

    def build(request, server):
        return _completion(request, server, [choice], model=model, usage=usage,
                           text=content, fingerprint=system_fingerprint)
    return _reply(status, build, headers)


def rating_logprobs(probs, *, lead=()):
    """A chat `logprobs` object whose rating token is drawn from probs.

    rating_logprobs({"4": 0.6, "5": 0.3, "3": 0.1}, lead=["Rating", ":", " "])
    """
    def entry(token, p):
        return {"token": token, "logprob": math.log(p) if p > 0 else -9999.0,
                "bytes": list(token.encode("utf-8"))}
    content = [dict(entry(t, 1.0), top_logprobs=[entry(t, 1.0)]) for t in lead]
    ranked = sorted(probs.items(), key=lambda kv: -kv[1])
    content.append(dict(entry(*ranked[0]), top_logprobs=[entry(*kv) for kv in ranked]))
    return {"content": content}


def error(status, message, *, type=None, code=None, headers=None, style="openai"):
    """An error body: style "openai" ({"error": {...}}), "detail" (FastAPI) or "text"."""
    if style == "text":
        return _reply(status, message.encode("utf-8"), headers,
                      content_type="text/plain; charset=utf-8")
    if style == "detail":
        return _reply(status, {"detail": message}, headers)
    if type is None:
        type = "server_error" if status >= 500 else "invalid_request_error"
    body = {"error": {"message": message, "type": type, "param": None, "code": code}}
    return _reply(status, body, headers)


def raw(status, body, *, headers=None, content_type="application/json"):
    """Exactly these bytes (a str is sent as UTF-8); content_type=None sends none."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    return _reply(status, body, headers, content_type=content_type)


def html(status=502):
    """The HTML error page an nginx proxy in front of the judge sends."""
    phrase = http.server.BaseHTTPRequestHandler.responses.get(status, ("Error",))[0]
    page = _NGINX_PAGE.format(status=status, phrase=phrase)
    return _reply(status, page.encode("ascii"), content_type="text/html")


def rate_limited(retry_after="1", *, quota=False):
    """A 429; retry_after is seconds or an HTTP date (see http_date), None for none."""
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    if quota:
        return error(429, "You exceeded your current quota, please check your plan and "
                     "billing details.", type="insufficient_quota",
                     code="insufficient_quota", headers=headers)
    return error(429, "Rate limit reached for requests per min (RPM): Limit 3, Used 3, "
                 "Requested 1.", type="requests",
                 code="rate_limit_exceeded", headers=headers)


def redirect(location, status=307):
    """What FastAPI servers answer for a trailing slash; urllib won't follow a POST."""
    return _reply(status, b"", {"Location": location}, content_type=None)


def http_date(seconds=0.0):
    """An HTTP date `seconds` from now, for Retry-After."""
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


def drop():
    """Close the connection without a response."""
    return Reply("drop", 0, (), b"", None)


def drop_mid_body():
    """Headers promising a full chat body, half of it, then close."""
    return chat()._replace(kind="drop_mid")


def hang(seconds):
    """Say nothing for `seconds` (or until stop()), then close."""
    return Reply("hang", 0, (), b"", seconds)


def truncated_json():
    """A 200 chat completion cut in half; Content-Length matches what is sent."""
    build = chat().body

    def cut(request, server):
        full = json.dumps(build(request, server)).encode("utf-8")
        return full[:len(full) // 2]
    return _reply(200, cut)


def invalid_json():
    return raw(200, b'{"choices": [ <<garbage>> not json')


def choices_null():
    return _reply(200, lambda request, server: _completion(request, server, None))


def no_choices():
    def build(request, server):
        body = _completion(request, server, None)
        del body["choices"]
        return body
    return _reply(200, build)


def oversized(n_bytes):
    """A valid chat completion whose content is about n_bytes long."""
    words = "lorem ipsum dolor sit amet "
    return chat((words * (n_bytes // len(words) + 1))[:n_bytes])


def drip(content="4", *, chunk=8, interval=0.05):
    """A valid reply sent `chunk` bytes at a time, `interval` seconds apart."""
    return chat(content)._replace(kind="drip", arg=(chunk, interval))


def framed(reply, framing):
    """The same reply framed another way on the wire: "chunked" (Transfer-Encoding, as
    proxies send it), "until_close" (no Content-Length: the body ends when the connection
    does) or "continue" (an interim 100 Continue response first)."""
    return reply._replace(kind=framing)


def wire(*parts, interval=0.0, close=True):
    """These bytes, verbatim, as the whole reply, each part `interval` seconds after the
    last; then close, unless close=False keeps the connection open for the next request.

    wire(*[bytes([b]) for b in head], interval=0.05)         # headers that drip in
    wire(reply_a, reply_b, interval=0.05, close=False)       # two replies to one request
    """
    return Reply("wire", 0, (), parts, (interval, close))


def mixed_faults(rate=0.2, *, seed=0, kinds=None):
    """A responder that answers a fault with probability `rate`, else None (the default).

    Faults are drawn from `kinds` (replies), by default: 429 with Retry-After 0, 500,
    nginx 502, 503, drop, drop_mid_body, truncated_json, invalid_json, choices_null.
    Draws come from random.Random(seed) under a lock, so a serial run is repeatable.

    srv.responder = mixed_faults(0.3, seed=1)
    """
    faults = tuple(kinds) if kinds is not None else (
        rate_limited("0"),
        error(500, "The server had an error while processing your request."),
        html(502),
        error(503, "The engine is currently overloaded, please try again later."),
        drop(), drop_mid_body(), truncated_json(), invalid_json(), choices_null(),
    )
    rng = random.Random(seed)
    lock = threading.Lock()

    def responder(request):
        with lock:
            return rng.choice(faults) if rng.random() < rate else None
    return responder


def every_fault(*, hang_seconds=2.0):
    """One of each misbehaviour, for mixed_faults(kinds=every_fault()): the transient
    mix plus Retry-After as an HTTP date, a hang, content null, an oversized body and a
    slow drip. Some of these are failures no retry fixes."""
    return (rate_limited("0"), rate_limited(http_date(0)),
            error(500, "The server had an error while processing your request."),
            html(502), error(503, "The engine is currently overloaded."), drop(),
            drop_mid_body(), hang(hang_seconds), truncated_json(), invalid_json(),
            choices_null(), no_choices(), chat(None), oversized(20000),
            drip("4", chunk=4, interval=0.01))


_NOT_FOUND = error(404, "File Not Found", type="not_found_error", code=404)
_BAD_KEY = error(401, "Incorrect API key provided.", code="invalid_api_key")
_BAD_JSON = error(400, "could not parse request JSON", code=400)

# -- Server --------------------------------------------------------------------------


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "stub/1"

    def setup(self):
        self.timeout = self.server.stub.idle_timeout
        super().setup()
        # headers and body go out in two writes: without this, delayed ACKs add ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.served = 0
        self.server.stub._track(self.connection, True)

    def finish(self):
        self.server.stub._track(self.connection, False)
        super().finish()

    def log_message(self, format, *args):
        pass

    def _handle(self):
        stub = self.server.stub
        self.served += 1
        body = self._read_body()
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request(self.command, url.path, query, headers, body, parsed)
        with stub._lock:
            stub.requests.append(request)
        try:
            self._play(stub._answer(request), request)
        finally:
            with stub._lock:
                stub.replied += 1

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def do_CONNECT(self):
        stub = self.server.stub
        headers = {k.lower(): v for k, v in self.headers.items()}
        with stub._lock:
            stub.requests.append(Request("CONNECT", self.path, {}, headers, b"", None))
        self.close_connection = True
        if stub.tunnel_to is None:
            self.send_error(405)
            return
        upstream = socket.create_connection(("127.0.0.1", stub.tunnel_to))
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        back = threading.Thread(target=_pipe, args=(upstream, self.connection), daemon=True)
        back.start()
        _pipe(self.connection, upstream)
        back.join()
        upstream.close()

    def _read_body(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or "Transfer-Encoding" in self.headers:
            # a body this stub cannot frame: read none and end the connection
            self.close_connection = True
            return b""
        return self.rfile.read(length)

    def _play(self, reply, request):
        stub = self.server.stub
        if reply.kind in ("drop", "hang"):
            if reply.kind == "hang":
                stub._stopping.wait(reply.arg)
            self.close_connection = True
            return
        if reply.kind == "wire":
            interval, self.close_connection = reply.arg
            for i, part in enumerate(reply.body):
                if i:
                    stub._stopping.wait(interval)
                self.wfile.write(part)
            return
        body = reply.body(request, stub) if callable(reply.body) else reply.body
        if not isinstance(body, bytes):
            body = json.dumps(body).encode("utf-8")
        if reply.kind == "continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n")
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.kind == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            body = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 40]), body[i:i + 40])
                            for i in range(0, len(body), 40)) + b"0\r\n\r\n"
        elif reply.kind == "until_close":
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
        if self.close_connection or (stub.close_after and self.served >= stub.close_after):
            self.send_header("Connection", "close")
        self.end_headers()
        if reply.kind == "drop_mid":
            self.wfile.write(body[:len(body) // 2])
            self.close_connection = True
        elif reply.kind == "drip":
            chunk, interval = reply.arg
            for start in range(0, len(body), chunk):
                if start:
                    stub._stopping.wait(interval)
                self.wfile.write(body[start:start + chunk])
        else:
            self.wfile.write(body)


def _pipe(source, target):
    """Copy bytes until the source ends, then end the target's side too."""
    try:
        for data in iter(lambda: source.recv(65536), b""):
            target.sendall(data)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128  # the default 5 makes concurrent clients wait ~1 s for SYN retries

    def server_bind(self):
        # HTTPServer.server_bind calls getfqdn(), which can stall on a box without DNS
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request, client_address):
        # clients that time out or hang up mid-reply are what these tests are about
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class StubServer:
    """An OpenAI-compatible chat server on 127.0.0.1; see the module docstring."""

    def __init__(self, content="4", *, models=("judge-model",), delay=0.0,
                 responder=None, require_key=None, strict_model=False,
                 close_after=None, idle_timeout=None, tls=None, tunnel_to=None, limit=None,
                 limit_headers=True):
        self.content = content
        # (N, seconds): a bucket of N requests refilled over `seconds`, as OpenAI's RPM
        # limit is; past it a 429 with Retry-After; every chat reply sends x-ratelimit-*
        self.limit = limit
        # False: the limit is enforced (429 + Retry-After) but no x-ratelimit-* is sent,
        # as vLLM behind a proxy, LiteLLM and some gateways do
        self.limit_headers = limit_headers
        self._bucket = (float(limit[0]) if limit else 0.0, time.monotonic())
        self.limited = 0  # 429s the limit sent
        self.admitted = []  # time.monotonic() of each chat request the limit let through
        self.models = models
        self.delay = delay
        self.responder = responder
        self.require_key = require_key
        self.strict_model = strict_model
        self.close_after = close_after
        # like llama-server's 5 s: an idle keep-alive connection is closed silently
        self.idle_timeout = idle_timeout
        self.tls = tls  # (certificate file, key file): serve https
        self.tunnel_to = tunnel_to  # a loopback port every CONNECT is tunnelled to
        self.requests = []
        self.connections = 0  # accepted so far
        self.replied = 0  # replies done with
        self.port = None
        self._queue = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections = set()
        self._httpd = self._thread = None
        self._held = None  # a socket bound to the port while it is down (stop(hold_port))

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    @property
    def chat_count(self):
        with self._lock:
            return sum(1 for r in self.requests
                       if r.method == "POST" and r.path.endswith("/chat/completions"))

    def push(self, *replies):
        """Queue replies (or strs, for chat(str)) for the next chat requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    def wait_replied(self, count, timeout=10.0):
        """True once the server is done with `count` replies."""
        deadline = time.monotonic() + timeout
        while self.replied < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        return True

    def clear(self):
        """Forget recorded requests and queued replies."""
        with self._lock:
            del self.requests[:]
            self._queue.clear()

    def start(self, *, port=0):
        """Listen on `port` (0: any free one); after stop(), the same port again is a
        server that restarted."""
        self._stopping.clear()
        try:  # bound beside the socket holding it (both SO_REUSEADDR, that one not listening)
            self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        except OSError:
            if self._held is None:
                raise
            self._release()  # a system that does not allow that: let go first, then bind
            self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self._release()
        if self.tls:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            # the handshake happens in the handler's thread, where a failed one is quiet
            self._httpd.socket = context.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False)
        self._httpd.stub = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        name="stub-server", daemon=True)
        self._thread.start()
        return self

    def stop(self, *, hold_port=False):
        """Stop serving: the listener closes and connections open are cut. hold_port=True
        keeps the port, as a server that is down but will restart there: it is bound by
        a socket that never listens (a connect is refused), held until start(port=...) or
        a plain stop(). Without it the port is free, and another process's server (a
        suite side by side) may take it and answer the URL a run still points at."""
        if self._httpd is None:
            if not hold_port:
                self._release()
            return
        self._stopping.set()
        try:  # wakes the loop now, not at its next poll: accept() fails, then it sees
            self._httpd.socket.shutdown(socket.SHUT_RDWR)  # that shutdown() asks
        except OSError:
            pass
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for sock in connections:
            # wakes handlers blocked reading the next request on a kept-alive socket
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        if hold_port:
            self._hold()
        else:
            self._release()
        self._thread.join()
        self._httpd = self._thread = None

    def stop_listening(self):
        """Refuse new connections, the port held as stop(hold_port=True) holds it, while
        the connections open stay open (a server shutting down that finishes, or hangs
        on, what it has): the serve loop ends and the listener closes. Callable from a
        handler; stop() later ends the rest."""
        self._httpd.shutdown()
        self._httpd.socket.close()
        self._hold()

    def _hold(self):
        # bound right after the listener closed: an error here (another process took the
        # port in between) fails the test rather than let it talk to someone else's server
        if self._held is None:
            held = socket.socket()
            held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAITs
            try:
                held.bind(("127.0.0.1", self.port))
            except OSError:
                held.close()
                raise
            self._held = held

    def _release(self):
        if self._held is not None:
            self._held.close()
            self._held = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def _track(self, sock, alive):
        with self._lock:
            if alive:
                self.connections += 1
                self._connections.add(sock)
            else:
                self._connections.discard(sock)

    def _answer(self, request):
        path = request.path
        if request.method == "GET" and path.endswith("/models"):
            if self.models is None:
                return _NOT_FOUND
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "stub"}
                    for m in self.models]
            return self._refusal(request) or _reply(200, {"object": "list", "data": data})
        if request.method != "POST" or not path.endswith("/chat/completions"):
            return _NOT_FOUND
        if self.delay:
            self._stopping.wait(self.delay)
        refused = self._refusal(request)
        if refused:
            return refused
        if self.limit:
            return self._limited(request)
        return self._chat_reply(request)

    def _chat_reply(self, request):
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
        if reply is None and self.responder is not None:
            reply = self.responder(request)
        if reply is None:
            reply = self.content
        return chat(reply) if isinstance(reply, str) else reply

    def _limited(self, request):
        """The reply under `limit`: a 429 past it, else the chat reply; both with the
        x-ratelimit headers OpenAI sends (reset: until the bucket is full again), unless
        `limit_headers` is False."""
        n, seconds = self.limit
        with self._lock:
            level, since = self._bucket
            now = time.monotonic()
            level = min(float(n), level + (now - since) * n / seconds)
            admitted = level >= 1
            if admitted:
                level -= 1
                self.admitted.append(now)
            else:
                self.limited += 1
            self._bucket = (level, now)
        headers = {}
        if self.limit_headers:
            headers = {"x-ratelimit-limit-requests": str(n),
                       "x-ratelimit-remaining-requests": str(int(level)),
                       "x-ratelimit-reset-requests": _duration((n - level) * seconds / n)}
        if not admitted:
            wait = (1 - level) * seconds / n
            headers["Retry-After"] = str(max(1, math.ceil(wait)))
            headers["retry-after-ms"] = str(math.ceil(wait * 1000))
            reply = error(429, "Rate limit reached for requests per min (RPM): Limit %d, "
                          "Used %d, Requested 1." % (n, n), type="requests",
                          code="rate_limit_exceeded")
        else:
            reply = self._chat_reply(request)
        return reply._replace(headers=reply.headers + tuple(headers.items()))

    def _refusal(self, request):
        key, headers = self.require_key, request.headers
        if key is not None and headers.get("authorization") != "Bearer " + key \
                and headers.get("api-key") != key:
            return _BAD_KEY
        if request.method == "GET":
            return None
        if not isinstance(request.json, dict):
            return _BAD_JSON
        model = request.json.get("model")
        if self.strict_model and self.models is not None and model not in self.models:
            return error(404, "The model `%s` does not exist." % model,
                         type="NotFoundError", code=404)
        return None


def _duration(seconds):
    """OpenAI's form of a reset time: "20ms", "1.5s", "6m0s"."""
    if seconds < 1:
        return "%dms" % math.ceil(seconds * 1000)
    if seconds < 60:
        return "%gs" % round(seconds, 3)
    return "%dm%ds" % divmod(math.ceil(seconds), 60)


def default_sigint():
    """A Popen preexec_fn: the child starts with SIGINT's default disposition, so Python
    gives it its usual Ctrl-C. A shell starts background jobs (``cmd &``, a CI runner's)
    with SIGINT ignored, a child inherits that, and Python keeps an ignored SIGINT: a test
    that sends Ctrl-C would see the run go on. (signal.signal in the test would do, but only
    in the main thread, and SideBySide runs tests in others.)"""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def read_terminal(master, timeout):
    """What a child wrote to the terminal whose master end is ``master``, until it closes
    it (or ``timeout`` s pass with nothing new); the master is closed after."""
    tty = b""
    while select.select([master], [], [], timeout)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        tty += chunk
    os.close(master)
    return tty


def self_signed_cert(folder, host="127.0.0.1"):
    """(certificate, key) files of a self-signed certificate for `host` (an IP or a
    name), made with the openssl command; None where there is none."""
    import shutil
    import subprocess
    if not shutil.which("openssl"):
        return None
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    kind = "IP" if host.replace(".", "").isdigit() else "DNS"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2", "-subj",
                    "/CN=" + host, "-addext", "subjectAltName=%s:%s" % (kind, host),
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return cert, key


# -- Test case -----------------------------------------------------------------------

JUDGE_ENV = ("OPENAI_API_KEY", "LLM_JUDGE_API_KEY", "LLM_JUDGE_MODEL", "LLM_JUDGE_API_BASE",
             "OPENAI_BASE_URL")


class StubTestCase(unittest.TestCase):
    """For each test: a stub (``self.srv``, from ``start_stub``), a temporary folder
    (``self.tmp``), and no judge settings leaking in from the environment."""

    def down_url(self):
        """The URL of a server that refuses connections: a port bound and never listened
        on, held until the test ends. (A stub started then stopped frees its port, which
        another process's server may take before the run: two suites side by side did,
        and the "down" server answered.)"""
        sock = socket.socket()
        self.addCleanup(sock.close)
        sock.bind(("127.0.0.1", 0))
        return "http://127.0.0.1:%d" % sock.getsockname()[1]

    def start_stub(self):
        srv = StubServer().start()
        self.addCleanup(srv.stop)
        return srv

    def setUp(self):
        if not getattr(self, "_in_thread", False):  # SideBySide: its class did it for all
            env = mock.patch.dict(os.environ)
            env.start()
            self.addCleanup(env.stop)
            for name in JUDGE_ENV:
                os.environ.pop(name, None)
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.srv = self.start_stub()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def write(self, name, text):
        with open(self.path(name), "w", encoding="utf-8") as f:
            f.write(text)
        return self.path(name)

    def write_jsonl(self, name, items):
        return self.write(name, "".join(json.dumps(r) + "\n" for r in items))

    def records(self, name="out.jsonl"):
        """The records a run wrote to ``name`` in the test's folder (-o's)."""
        return read_records(self.path(name))

    def summary(self, name="s.json"):
        """The figures a run wrote to ``name`` in the test's folder (--summary's)."""
        return read_summary(self.path(name))

    def report(self, *argv, name="r.json"):
        """(stderr, --summary figures) of ``minijudge report --summary NAME
        --max-error-rate 1 ARGV`` in this process, which must exit 0."""
        code, out, err = run_main(["report", "--summary", self.path(name),
                                   "--max-error-rate", "1"] + list(argv))
        self.assertEqual(code, 0, err)
        return err, self.summary(name)


class _Run(threading.Thread):
    """One test of a SideBySide class, run on its own instance: setUp, the test, tearDown
    and its cleanups, as unittest runs them; what it raised is kept for the test to report."""

    def __init__(self, case, gate):
        super().__init__(name="side-by-side " + case.id(), daemon=True)
        self.case = case
        self.gate = gate
        self.exc_info = None

    def run(self):
        with self.gate:
            try:
                self._test()
            finally:
                self._cleanups()

    def _test(self):
        case = self.case
        try:
            case.setUp()
            try:
                getattr(case, case._testMethodName)()
            finally:
                case.tearDown()
        except BaseException:
            self.exc_info = sys.exc_info()

    def _cleanups(self):
        while self.case._cleanups:
            function, args, kwargs = self.case._cleanups.pop()
            try:
                function(*args, **kwargs)
            except BaseException:
                if self.exc_info is None:  # the test's own failure comes first
                    self.exc_info = sys.exc_info()


class SideBySide(StubTestCase):
    """A StubTestCase whose tests all start side by side when the class is set up, each on
    its own instance in its own thread (its own stub, folder and subprocesses, as when run
    alone), for tests that mostly wait: on retry waits, a restart, a hang threshold. The
    test unittest runs waits for its own run and raises what that raised (a failure, an
    error or a skip, with its traceback). Only for tests whose work is in subprocesses and
    their own stub: no in-process main() (it redirects sys.stdout for the whole process),
    no edit of os.environ (the class clears the judge variables once, for all of them).
    Running one test of such a class runs the others too, unreported."""

    side_by_side = 4  # tests running at a time

    def __init__(self, methodName="runTest", *, in_thread=False):
        super().__init__(methodName)
        self._in_thread = in_thread
        if not in_thread and methodName in type(self).__dict__.get("_names", ()):
            self._replaced(methodName)

    def _replaced(self, name):
        """The test method, setUp and tearDown as unittest will call them: the run in the
        thread did them."""
        test = getattr(self, name)

        @functools.wraps(test)
        def replay():
            run = type(self)._runs[name]
            run.join()
            if run.exc_info is not None:
                raise run.exc_info[1].with_traceback(run.exc_info[2])

        setattr(self, name, replay)
        self.setUp = self.tearDown = lambda: None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import gc
        import warnings
        with warnings.catch_warnings():
            # what earlier tests left behind (run_main collects it as quietly): collected
            # now, not in these runs' threads, where its warning would show
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        env = mock.patch.dict(os.environ)
        env.start()
        cls.addClassCleanup(env.stop)  # after tearDownClass: every run is over
        cls.clear_environ()
        gate = threading.Semaphore(cls.side_by_side)
        cls._runs = {}
        for name in cls._names:
            cls._runs[name] = _Run(cls(name, in_thread=True), gate)
            cls._runs[name].start()

    @classmethod
    def clear_environ(cls):
        """What each test's setUp would take out of os.environ, done once for all (a
        thread that edits it races the others' reading it)."""
        for name in JUDGE_ENV:
            os.environ.pop(name, None)

    @classmethod
    def tearDownClass(cls):
        for run in cls._runs.values():
            run.join()
        super().tearDownClass()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._names = tuple(unittest.TestLoader().getTestCaseNames(cls))


def run_main(argv, env=None, cwd=None):
    """(exit code, stdout, stderr) of ``minijudge.main(argv)`` in this process, ~0.05 s of
    CPU less than ``python -m minijudge``; ``env`` is added to os.environ while it runs
    (minijudge reads the environment when a call needs it, not at import), and ``cwd``
    (a test's folder, where a relative name would be read or written) is the current
    folder while it runs: the whole process's, so never from a SideBySide test."""
    import contextlib
    import gc
    import io
    import warnings
    import minijudge
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    with mock.patch.dict(os.environ, env or {}), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # what earlier tests left behind
        gc.freeze()  # what lived before the run: the collection below scans the run's only
        try:
            if cwd is not None:
                os.chdir(cwd)
            code = minijudge.main([str(a) for a in argv])
            gc.collect()  # its leaks, if any, are reported (and ignored) here, not later
        finally:
            os.chdir(here)
            gc.unfreeze()  # ~25 ms a run less than scanning the whole suite's heap each time
    return code, out.getvalue(), err.getvalue()


# -- The command line in a process of its own, and the files it wrote ----------------

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # minijudge.py's


def without_judge(env=None, *, every=False):
    """This process's environment without the judge's variables (JUDGE_ENV; ``every``:
    any LLM_JUDGE_* or OPENAI_* variable, a named judge's too), ``env`` added: a child's,
    so that no judge a developer set reaches it."""
    if every:
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(("LLM_JUDGE", "OPENAI"))}
    else:
        environ = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
    environ.update(env or {})
    return environ


def run_process(*argv, cwd=REPO, env=None, timeout=60, python=(), **options):
    """``python -S -m minijudge ARGV`` run to its end: its CompletedProcess, stdout and
    stderr captured (bytes, or str with ``universal_newlines=True``). It runs in ``cwd``
    (the repository, whose minijudge.py it imports; from another folder ``env`` sets
    PYTHONPATH), with ``env`` its whole environment (by default without_judge()'s), and
    is killed after ``timeout`` seconds (None: never). ``python`` holds the interpreter's
    own flags (("-X", "importtime")); ``options`` go to subprocess.run (stdin, stdout=None
    to let it print, preexec_fn, ...)."""
    import subprocess
    options.setdefault("stdout", subprocess.PIPE)
    options.setdefault("stderr", subprocess.PIPE)
    return subprocess.run([*PYTHON, *python, "-m", "minijudge"] + [str(a) for a in argv],
                          cwd=cwd, env=without_judge() if env is None else env,
                          timeout=timeout, **options)


def read_records(path):
    """The values of a JSON-lines file, one a line: -o's records, a batch file's lines."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def read_summary(path):
    """The figures of a --summary file."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_text(*path):
    """The text of a file of the repository (README.md, "docs", "outputs.md"), or of any
    file named by an absolute path."""
    with open(os.path.join(REPO, *path), encoding="utf-8") as f:
        return f.read()


def ranking_block(err):
    """The printed summary's ranking: its head line and a line a system under it."""
    lines = err.splitlines()
    head = [i for i, line in enumerate(lines) if line.startswith("  ranked over ")]
    if not head:
        return []
    block = [lines[head[0]]]
    for line in lines[head[0] + 1:]:
        if not line.startswith("    "):
            break
        block.append(line)
    return block



class CommandLineTestCase(StubTestCase):
    """A StubTestCase that runs the command line against its stub: main() in this process
    (``run_cli``, ``main``, ``in_process``) or a real ``python -m minijudge`` in the
    test's folder (``subprocess``); ``sent()`` is a chat request's body, as the stub received it."""

    def run_cli(self, *argv):
        """(exit code, records, stderr) of main() against the stub."""
        code, out, err = run_main(["--judge-url", self.srv.url, "--judge-model", "judge-model",
                                   "--no-preflight", "--max-retries", "0"] + list(argv))
        return code, [json.loads(line) for line in out.splitlines()], err

    def main(self, *argv, items, code=0):
        """(records, stderr) of main() over ``items`` against the stub, which must exit
        ``code``."""
        source = self.write_jsonl("in.jsonl", items)
        got, out, err = run_main(["--judge-url", self.srv.url, "--max-retries", "0",
                                  "--no-preflight", source] + list(argv))
        self.assertEqual(got, code, err)
        return [json.loads(line) for line in out.splitlines()], err

    def sent(self, n=-1):
        return [r.json for r in self.srv.requests if r.method == "POST"][n]

    def in_process(self, *argv, env=None):
        """main() as ``subprocess`` runs a process: in the test's folder, ``env`` added to
        the environment; (exit code, stdout, stderr). 0.05 s of CPU less than a process,
        for a test whose point is not the process (its signals, pipes, stdout's encoding)."""
        return run_main(argv, env=env, cwd=self.tmp)

    def subprocess(self, *argv, env=None):
        """A real ``python -m minijudge``: (exit code, stdout, stderr)."""
        done = run_process(*argv, cwd=self.tmp, env=dict(os.environ, PYTHONPATH=REPO,
                                                         **(env or {})),
                           universal_newlines=True, encoding="utf-8")
        return done.returncode, done.stdout, done.stderr


class CommandLineSideBySide(SideBySide, CommandLineTestCase):
    """SideBySide tests of a real ``python -m minijudge`` each (``cli``), the API key
    ``KEY`` in its environment as the README tells a user to set it, so that a test can
    check it shows nowhere."""

    # every test here is real subprocesses against its own stub: each class's tests run
    # side by side (three at a time, for the two cores)
    side_by_side = 3
    KEY = "sk-host30-SECRET-0123456789"  # ASCII: a key with an accent is refused up front

    def cli(self, *argv, env=None):
        """A real ``python -m minijudge``: (exit code, stdout, stderr); the key is in the
        environment, as the README tells a user to set it."""
        return self.subprocess(*argv, env=dict({"LLM_JUDGE_API_KEY": self.KEY}, **(env or {})))

    def source(self, records=({"question": "q", "response": "r"},)):
        return self.write_jsonl("in.jsonl", records)
