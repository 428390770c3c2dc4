"""Regenerate examples/report.png, the picture of an HTML report in docs/outputs.md.

    python tests/screenshot_report.py [OUT.png]

It scores examples/qa.jsonl (24 answers, with human ratings added) against a loopback
stub judge that reasons a line and then rates, writes the page with
``python -m minijudge report OUT.jsonl --human-field label --html PAGE`` and photographs
it in headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it as a dev-only
tool). The helpers here are shared with test_html.py.

Python 3.8+, standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
from stub import JUDGE_ENV, StubServer, chat, run_main  # noqa: E402

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH, HEIGHT = 1200, 1600
# no first-run work and as few of the browser's own fetches as flags allow, so a proxy
# sees the page's requests (what is left: BROWSER_OWN)
HEADLESS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update",
            "--disable-default-apps", "--disable-sync", "--disable-domain-reliability",
            "--disable-client-side-phishing-detection", "--no-pings", "--disable-breakpad",
            "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,"
            "AutofillServerCommunication,Translate",
            "--mute-audio", "--hide-scrollbars", "--force-device-scale-factor=1"]
# Chromium 150 still connects to these at start, whatever page it opens
BROWSER_OWN = {"www.google.com:443", "accounts.google.com:443"}


def find_chromium():
    """The path of a Chromium or Chrome binary, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def html_supported():
    """Whether this minijudge's ``report`` takes ``--html``."""
    proc = subprocess.run([sys.executable, "-m", "minijudge", "report", "--help"], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    return b"--html" in proc.stdout


def report_html(records, page, *more, cwd=REPO):
    """Write ``page`` from the scored ``records`` file with ``minijudge report --html``,
    in a real subprocess in ``cwd``; (exit code, stderr)."""
    env = {k: v for k, v in os.environ.items() if k not in JUDGE_ENV}
    env["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-m", "minijudge", "report", records, "--html",
                           page] + list(more), cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    return proc.returncode, proc.stderr.decode("utf-8", "replace")


def headless(browser, page, *args, profile, proxy=None):
    """Run ``browser`` headless on the file ``page`` with ``args``: (stdout text, stderr).
    ``proxy`` (a URL) receives every http(s) request the browser makes; without one no
    host resolves, so a page that needs the network shows a failed request, not a stall."""
    argv = [browser] + HEADLESS + ["--user-data-dir=" + profile,
                                   "--window-size=%d,%d" % (WIDTH, HEIGHT)]
    if proxy:  # a resolver rule would hide the proxy too
        argv += ["--proxy-server=" + proxy, "--proxy-bypass-list=<-loopback>"]
    else:
        argv.append("--host-resolver-rules=MAP * ~NOTFOUND")
    argv += list(args) + ["file://" + os.path.abspath(page)]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, timeout=60)
    if proc.returncode:
        raise RuntimeError("%s exited %d: %s" % (browser, proc.returncode,
                                                 proc.stderr.decode(errors="replace")[-2000:]))
    return proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


# a judge that reasons a line, then rates (or, now and then, forgets to)
_VERDICTS = [
    ("The response states the reference answer plainly and adds nothing wrong.", 5),
    ("Correct, though it hedges more than the question needs.", 4),
    ("Partly right: the key fact is there but a detail contradicts the reference.", 3),
    ("The response names a different answer from the reference.", 1),
    ("It restates the question without answering it.", 2),
]


def _reply(request):
    crc = zlib.crc32(request.prompt.encode())
    if crc % 11 == 0:
        return chat("I cannot rate this without more context.")  # a parse_error
    reason, rating = _VERDICTS[crc % len(_VERDICTS)]
    return chat("%s\n\nRating: [[%d]]" % (reason, rating))


def build(folder):
    """Score examples/qa.jsonl (labels added) in ``folder``; the records' path."""
    data, out = os.path.join(folder, "qa.jsonl"), os.path.join(folder, "out.jsonl")
    with open(os.path.join(REPO, "examples", "qa.jsonl"), encoding="utf-8") as src, \
            open(data, "w", encoding="utf-8") as dst:
        for n, line in enumerate(src):
            record = json.loads(line)
            record["label"] = 1 + zlib.crc32(record["id"].encode()) % 5 if n % 4 else None
            dst.write(json.dumps(record) + "\n")
    saved = {k: os.environ.pop(k) for k in JUDGE_ENV if k in os.environ}
    try:
        with StubServer(responder=_reply) as srv:
            code, _, err = run_main(["--judge-url", srv.url, "--judge-model", "judge-model",
                                     "--human-field", "label", data, "-o", out, "-q"])
    finally:
        os.environ.update(saved)
    if code not in (0, 1):
        raise RuntimeError("minijudge exited %d: %s" % (code, err))
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    png = os.path.abspath(argv[0] if argv else os.path.join(REPO, "examples", "report.png"))
    browser = find_chromium()
    if not browser:
        print("no Chromium found (tried %s)" % ", ".join(BROWSERS), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as folder:
        page = os.path.join(folder, "report.html")
        # run in the folder, so the page is titled by the file's name, not a temporary path
        code, err = report_html(os.path.basename(build(folder)), page, "--human-field",
                                "label", cwd=folder)
        if code not in (0, 1):
            print(err, file=sys.stderr, end="")
            return 1
        headless(browser, page, "--screenshot=" + png, profile=os.path.join(folder, "p"))
    print("%s: %d bytes" % (os.path.relpath(png), os.path.getsize(png)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
