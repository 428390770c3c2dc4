"""The whole suite, each test module in a fresh process of its own, a few side by side:

    python tests/run.py                      # every test*.py in tests/
    python tests/run.py test_cli test_cache  # these modules (or module.Class.test) alone
    python tests/run.py -s other/folder --jobs 2 --timeout 60
    python tests/run.py --times              # then each module's seconds, wall and CPU

The tests ``python -m unittest discover -s tests`` runs, reported as it reports them: a
dot (F, E, s...) as each test ends, then each failure and error whole, "Ran N tests", OK
or FAILED (failures=N, errors=M, skipped=K), and its exit status: 0 only when every
module ran to its end and no test failed, erred or unexpectedly succeeded; 1 otherwise
(5 when no test ran, on the Pythons whose unittest says so). Most of the suite's time is
spent waiting (on retries, rate limits, hang thresholds, subprocesses), so modules run
side by side: on 2 cores, 3 at a time take about half discovery's time. The slowest start
first (by the seconds each took in the last run here, kept in __pycache__/run-times.json
of the modules' folder; a module not timed yet by its file's size), so none is left
running alone at the end while the other cores idle.

Each module runs in a process of its own (forked from a server run.py starts, which
holds none of its state) that loads it as discovery does and writes what happens to a
file as it happens: each test as it starts, each outcome, and a last line once the
module is done. A module whose process ended without that line (a test called os._exit,
the interpreter crashed) is an error naming the test it was running; so is one still
running after --timeout seconds (default 300), killed with every process it started.
Ctrl-C (SIGINT), SIGTERM or SIGHUP (the terminal closed) stops every module, names the
tests they were running, and exits 130, 143 or 129.

The standard library only, like the tests: it runs where nothing can be installed.
Python 3.8+.
"""
import atexit
import contextlib
import fnmatch
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest
import unittest.loader
import warnings

try:
    import resource
except ImportError:  # Windows: no module's CPU time
    resource = None

HERE = os.path.dirname(os.path.abspath(__file__))
PATTERN = "test*.py"  # discovery's
TIMEOUT = 300  # seconds a module may run: the slowest of tests/ takes 15 s (--times), 40 s under load
EVENTS = ("loaded", "start", "stop", "cpu", "end",  # what a module's process writes, then
          # its outcomes
          "errors", "failures", "skipped", "expectedFailures", "unexpectedSuccesses")
STOPPING = {getattr(signal, name): name for name in ("SIGINT", "SIGTERM", "SIGHUP")
            if hasattr(signal, name)}  # Windows has no SIGHUP


def main(argv=None):
    import argparse

    def seconds(text):  # argparse names it in its error: "invalid seconds value: 'nan'"
        value = float(text)
        if not value > 0:  # nan too: no module would ever be killed
            raise ValueError(text)
        return value

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="test modules (default: as discovery "
                                                   "finds them)")
    parser.add_argument("-s", "--start-directory", default=HERE,
                        help="the folder of the modules, as unittest's (default: tests/)")
    parser.add_argument("--jobs", type=int, default=(os.cpu_count() or 1) + 1,
                        help="modules run at a time (default: the cores, plus one)")
    parser.add_argument("--timeout", type=seconds, default=TIMEOUT,
                        help="seconds a module may run before it is killed, the test it "
                             "was running named (default: %(default)s)")
    parser.add_argument("--times", action="store_true",
                        help="print each module's seconds, wall and CPU (its process's and "
                             "those it waited for), the slowest first")
    args = parser.parse_args(argv)
    folder = os.path.abspath(args.start_directory)
    modules = [_Module(name, folder) for name in args.modules or _discovered(folder)]
    run = _Run(modules, jobs=max(1, args.jobs), timeout=args.timeout)
    result = unittest.TextTestRunner(verbosity=1).run(run)
    _keep_times(folder, modules)
    if args.times:
        _print_times(modules)
    if run.stopped_by:
        left = [module.name for module in modules if module.process is None]
        print("\nrun.py: interrupted ({}); modules not started: {}".format(
            STOPPING[run.stopped_by], ", ".join(left) or "none"), file=sys.stderr)
        return 128 + run.stopped_by
    if result.testsRun == 0 and not result.skipped and sys.version_info >= (3, 12):
        return 5  # unittest's own status for a run without tests, since 3.12
    return 0 if result.wasSuccessful() else 1


def _discovered(folder):
    """What discovery finds at the top of ``folder``, in its order: each module named
    test*.py, and each package (whose own test*.py it searches)."""
    names = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if os.path.isfile(path) and unittest.loader.VALID_MODULE_NAME.match(entry) \
                and fnmatch.fnmatch(entry, PATTERN):
            names.append(entry[:-3])
        elif os.path.isfile(os.path.join(path, "__init__.py")):
            names.append(entry)
    return names


def _times_file(folder):
    return os.path.join(folder, "__pycache__", "run-times.json")


def _kept_times(folder):
    """{module: the wall seconds it took in the last run here}; {} if none was kept."""
    try:
        with open(_times_file(folder), encoding="utf-8") as f:
            times = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(times, dict):
        return {}
    return times


def _keep_times(folder, modules):
    """Add the wall seconds of each module that ran to its end to the times kept."""
    times = _kept_times(folder)
    for module in modules:
        if module.timed:
            times[module.name] = round(module.wall, 2)
    try:
        os.makedirs(os.path.dirname(_times_file(folder)), exist_ok=True)
        with open(_times_file(folder), "w", encoding="utf-8") as f:
            json.dump(times, f, indent=0, sort_keys=True)
    except OSError:
        pass  # a read-only checkout: the next run orders by size


def _print_times(modules):
    ran = [module for module in modules if module.wall is not None]
    ran.sort(key=lambda module: module.wall, reverse=True)
    print("\nrun.py: seconds of each module (wall, CPU):", file=sys.stderr)
    for module in ran:
        print("{:>8.2f} {:>8.2f}  {}".format(module.wall, module.cpu, module.name),
              file=sys.stderr)
    print("{:>8.2f} {:>8.2f}  in all (the wall seconds summed, as if one at a "
          "time)".format(sum(module.wall for module in ran),
                         sum(module.cpu for module in ran)), file=sys.stderr)


# -- The parent: modules started, watched and stopped ---------------------------------

class _Module:
    """One module's run: its process, and the lines it wrote to its file of events."""

    def __init__(self, name, folder):
        self.name = name
        self.folder = folder
        self.process = None
        self.started = None
        self.wall = None  # seconds from its start to its end
        self.cpu = 0.0  # the CPU seconds its process said it used (none on Windows)
        self.timed = False  # it ran to its end: its seconds are kept for the next run
        self.killed = None  # why, if run.py killed it
        self.garbled = None  # the first line of its file that is not an event

    def size(self):
        """The file's size: of modules not timed yet, the longest start first."""
        path = os.path.join(self.folder, self.name.split(".")[0])
        if os.path.isdir(path):
            return sum(entry.stat().st_size for entry in os.scandir(path))
        try:
            return os.path.getsize(path + ".py")
        except OSError:
            return 0

    def start(self, processes, folder):
        """Start the module's process (from ``processes``, a multiprocessing context), its
        events written to a file in ``folder``."""
        self.events = os.path.join(folder, "{}.jsonl".format(id(self)))
        self.process = processes.Process(target=_child, name=self.name,
                                         args=(self.folder, self.name, self.events))
        self.process.start()
        self.started = time.monotonic()

    def ended(self):
        """The process's exit status once it ended (negative: the signal that ended it),
        or None."""
        return self.process.exitcode

    def kill(self, why):
        """Kill the module's process and every process it started (its session)."""
        self.killed = why
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (AttributeError, OSError):  # Windows; not in its session yet; gone
            self.process.kill()
        self.process.join()

    def read(self):
        """The events the module wrote, each a list: its last may be cut off by a kill. A
        line that is not one (a test wrote to the file's descriptor) is left out, the
        first kept in ``garbled``: the module's report cannot be trusted."""
        self.garbled = None
        try:
            with open(self.events, "rb") as f:
                lines = f.read().split(b"\n")[:-1]
        except FileNotFoundError:
            return []
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:  # not JSON, or not UTF-8
                event = None
            if isinstance(event, list) and event and event[0] in EVENTS:
                events.append(event)
            elif self.garbled is None:
                self.garbled = line
        return events

    def how_it_ended(self):
        """What run.py says of a module that did not end as it should."""
        if self.killed:
            return "was still running {}: killed".format(self.killed)
        code = self.ended()
        if code < 0:
            status = "killed by " + signal.Signals(-code).name
        else:
            status = "exit status {}".format(code)
        events = self.read()
        if self.garbled is not None:
            return "ended its process ({}), its report holding a line that is not " \
                   "run.py's: {!r}".format(status, self.garbled[:80])
        if events[-1:] == [["end"]]:
            return "ended its process ({})".format(status)
        return "ended its process ({}) without its report".format(status)

    def reported(self):
        """Whether the module's process wrote its last line and exited 0, and only its
        events."""
        return self.ended() == 0 and self.read()[-1:] == [["end"]] and self.garbled is None


class _Run:
    """The modules run side by side, a test "suite" for unittest's TextTestRunner: it
    runs them all, then gives their results to unittest's result, which the runner
    reports (each failure, the totals and the closing line) as discovery would."""

    def __init__(self, modules, *, jobs, timeout):
        self.modules = modules
        self.jobs = jobs
        self.timeout = timeout
        self.stopped_by = None
        self.processes = _processes()

    def __call__(self, result):
        folder = tempfile.mkdtemp(prefix="run-py-")
        caught = {}
        try:
            with _catching(caught):
                self._run_all(folder, caught)
            for module in self.modules:
                if module.process is not None:
                    _replay(module, result)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _run_all(self, folder, caught):
        """Start the modules, the largest first, ``jobs`` at a time, until each has ended:
        one that outlives the timeout is killed, and all of them once a signal is caught."""
        kept = _kept_times(self.modules[0].folder) if self.modules else {}

        def slowest_first(module):  # those not timed yet first, the largest first
            return (module.name not in kept, kept.get(module.name, 0), module.size())

        waiting = sorted(self.modules, key=slowest_first, reverse=True)
        running = []
        try:
            while running or (waiting and not caught):
                while waiting and len(running) < self.jobs and not caught:
                    module = waiting.pop(0)
                    module.start(self.processes, folder)
                    running.append(module)
                time.sleep(0.01)
                for module in list(running):
                    if caught:
                        self.stopped_by = caught["signum"]
                        module.kill("when run.py was interrupted ({})".format(
                            STOPPING[self.stopped_by]))
                    elif time.monotonic() - module.started > self.timeout:
                        module.kill("after --timeout {:g} s".format(self.timeout))
                    elif module.ended() is None:
                        continue
                    running.remove(module)
                    module.wall = time.monotonic() - module.started
                    if not module.reported():
                        sys.stderr.write("E")
                        sys.stderr.flush()
        finally:  # run.py itself failed: no module outlives it
            for module in running:
                module.kill("when run.py failed")


@contextlib.contextmanager
def _catching(caught):
    """The signals of STOPPING, while in it, kept in ``caught`` instead of ending run.py
    (which then stops the modules); one ignored (a shell's background job's SIGINT,
    nohup's SIGHUP) stays ignored."""
    def catch(signum, frame):
        caught.setdefault("signum", signum)
    before = {}
    for signum in STOPPING:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            before[signum] = signal.signal(signum, catch)
    try:
        yield
    finally:
        for signum, handler in before.items():
            if handler is not None:  # None: one set outside Python, which cannot be put back
                signal.signal(signum, handler)


class _Test:
    """A test as the module's process described it, for unittest's report."""

    def __init__(self, description):
        self.description = description

    def __str__(self):
        return self.description

    def shortDescription(self):
        return None  # the description has the docstring's first line already


def _replay(module, result):
    """Put ``module``'s events into unittest's ``result``; an error for a module that did
    not end on its own, named after the test it was running."""
    running, where = None, "while importing the module"
    for event in module.read():
        kind = event[0]
        if kind == "start":
            result.testsRun += 1
            running, where = event[1], "in this test"
        elif kind == "cpu":
            module.cpu = event[1]
        elif kind in ("loaded", "stop"):
            running, where = None, "between its tests (in a class or module fixture)"
        elif kind == "unexpectedSuccesses":
            result.unexpectedSuccesses.append(_Test(event[1]))
        elif kind == "end":
            where = "after its last test"
        else:  # errors, failures, skipped, expectedFailures: (test, text)
            getattr(result, kind).append((_Test(event[1]), event[2]))
    if module.reported():
        module.timed = True
        return
    if running is None:
        running = "{} (run.py)".format(module.name)
        result.testsRun += 1
    result.errors.append((_Test(running), "run.py: {} {}, {}\n".format(
        module.name, module.how_it_ended(), where)))


# -- The child: one module, run as discovery runs it ----------------------------------

def _processes():
    """Where the modules' processes come from: on POSIX, forked from a server started
    afresh (it imported this file and unittest, nothing of run.py's state), ~0.1 s of
    CPU less each than a new interpreter, 8 s a suite on 2 cores; else spawned."""
    import multiprocessing
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    processes = multiprocessing.get_context("forkserver")
    processes.set_forkserver_preload(["__main__"])
    return processes


def _child(folder, name, events):
    """Run the module ``name`` of ``folder`` (or the test it names), writing its events
    to the file ``events``: the tests' dots go to stderr, as unittest's do."""
    if hasattr(os, "setsid"):
        # a session of its own: a timeout or Ctrl-C kills it with every process it
        # started, and Ctrl-C at the terminal reaches run.py alone, which stops it
        os.setsid()
    if sys.path[0] == HERE:  # as ``python -m unittest``: the current folder, not ours
        sys.path[0] = os.getcwd()
    sys.path.insert(0, folder)
    with open(events, "w", encoding="utf-8") as out:
        result = _Reporting(out)
        suite = _load(folder, name)
        result.send(["loaded"])
        with warnings.catch_warnings():
            if not sys.warnoptions:
                warnings.simplefilter("default")  # as unittest.main: each warning once
            result.startTestRun()
            suite(result)
            result.stopTestRun()
        if resource is not None:
            used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                        resource.RUSAGE_CHILDREN)]
            result.send(["cpu", sum(use.ru_utime + use.ru_stime for use in used)])
        result.send(["end"])
    try:
        atexit._run_exitfuncs()  # as an interpreter's exit would: this process ends in os._exit
    except (Exception, SystemExit):
        pass  # 3.8 and 3.9 raise a handler's error again: an exit prints it, its status stays


def _load(folder, name):
    """The module's tests as discovery loads them: a module that fails to import (a
    syntax error, an exception, sys.exit) is one failing test with its traceback, one
    that raises SkipTest a skipped test; a package, every test*.py in it."""
    loader = unittest.TestLoader()
    path = os.path.join(folder, name)
    if os.path.isfile(os.path.join(path, "__init__.py")):  # a folder without is not one
        if os.path.isfile(path + ".py"):  # import finds the package for both
            raise ImportError("{0}.py and the package {0} are one module: discovery stops "
                              "at them".format(name))
        return loader.discover(path, PATTERN, top_level_dir=folder)
    module_name = name.split(".")[0]
    try:
        __import__(module_name)
    except unittest.SkipTest as exc:
        return unittest.loader._make_skipped_test(module_name, exc, loader.suiteClass)
    except BaseException:  # as discovery: even SystemExit is the module's error
        return unittest.loader._make_failed_import_test(module_name, loader.suiteClass)[0]
    if name != module_name:
        return loader.loadTestsFromName(name)
    tests = loader.loadTestsFromModule(sys.modules[name], pattern=PATTERN)
    if tests is None:  # its load_tests returned nothing: discovery leaves it out
        return loader.suiteClass()
    return tests


class _Reporting(unittest.TextTestResult):
    """unittest's result, its dots on stderr, writing each test as it starts and each
    outcome as unittest records it (after a test, its class's or module's fixtures)."""

    lists = ("errors", "failures", "skipped", "expectedFailures", "unexpectedSuccesses")

    def __init__(self, out):
        super().__init__(sys.stderr, True, 1)
        self.out = out
        self.sent = dict.fromkeys(self.lists, 0)

    def send(self, event):
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    def send_outcomes(self):
        for kind in self.lists:
            for entry in getattr(self, kind)[self.sent[kind]:]:
                if kind == "unexpectedSuccesses":
                    self.send([kind, self.getDescription(entry)])
                else:
                    self.send([kind, self.getDescription(entry[0]), entry[1]])
            self.sent[kind] = len(getattr(self, kind))

    def startTest(self, test):
        self.send_outcomes()
        self.send(["start", str(test)])
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.send_outcomes()
        self.send(["stop"])

    def stopTestRun(self):
        super().stopTestRun()
        self.send_outcomes()


if __name__ == "__main__":
    raise SystemExit(main())
