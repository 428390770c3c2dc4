"""The whole suite, a test module at a time in each of a few worker processes:

    python tests/run.py                  # every test*.py in tests/
    python tests/run.py test_cli test_batch --jobs 2
    python tests/run.py -s other/folder  # every test*.py there

The same tests as ``python -m unittest discover -s tests``, which still runs them, one
after another. Most of the suite's time is spent waiting (on retries, rate limits, hang
thresholds, subprocesses), so modules run side by side: on 2 cores, 3 workers take about
half the time of one. Each module runs whole in one worker (its classes' fixtures as
unittest runs them), the largest files first; a dot is printed as each ends, and its
report if a test of it failed. Exit status 1 if any test failed or erred, as unittest's.

The standard library only, like the tests: it runs where nothing can be installed.
"""
import argparse
import concurrent.futures
import io
import multiprocessing
import os
import sys
import time
import unittest
from concurrent.futures.process import BrokenProcessPool

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="test modules (default: test*.py)")
    parser.add_argument("-s", "--start-directory", default=HERE,
                        help="the folder of the modules, as unittest's (default: tests/)")
    parser.add_argument("--jobs", type=int, default=(os.cpu_count() or 1) + 1,
                        help="worker processes (default: the cores, plus one)")
    args = parser.parse_args(argv)
    folder = os.path.abspath(args.start_directory)
    modules = args.modules or _all_modules(folder)
    started = time.perf_counter()
    try:
        results = _run_all(folder, modules, max(1, args.jobs))
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except _WorkerDied as exc:
        print("\nrun.py: a worker process died (did a test end its process?); modules "
              "not finished: {}".format(", ".join(exc.args)), file=sys.stderr)
        return 1
    return _report(results, time.perf_counter() - started)


def _all_modules(folder):
    """The modules discovery finds, largest file first: the longest to run start early,
    so no worker is left with a long one at the end while the others idle."""
    names = [name for name in os.listdir(folder)
             if name.startswith("test") and name.endswith(".py")]
    names.sort(key=lambda name: -os.path.getsize(os.path.join(folder, name)))
    return [name[:-3] for name in names]


def _run_all(folder, modules, jobs):
    """Each module's result, in the order they ended; a dot as each ends (F: a test of it
    failed, its report printed). Workers are started fresh, not forked, so none inherits
    the runner's state."""
    context = multiprocessing.get_context("spawn")
    results = []
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        futures = {pool.submit(_run_module, folder, name): name for name in modules}
        try:
            for future in concurrent.futures.as_completed(futures):
                result = future.result()
                _show(result)
                results.append(result)
        except KeyboardInterrupt:
            for future in futures:  # else the pool would run them all before it closes
                future.cancel()
            raise
        except BrokenProcessPool:
            done = {result["name"] for result in results}
            raise _WorkerDied(*(name for name in modules if name not in done))
    print()
    return results


class _WorkerDied(Exception):
    """A worker ended without a result; the modules without one."""


def _show(result):
    if result["failed"]:
        sys.stdout.write("F\n" + result["text"])
    else:
        sys.stdout.write(".")
    sys.stdout.flush()


def _run_module(folder, name):
    """Run one module's tests as discovery would (its folder first on sys.path); its
    counts and unittest's report of it."""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    stream = io.StringIO()
    suite = unittest.defaultTestLoader.loadTestsFromName(name)
    result = unittest.TextTestRunner(stream=stream, verbosity=1).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    return {"name": name, "ran": result.testsRun, "failures": len(result.failures),
            "errors": len(result.errors), "skipped": len(result.skipped),
            "failed": failed, "text": stream.getvalue()}


def _report(results, seconds):
    """unittest's closing lines for the whole suite; the exit status."""
    ran = sum(result["ran"] for result in results)
    counts = {key: sum(result[key] for result in results)
              for key in ("failures", "errors", "skipped")}
    print("-" * 70)
    print("Ran {} test{} in {:.3f}s ({} modules)".format(ran, "s" * (ran != 1), seconds,
                                                         len(results)))
    print()
    said = ", ".join("{}={}".format(key, count) for key, count in counts.items() if count)
    failed = sum(result["failed"] for result in results)
    if failed:
        print("FAILED ({})".format(said or "unexpected successes"))
        return 1
    if said:
        print("OK ({})".format(said))
    else:
        print("OK")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
