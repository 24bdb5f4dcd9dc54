"""What the tests share: a real seamd of their own on a temporary directory, and where things are."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).resolve().parent
LIBRARY = HERE.parent  # Protocol/python
PROTOCOL = LIBRARY.parent  # Protocol
REPOSITORY = PROTOCOL.parent
VECTORS = PROTOCOL / "vectors" / "protocol"
SEAM_LOG = REPOSITORY / "Plugins" / "seam-log" / "seam-log"

_running: set[subprocess.Popen[bytes]] = set()


def seamd_executable() -> str | None:
    """$SEAMD, else the debug build in the repository, else None (the tests that need it skip)."""
    given = os.environ.get("SEAMD")
    if given:
        return given
    built = REPOSITORY / ".build" / "debug" / "seamd"
    return str(built) if built.exists() else None


T = TypeVar("T")


def requires_seamd(item: T) -> T:
    """Skips a test (or a class of them) when there is no seamd to run."""
    skip = unittest.skipUnless(seamd_executable() is not None, "no seamd: set SEAMD=/path/to/seamd")
    return skip(item)  # type: ignore[type-var]


def child_environment(**extra: str) -> dict[str, str]:
    """The environment for a Python child that imports seam from this tree."""
    env = {k: v for k, v in os.environ.items() if k not in ("SEAM_FD", "SEAM_SOCKET")}
    env["PYTHONPATH"] = str(LIBRARY) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(extra)
    return env


class Seamd:
    """A seamd process on a data directory and socket of its own (``--no-roles`` unless a
    ``config`` is given, whose roles and plugins it then runs). Stop it with :meth:`stop`."""

    def __init__(self, directory: str | None = None, config: str | None = None) -> None:
        executable = seamd_executable()
        if executable is None:
            raise unittest.SkipTest("no seamd: set SEAMD=/path/to/seamd")
        self.executable = executable
        self.owns_directory = directory is None
        self.directory = directory or tempfile.mkdtemp(prefix="seam-py-")
        self.data = os.path.join(self.directory, "data")
        self.socket = os.path.join(self.directory, "seamd.sock")
        self.config = config
        self.log_path = os.path.join(self.directory, "seamd.log")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 20.0) -> Seamd:
        arguments = [self.executable, "--data-dir", self.data, "--socket", self.socket]
        if self.config is not None:
            arguments += ["--config", self.config]
        else:
            arguments.append("--no-roles")
        log = open(self.log_path, "ab")
        env = {k: v for k, v in os.environ.items() if k not in ("SEAM_FD", "LISTEN_FDS", "LISTEN_PID")}
        self.process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        log.close()
        _running.add(self.process)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"seamd exited with {self.process.returncode}: {self.log()}")
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.socket)
                return self
            except OSError:
                time.sleep(0.02)
            finally:
                probe.close()
        self.stop()
        raise RuntimeError(f"seamd did not answer on {self.socket} within {timeout} s: {self.log()}")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")
        except OSError:
            return ""

    def signal(self, number: int) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, number)

    def stop(self, *, kill: bool = False) -> None:
        """SIGTERM (a clean stop) and wait, or SIGKILL with ``kill``; SIGKILL after 10 s anyway."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            if kill:
                process.kill()
            else:
                process.send_signal(signal.SIGCONT)  # in case a test left it stopped
                process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        _running.discard(process)
        self.process = None

    def remove(self) -> None:
        self.stop()
        if self.owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)


@atexit.register
def _stop_leftovers() -> None:
    for process in list(_running):
        if process.poll() is None:
            process.kill()
            process.wait(10)
        _running.discard(process)


class SeamdTestCase(unittest.IsolatedAsyncioTestCase):
    """Each test gets a fresh seamd (``self.seamd``, its socket ``self.socket``)."""

    seamd: Seamd

    def setUp(self) -> None:
        self.seamd = Seamd().start()
        self.addCleanup(self.seamd.remove)

    @property
    def socket(self) -> str:
        return self.seamd.socket


def python_child(code: str, *, env: dict[str, str], pass_fds: tuple[int, ...] = (), timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=env, pass_fds=pass_fds, capture_output=True, text=True,
                          timeout=timeout)
