# SPDX-License-Identifier: GPL-2.0-or-later
"""The one TAP emitter of daxfile's Python: the tests' (daxtest.Tap, which
is this), the VM harness's and the quickstart's.

Every check is a named TAP result; a driver never turns a failure into a
pass or a skip. Skips are only for what the environment truly lacks.
"""

import sys
import threading
import traceback


# One line is one write, under a lock: a thread's diagnostics (a guest's
# StallWatch) never land in the middle of a result line.
_LOCK = threading.Lock()


def _emit(line):
    with _LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Tap:
    """Collects results and prints TAP as it goes: the one TAP emitter of
    the Python tests (plan, ok/not ok, skip, diag, skip_all, bail_out).
    Its methods may be called from more than one thread."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        self.planned = None

    def plan(self, n):
        self.planned = n
        _emit(f"1..{n}")

    def diag(self, text):
        for line in str(text).splitlines() or [""]:
            _emit(f"# {line}")

    @staticmethod
    def skip_all(why):
        """The whole test does not apply here: an empty plan; exits 0."""
        _emit(f"1..0 # SKIP {why}")
        sys.exit(0)

    @staticmethod
    def bail_out(why):
        """Stop the whole test at once; exits 1."""
        _emit(f"Bail out! {why}")
        sys.exit(1)

    @staticmethod
    def _name(name):
        # one line, and no '#' that TAP would read as a directive
        return (name.replace("\\", "\\\\").replace("\n", "\\n")
                .replace("#", "\\#"))

    def ok(self, cond, name, diag=None):
        name = self._name(name)
        self.n += 1
        if cond:
            _emit(f"ok {self.n} - {name}")
        else:
            self.failed += 1
            _emit(f"not ok {self.n} - {name}")
            if diag is not None:
                self.diag(diag)
        return bool(cond)

    def todo(self, name, why, diag=None):
        """A check that failed for a cause outside what the test proves,
        named by @why with the evidence for it: TAP's TODO, printed as the
        failure it is, not counted as one. Only where the test has shown
        that cause; never a way to quiet a failure it cannot explain."""
        name = self._name(name)
        self.n += 1
        _emit(f"not ok {self.n} - {name} # TODO {self._name(why)}")
        if diag is not None:
            self.diag(diag)

    def is_(self, got, want, name):
        return self.ok(got == want, name, f"got:  {got!r}\nwant: {want!r}")

    def skip(self, name, why):
        name = self._name(name)
        self.n += 1
        _emit(f"ok {self.n} - {name} # SKIP {why}")

    def subtest(self, name, func, *args):
        """Run func; an exception is a failed result, not a crash."""
        try:
            return func(*args)
        except Exception:  # noqa: BLE001 - reported as a TAP failure
            self.ok(False, f"{name}: raised", traceback.format_exc())
            return None

    def done(self):
        if self.planned is None:
            _emit(f"1..{self.n}")
        elif self.planned != self.n:
            self.failed += 1
            _emit(f"# planned {self.planned} results, ran {self.n}")
        return 1 if self.failed else 0
