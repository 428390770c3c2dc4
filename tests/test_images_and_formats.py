"""Issue 28, images and workers: nothing may block forever (an image that is a FIFO, a
device or a folder; a judge_fn or judge_one raising SystemExit, KeyboardInterrupt,
asyncio's CancelledError, GeneratorExit), and a dataset cannot upload an image from
outside its folder (``../``, an absolute path, a symlink pointing out) unless the user
allows a root (--image-root DIR, image_root=). Real FIFOs, symlinks, processes and a
real stub server; every wait has a timeout, so a regression fails instead of hanging."""
import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)
import minijudge  # noqa: E402
from stub import PYTHON, StubTestCase, run_main  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
SECRET = b"\x89PNG\r\n\x1a\n" + b"the private key of the host " * 8  # outside the root
TIMEOUT = 10  # a hang fails the test after this, instead of hanging the suite


class Images(StubTestCase):
    def setUp(self):
        super().setUp()
        self.data = os.path.join(self.tmp, "data")  # the input's folder
        os.makedirs(os.path.join(self.data, "imgs"))
        self.good = self.file(os.path.join(self.data, "imgs", "a.png"), PNG)
        self.secret = self.file(self.path("secret.png"), SECRET)

    def file(self, path, data):
        with open(path, "wb") as f:
            f.write(data)
        return path

    def argv(self, images, *flags, stdin=False):
        """The command line over one record per image, written to data/in.jsonl: its flags
        and the file (``stdin``: "-")."""
        source = os.path.join(self.data, "in.jsonl")
        with open(source, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"question": "q", "response": "r", "image": image}) + "\n"
                         for image in images)
        return ["--judge-url", self.srv.url, "--no-preflight", "--max-retries", "0",
                "--max-error-rate", "1", "--image-field", "image", *flags,
                "-" if stdin else source]

    def main(self, images, *flags, cwd=REPO):
        """(exit code, records, stderr) of main() in this process over one record per image,
        run from ``cwd``: for what is read and refused, not for what may block."""
        code, out, err = run_main(self.argv(images, *flags), cwd=cwd)
        return code, [json.loads(line) for line in out.splitlines()], err

    def cli(self, images, *flags, cwd=REPO, stdin=False):
        """(exit code, records, stderr) of a real ``python -m minijudge`` over one record per
        image, with a timeout: a hang is a failure."""
        argv = [*PYTHON, "-m", "minijudge", *self.argv(images, *flags, stdin=stdin)]
        source = os.path.join(self.data, "in.jsonl")
        env = dict(os.environ, PYTHONPATH=REPO)
        with open(source, "rb") as f:
            proc = subprocess.run(argv, cwd=cwd, env=env, stdin=f if stdin else None,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=TIMEOUT)
        return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], (
            proc.stderr)

    def sent_bytes(self):
        return b"".join(r.body or b"" for r in self.srv.requests)

    def assert_secret_not_sent(self):
        self.assertNotIn(base64.b64encode(SECRET)[:60], self.sent_bytes())


class NothingBlocks(Images):
    def test_a_fifo_device_or_folder_is_that_records_bad_record_not_a_hang(self):
        fifo = os.path.join(self.data, "pipe.png")
        os.mkfifo(fifo)
        os.symlink("pipe.png", os.path.join(self.data, "to-pipe.png"))
        code, out, err = self.cli([fifo, "to-pipe.png", "imgs", "imgs/a.png"])
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["bad_record"] * 3 + ["ok"])
        self.assertEqual([r["judge_error"] for r in out[:3]], [
            "line 1: image {!r} is not a regular file (a FIFO)".format(fifo),
            "line 2: image 'to-pipe.png' is not a regular file (a FIFO)",
            "line 3: image 'imgs' is not a regular file (a folder)"])
        self.assertEqual(self.srv.chat_count, 1)

    def test_a_device_and_a_huge_sparse_file_are_refused_at_once(self):
        huge = os.path.join(self.data, "huge.png")
        self.file(huge, PNG)
        os.truncate(huge, 50 * 1024 ** 3)  # sparse: refused by its size, never read
        code, out, err = self.cli(["/dev/zero", huge], "--image-root", "/")
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_error"] for r in out], [
            "line 1: image '/dev/zero' is not a regular file (a device)",
            "line 2: image {} is over 20 MiB".format(huge)])

    def test_python_a_fifo_image_is_bad_record(self):
        fifo = self.path("pipe.png")
        os.mkfifo(fifo)
        judge = minijudge.LLMJudge(judge_fn=lambda messages: "4")
        got = run_with_timeout(lambda: judge.judge({"question": "q"}, "r", images=fifo))
        self.assertEqual((got.status, got.error), (
            "bad_record", "image {!r} is not a regular file (a FIFO)".format(fifo)))


def run_with_timeout(call):
    """call()'s result, or what it raised, from a thread; fails if it has not ended in
    TIMEOUT seconds (the thread is a daemon: a hang cannot keep the suite alive)."""
    box = {}

    def target():
        try:
            box["result"] = call()
        except BaseException as exc:  # what the caller of judge_records would see
            box["raised"] = exc
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    if thread.is_alive():
        raise AssertionError("still waiting after {} s: it hangs".format(TIMEOUT))
    if "raised" in box:
        raise box["raised"]
    return box["result"]


class Workers(unittest.TestCase):
    """What a worker meets must reach the caller: the item's failure, or the exception."""

    def judge(self, error, on="boom"):
        def judge_fn(messages):
            if on in json.dumps(messages):
                raise error
            return "4"
        return minijudge.LLMJudge(judge_fn=judge_fn)

    def records(self, n=6):
        return [({"question": "q", "response": "boom" if i == 2 else "fine"}) for i in range(n)]

    def judged(self, judge, records=None, **options):
        return run_with_timeout(lambda: [(r["response"], j.status, j.error) for r, j in (
            minijudge.judge_records(judge, records or self.records(), concurrency=2,
                                    **options))])

    def test_a_base_exception_that_is_not_a_stop_is_that_items_failure(self):
        for error, says in [(asyncio.CancelledError(), "CancelledError: "),
                            (GeneratorExit("gone"), "GeneratorExit: gone")]:
            with self.subTest(error=type(error).__name__):
                got = self.judged(self.judge(error))
                self.assertEqual(got[2], ("boom", "internal_error", says))
                self.assertEqual([status for _, status, _ in got],
                                 ["ok", "ok", "internal_error", "ok", "ok", "ok"])

    def test_systemexit_and_keyboardinterrupt_are_raised_in_the_caller(self):
        for error in (SystemExit(3), KeyboardInterrupt()):
            with self.subTest(error=type(error).__name__):
                with self.assertRaises(type(error)) as raised:
                    self.judged(self.judge(error))
                self.assertIs(raised.exception, error)

    def test_a_judge_one_or_failed_that_raises_does_not_hang(self):
        def judge_one(record):
            if record["response"] == "boom":
                raise SystemExit("judge_one quits")
            return minijudge.Judgement(score=1.0, status="ok")
        with self.assertRaises(SystemExit):
            self.judged([self.judge(None)], judge_one=judge_one)

        def buggy(record):
            raise ValueError("a bug")

        def failed(status, error):
            raise RuntimeError("failed() is broken too")
        with self.assertRaisesRegex(RuntimeError, r"failed\(\) is broken too"):
            self.judged([self.judge(None)], judge_one=buggy, failed=failed)

    def test_records_that_raise_reach_the_caller(self):
        def records():
            yield {"question": "q", "response": "fine"}
            raise OSError(5, "Input/output error")
        with self.assertRaisesRegex(OSError, "Input/output error"):
            self.judged(self.judge(None), records=records())

    def test_no_worker_is_a_usage_error_not_a_wait(self):
        for concurrency in (0, -1):
            with self.subTest(concurrency=concurrency):
                with self.assertRaisesRegex(minijudge.JudgeError, r"concurrency must be 1 or "
                                            r"more; got {}".format(concurrency)):
                    run_with_timeout(lambda: list(minijudge.judge_records(
                        self.judge(None), self.records(), concurrency=concurrency)))


class ImageRoot(Images):
    def test_relative_paths_are_read_from_the_input_files_folder(self):
        code, out, err = self.main(["imgs/a.png"])  # cwd: the repository
        self.assertEqual((code, [r["judge_status"] for r in out]), (0, ["ok"]), err)
        self.assertIn(base64.b64encode(PNG), self.sent_bytes())

    def test_a_path_leaving_the_folder_is_refused_and_never_sent(self):
        os.symlink(self.secret, os.path.join(self.data, "link.png"))
        os.symlink(self.tmp, os.path.join(self.data, "up"))  # a folder pointing out
        images = ["../secret.png", self.secret, "link.png", "up/secret.png", "imgs/a.png"]
        code, out, err = self.main(images)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["bad_record"] * 4 + ["ok"])
        real = os.path.realpath(self.data)
        for n, (record, image) in enumerate(zip(out, images[:4]), 1):
            self.assertEqual(record["judge_error"], "line {}: image {!r} is outside {} (the "
                             "input file's folder): allow a folder with --image-root DIR"
                             .format(n, image, real))
        self.assertEqual(self.srv.chat_count, 1)
        self.assert_secret_not_sent()

    def test_image_root_allows_a_folder_and_relative_paths_are_read_from_it(self):
        code, out, err = self.main(["secret.png", self.secret, "data/imgs/a.png", "../x.png"],
                                   "--image-root", self.tmp)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["ok"] * 3 + ["bad_record"])
        self.assertEqual(out[3]["judge_error"], "line 4: image '../x.png' is outside {} "
                         "(--image-root): allow a folder with --image-root DIR".format(
                             os.path.realpath(self.tmp)))
        self.assertIn(base64.b64encode(SECRET), self.sent_bytes())

    def test_batch_export_and_dry_run_write_no_byte_from_outside(self):
        source = os.path.join(self.data, "in.jsonl")
        with open(source, "w", encoding="utf-8") as f:
            f.writelines(json.dumps({"question": "q", "response": "r", "image": image}) + "\n"
                         for image in ["../secret.png", "imgs/a.png"])
        prefix = self.path("req")
        code, out, err = run_main(["--judge-model", "m", "--batch-export", prefix,
                                   "--image-field", "image", source])
        self.assertEqual(code, 1, err)  # the bad record fails, as online: 1 of 2
        self.assertEqual([json.loads(line)["judge_status"] for line in out.splitlines()],
                         ["bad_record", "exported"])
        with open(prefix + ".000.jsonl", "rb") as f:
            exported = f.read()
        self.assertIn(base64.b64encode(PNG), exported)
        self.assertNotIn(base64.b64encode(SECRET)[:60], exported)
        code, out, err = run_main(["--dry-run", "--image-field", "image", source])
        self.assertEqual(code, 0, err)
        self.assertIn("--- line 1: image '../secret.png' is outside", out)

    def test_stdin_reads_from_the_current_folder(self):
        code, out, err = self.cli(["imgs/a.png", "../secret.png"], cwd=self.data, stdin=True)
        self.assertEqual(code, 0, err)
        self.assertEqual([r["judge_status"] for r in out], ["ok", "bad_record"])
        self.assertIn("is outside {} (the current folder, input from stdin)".format(
            os.path.realpath(self.data)), out[1]["judge_error"])
        self.assert_secret_not_sent()

    def test_an_image_root_that_is_no_folder_is_a_usage_error(self):
        code, out, err = self.main(["imgs/a.png"], "--image-root", self.good)
        self.assertEqual((code, out), (2, []))
        self.assertEqual(err, "minijudge: error: image_root (--image-root) must be a folder; "
                         "got {!r}\n".format(self.good))
        self.assertEqual(self.srv.chat_count, 0)

    def test_python_image_root(self):
        os.symlink(self.secret, os.path.join(self.data, "link.png"))
        judge = minijudge.LLMJudge(self.srv.url, model="m", max_retries=0, image_root=self.data)
        self.addCleanup(judge.close)
        for image, status in [("imgs/a.png", "ok"), ("link.png", "bad_record"),
                              (self.secret, "bad_record"), ("../secret.png", "bad_record")]:
            with self.subTest(image=image):
                got = judge.judge({"question": "q"}, "r", images=[image])
                self.assertEqual(got.status, status, got.error)
        self.assertEqual(got.error, "image '../secret.png' is outside {} (image_root): allow "
                         "a folder with image_root=".format(os.path.realpath(self.data)))
        self.assert_secret_not_sent()
        self.assertEqual(self.srv.chat_count, 1)


if __name__ == "__main__":
    unittest.main()
