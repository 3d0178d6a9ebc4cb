# SPDX-License-Identifier: GPL-2.0-or-later
"""The quickstart's steps: numbered and timed, never silent for more than
PROGRESS_EVERY seconds, and a failure that says what failed: the step,
the command, and the last lines of the console it ran in.

Inside the emulated pmem host (tap mode) the same steps are TAP for the
quickstart on the real host to relay: a step begins with a STEP comment,
progress is PROGRESS comments, a failure's details one FAIL comment (JSON).
"""

import json
import os
import secrets
import shlex
import subprocess
import sys
import threading
import time
import traceback

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRESS_EVERY = 7    # at most this many seconds without a whole line
TAIL = 20             # console lines shown with a failure
STEP = "# quickstart-step "          # inside the emulated host: a step begins
FACT = "# quickstart-fact "          # ... a fact for the summary (JSON)
PROGRESS = "# quickstart-progress "  # ... what the step is doing now
FAIL = "# quickstart-fail "          # ... a failure's details (JSON)


def tail_lines(path, n=TAIL):
    """The last @n lines of the file @path ([] when it is not there)"""
    try:
        with open(path, errors="replace") as f:
            return [line.rstrip("\n") for line in f.readlines()[-n:]]
    except (OSError, TypeError):
        return []


class StepFailed(Exception):
    """A step failed: why (the message), the command that failed, and the
    console it ran in (its name and its last lines)."""

    def __init__(self, message, command=None, console_name=None,
                 console=None):
        super().__init__(message)
        self.command = command
        self.console_name = console_name
        self.console = list(console or [])[-TAIL:]

    def details(self):
        return {"message": str(self), "command": self.command,
                "console_name": self.console_name, "console": self.console}

    @classmethod
    def from_details(cls, d, prefix=""):
        return cls(prefix + d.get("message", "failed"), d.get("command"),
                   d.get("console_name"), d.get("console"))

    def report(self):
        """What a person reads: one line per fact, the console indented"""
        lines = []
        if self.command:
            lines.append(f"the command that failed: {self.command}")
        if self.console:
            lines.append(f"the last {len(self.console)} lines of "
                         f"{self.console_name or 'its console'}:")
            lines += [f"  | {line}" for line in self.console]
        elif self.console_name:
            lines.append(f"{self.console_name}: empty")
        return lines


class Steps:
    """Numbered steps with their times, a log, progress lines and cleanups
    run in reverse. tap: report each step as TAP (inside the emulated host,
    for the quickstart on the real host to relay)."""

    def __init__(self, args, total, tap=None):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.tag = f"daxfile-quickstart-{secrets.token_hex(3)}"
        self.logs = f"/var/tmp/{self.tag}-logs"
        os.makedirs(self.logs, mode=0o755)
        self.start = time.monotonic()
        self.n = 0
        self.total = total
        self.tap = tap
        self.facts = {}
        self.cleanups = []
        self.lock = threading.Lock()
        self.current = None   # (title, start) of the step under way
        self.said = 0.0       # when the last line was printed
        self.open_line = False
        self.what = None      # what the step does now: a text or a callable
        threading.Thread(target=self._ticker, daemon=True).start()

    # ------------------------------------------------------------ output
    def write(self, text, newline=True):
        with self.lock:
            if self.open_line and newline:
                sys.stdout.write("\n")
            sys.stdout.write(text + ("\n" if newline else ""))
            sys.stdout.flush()
            self.open_line = not newline
            if newline:  # a reader sees whole lines only
                self.said = time.monotonic()

    def status(self, what):
        """What the step under way is doing (a text, or a callable that
        says it), for its progress lines"""
        self.what = what

    def _ticker(self):
        while True:
            time.sleep(0.5)
            cur = self.current
            now = time.monotonic()
            if cur is None or now - self.said < PROGRESS_EVERY:
                continue
            what = self.what
            try:
                text = what() if callable(what) else what
            except Exception as e:  # noqa: BLE001 - a status is best effort
                text = f"({e})"
            if self.tap:
                self.write(f"{PROGRESS}{text or 'working'}")
            else:
                self.write(f"      {now - cur[1]:4.0f} s: {text or 'working'}")

    def log(self, text):
        with open(os.path.join(self.logs, "quickstart.log"), "a") as f:
            f.write(text.rstrip("\n") + "\n")

    # ------------------------------------------------------------- steps
    def cmd(self, argv, what):
        """Run @argv; StepFailed naming it, with its output, when it fails"""
        self.log(f"$ {shlex.join(argv)}")
        proc = subprocess.run(argv, capture_output=True, text=True,
                              errors="replace")
        self.log(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            out = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise StepFailed(f"{what}: {out[-1] if out else 'failed'}",
                             shlex.join(argv), "its output", out)
        return proc

    def daxfile(self, *args, what="daxfile"):
        return self.cmd([os.path.join(self.build, "src", "daxfilectl",
                                      "daxfile")] + list(args), what)

    def fact(self, key, value):
        self.facts[key] = value
        if self.tap:
            self.write(f"{FACT}{json.dumps({key: value})}")

    def begin(self, title):
        self.n += 1
        self.log(f"== step {self.n}: {title}")
        self.what = None
        if self.tap:
            self.write(f"{STEP}{title}")
        else:
            self.write(f"[{self.n}/{self.total}] {title} ...", newline=False)
        t0 = time.monotonic()
        self.current = (title, t0)
        return t0

    def end(self, title, t0, error=None):
        self.current = None
        took = time.monotonic() - t0
        self.log(f"-- step {self.n}: {took:.1f} s"
                 + (f", failed: {error}" if error else ""))
        if self.tap:
            with self.lock:
                self.tap.ok(error is None, title)
                if error is not None:
                    print(f"{FAIL}{json.dumps(error.details())}", flush=True)
        else:
            verdict = "FAILED" if error else f"done ({took:.1f} s)"
            if self.open_line:
                self.write(f" {verdict}")
            else:
                self.write(f"      {verdict}")
        if error:
            raise StepFailed(f"step {self.n} ({title}) failed: {error}",
                             error.command, error.console_name,
                             error.console)

    def step(self, title, func, *args):
        t0 = self.begin(title)
        try:
            result = func(*args)
        except StepFailed as e:
            self.end(title, t0, e)
        except Exception as e:  # noqa: BLE001 - reported with the logs
            self.log(traceback.format_exc())
            self.end(title, t0, StepFailed(str(e) or type(e).__name__))
        self.end(title, t0)
        return result

    def later(self, what, func, *args):
        self.cleanups.append((what, func, args))

    def cleanup(self):
        for what, func, args in reversed(self.cleanups):
            try:
                func(*args)
            except Exception as e:  # noqa: BLE001 - keep cleaning up
                print(f"  cleanup: {what} failed: {e}", file=sys.stderr)
                self.log(traceback.format_exc())
