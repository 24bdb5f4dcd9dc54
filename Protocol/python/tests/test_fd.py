"""SEAM_FD: a connection handed over as a descriptor, as seamd hands one to each process it
starts; the first connect() of the process takes it, later ones go to SEAM_SOCKET; it is not
reopened when it closes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import seam

from .support import SeamdTestCase, child_environment, python_child, requires_seamd

TAKE = textwrap.dedent("""
    import asyncio, json, os, seam

    async def main():
        fd = int(os.environ["SEAM_FD"])
        client = await seam.connect(role="plugin", name="handed", capabilities={"reads": ["Timer"], "writes": ["Timer"]})
        out = {"address": client.address, "inheritable": os.get_inheritable(fd), "author": client.hello["author"]}
        reply = await client.save([seam.insert("Timer", {"name": "over fd"})])
        out["count"] = await client.count("Timer")
        async with await seam.connect() as second:
            out["second"] = second.address
            out["second_author"] = second.hello["author"]
        await client.close()
        print(json.dumps(out))

    asyncio.run(main())
""")

LOSE = textwrap.dedent("""
    import asyncio, json, sys, seam

    async def main():
        client = await seam.connect()
        sub = client.subscribe("Timer")
        await sub.next(5)
        print("ready", flush=True)
        out = {}
        try:
            await sub.next(20)
        except seam.Disconnected as e:
            out["subscription"] = type(e).__name__
        try:
            await client.count("Timer")
        except seam.Disconnected as e:
            out["call"] = str(e)
        print(json.dumps(out), flush=True)

    asyncio.run(main())
""")


@requires_seamd
class InheritedSocketTests(SeamdTestCase):
    def handed(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(self.socket)
        return sock

    def test_the_first_connect_takes_seam_fd_and_the_next_seam_socket(self) -> None:
        with self.handed() as sock:
            fd = sock.fileno()
            result = python_child(TAKE, env=child_environment(SEAM_FD=str(fd), SEAM_SOCKET=self.socket), pass_fds=(fd,))
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertEqual(out["address"], f"fd {fd}")
        self.assertFalse(out["inheritable"], "the handed socket is not passed on to the children")
        self.assertEqual(out["author"], "plugin:handed")
        self.assertEqual(out["count"], 1)
        self.assertEqual(out["second"], self.socket)
        self.assertEqual(out["second_author"], "cli")

    def test_a_handed_socket_that_closes_is_not_reopened(self) -> None:
        sock = self.handed()
        fd = sock.fileno()
        child = subprocess.Popen([sys.executable, "-c", LOSE], env=child_environment(SEAM_FD=str(fd), SEAM_SOCKET=self.socket),
                                 pass_fds=(fd,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sock.close()
        try:
            assert child.stdout is not None
            self.assertEqual(child.stdout.readline().strip(), "ready")
            self.seamd.stop()
            self.seamd.start()  # there again, but the handed socket cannot come back
            out, err = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        self.assertEqual(child.returncode, 0, err)
        result = json.loads(out)
        self.assertEqual(result["subscription"], "Disconnected")
        self.assertIn("cannot be reopened", result["call"])

    def test_seam_fd_that_is_no_socket(self) -> None:
        code = textwrap.dedent("""
            import asyncio, seam
            async def main():
                try:
                    await seam.connect()
                except seam.Unreachable as e:
                    print(e)
            asyncio.run(main())
        """)
        read, write = os.pipe()
        try:
            for value, fds, words in [("abc", (), "not a file descriptor number"), (str(read), (read,), "not a socket"),
                                      ("97", (), "not a socket")]:
                with self.subTest(value=value):
                    result = python_child(code, env=child_environment(SEAM_FD=value), pass_fds=fds)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertIn(words, result.stdout)
        finally:
            os.close(read)
            os.close(write)

    async def test_connect_takes_a_descriptor_given_to_it(self) -> None:
        sock = self.handed()
        client = await seam.connect(fd=sock.detach())
        try:
            self.assertTrue(client.address.startswith("fd "))
            self.assertEqual(await client.count("Timer"), 0)
            self.assertFalse(client.reconnect)
        finally:
            await client.close()
