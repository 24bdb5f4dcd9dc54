"""Plugins/seam-log, the example plugin built on this library: supervised by seamd through
seamd.json (the socket handed over as SEAM_FD), and run by hand; its command line, its JSON
lines and its exit statuses as they have always been."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import unittest
from pathlib import Path
from typing import Any

import seam

from .support import SEAM_LOG, Seamd, SeamdTestCase, requires_seamd


def lines(path: str) -> list[dict[str, Any]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines() if line.strip()]


async def eventually(seconds: float, what: str, condition: Any) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        await asyncio.sleep(0.02)


def environment() -> dict[str, str]:
    """Without PYTHONPATH: seam-log finds the library beside itself."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SEAM_FD", "SEAM_SOCKET")}


@requires_seamd
class SupervisedTests(unittest.IsolatedAsyncioTestCase):
    async def test_a_supervised_seam_log_logs_the_query_and_is_listed_with_its_capabilities(self) -> None:
        broker = Seamd()
        self.addCleanup(broker.remove)
        output = os.path.join(broker.directory, "log.jsonl")
        config = os.path.join(broker.directory, "seamd.json")
        Path(config).write_text(json.dumps({"roles": {"ticker": {"enabled": False}}, "plugins": [
            {"name": "log", "command": [str(SEAM_LOG), "Session", "--fields", "name,state", "--output", output]}]}))
        broker.config = config
        broker.start()
        await eventually(10, f"the plugin's first line ({broker.log()})", lambda: len(lines(output)) == 1)
        self.assertEqual(lines(output)[0]["kind"], "result")
        async with await seam.connect(broker.socket) as client:
            await client.call("org.seam.Timers.Flash", {"seconds": 30, "name": "Logged"})
            await eventually(5, "the diff logged", lambda: len(lines(output)) == 2)
            diff = lines(output)[-1]
            self.assertEqual(diff["kind"], "diff")
            self.assertEqual(diff["inserted"][0]["row"]["name"], "Logged")
            self.assertEqual(list(diff["inserted"][0]["row"]), ["uuid", "name", "state"])
            self.assertRegex(diff["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertEqual(list(diff)[:2], ["subscription", "kind"])
            self.assertEqual(list(diff)[-1], "time")

            status = await client.status()
            (log,) = [p for p in status["plugins"] if p["name"] == "log"]
            self.assertEqual(log["author"], "plugin:log", "the name seamd.json gave it, not the one it claimed")
            self.assertEqual((log["reads"], log["writes"], log["supervised"]), (["Session"], [], True))
            (role,) = [r for r in status["roles"] if r["name"] == "plugin:log"]
            self.assertEqual(role["state"], "running")
        seam_cli = Path(broker.executable).with_name("seam")
        if seam_cli.exists():
            shown = subprocess.run([str(seam_cli), "status"], env={**os.environ, "SEAM_SOCKET": broker.socket},
                                   capture_output=True, text=True, timeout=10).stdout
            self.assertTrue(all(word in shown for word in ("plugins:", "log", "Session", "nothing")), shown)


@requires_seamd
class ByHandTests(SeamdTestCase):
    def run_log(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SEAM_LOG), *arguments], env=environment(), capture_output=True, text=True, timeout=20)

    def test_a_plugin_that_connects_by_itself_is_held_to_its_declaration(self) -> None:
        result = self.run_log("Timer", "--where", "name ==", "--socket", self.socket)
        self.assertEqual(result.returncode, 1)
        self.assertTrue(result.stderr.startswith("seam-log: org.seam.Store.InvalidRequest"), result.stderr)

    def test_nobody_there(self) -> None:
        path = os.path.join(self.seamd.directory, "nobody.sock")
        result = self.run_log("Session", "--socket", path)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(), f"seam-log: no seamd answers on {path} (No such file or directory); start it with `seam up`")

    async def test_standard_output_then_sigterm_exits_0(self) -> None:
        child = subprocess.Popen([str(SEAM_LOG), "Session", "--where", 'state == "running"', "--sort", "-startedAt"],
                                 env={**environment(), "SEAM_SOCKET": self.socket}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        try:
            assert child.stdout is not None
            first = json.loads(await asyncio.to_thread(child.stdout.readline))
            self.assertEqual((first["kind"], first["rows"]), ("result", []))
            async with await seam.connect(self.socket) as client:
                flashed = await client.call("org.seam.Timers.Flash", {"seconds": 60, "name": "Stdout"})
                second = json.loads(await asyncio.to_thread(child.stdout.readline))
                self.assertEqual(second["inserted"][0]["uuid"], flashed["session"])
                self.assertNotIn("changedKeys", second["inserted"][0])
            child.send_signal(signal.SIGTERM)
            self.assertEqual(await asyncio.to_thread(child.wait, 10), 0)
        finally:
            if child.poll() is None:
                child.kill()
            child.communicate()

    async def test_when_the_broker_goes_away_it_exits_1(self) -> None:
        output = os.path.join(self.seamd.directory, "out.jsonl")
        child = subprocess.Popen([str(SEAM_LOG), "Session", "--output", output, "--socket", self.socket], env=environment(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            await eventually(10, "the first line", lambda: len(lines(output)) == 1)
            self.seamd.stop()
            out, err = await asyncio.to_thread(child.communicate, timeout=10)
            self.assertEqual(child.returncode, 1)
            self.assertEqual(err.strip(), f"seam-log: the broker on {self.socket} went away")
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()


if __name__ == "__main__":
    unittest.main()
