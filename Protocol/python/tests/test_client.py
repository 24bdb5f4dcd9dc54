"""The client's calls against a real seamd: Hello, fetch, count, save, call, call_more, status,
errors, many calls at once, subscriptions and live views, and where connect() connects."""

from __future__ import annotations

import asyncio
import datetime
import os
import tempfile
import unittest
from unittest import mock

import seam

from .support import Seamd, SeamdTestCase, requires_seamd


@requires_seamd
class CallTests(SeamdTestCase):
    async def asyncSetUp(self) -> None:
        self.client = await seam.connect(self.socket)

    async def asyncTearDown(self) -> None:
        await self.client.close()

    async def test_hello_is_said_at_once(self) -> None:
        self.assertEqual(self.client.hello["role"], "cli")
        self.assertEqual(self.client.hello["author"], "cli")
        self.assertEqual(self.client.hello["version"], 1)
        self.assertEqual(self.client.address, self.socket)
        self.assertTrue(self.client.connected)

    async def test_save_fetch_count(self) -> None:
        given = "0b7e3f7a-52a4-4d0e-9c3e-6f1d2a9b8c01"
        reply = await self.client.save([
            seam.insert("UserGroup", {"name": "Kitchen"}),
            seam.insert("Timer", {"uuid": given, "name": "Tea", "steps": [{"label": "steep", "seconds": 180}]}),
            seam.insert("Timer", {"name": "Bread", "createdAt": datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)}),
        ])
        self.assertEqual(reply["sequence"], 1)
        kitchen, tea, bread = reply["inserted"]
        self.assertEqual(tea, given)
        self.assertEqual({c["uuid"] for c in reply["changes"]}, {kitchen, tea, bread})
        self.assertEqual(await self.client.count("Timer"), 2)
        self.assertEqual(await self.client.count("Timer", "name == $n", {"n": "Tea"}), 1)
        rows = await self.client.fetch("Timer", sort="name", fields=["name", "createdAt"])
        self.assertEqual([r["name"] for r in rows], ["Bread", "Tea"])
        self.assertEqual(rows[0], {"uuid": bread, "name": "Bread", "createdAt": "2026-01-02T00:00:00.000000Z"})
        self.assertEqual(await self.client.fetch("Timer", uuid=tea, fields="name"), [{"uuid": tea, "name": "Tea"}])
        since = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
        self.assertEqual(await self.client.count("Timer", "createdAt > $since", {"since": since}), 1)
        page = await self.client.fetch("Timer", sort="-name", limit=1, offset=1, fields=["name"])
        self.assertEqual(page, [{"uuid": bread, "name": "Bread"}])

        await self.client.save([seam.update("Timer", tea, {"groupUUID": kitchen})])
        reply = await self.client.save([seam.delete("UserGroup", kitchen)])
        kinds = sorted((c["entity"], c["kind"]) for c in reply["changes"])
        self.assertEqual(kinds, [("Timer", "update"), ("UserGroup", "delete")])
        self.assertEqual(reply["inserted"], [])
        self.assertEqual((await self.client.fetch("Timer", uuid=tea))[0]["groupUUID"], None, "nullified by the link rule")
        reply = await self.client.save([seam.update("Timer", tea, {"name": "Tea"})])
        self.assertIsNone(reply["sequence"], "a save that changes nothing")
        counted = await self.client.save([seam.insert("Timer", {"name": f"bulk {i}"}) for i in range(3)], count_only=True)
        self.assertEqual(counted["changed"], 3)
        self.assertNotIn("changes", counted)
        self.assertNotIn("inserted", counted)

    async def test_errors_name_themselves(self) -> None:
        with self.assertRaises(seam.SeamError) as caught:
            await self.client.fetch("Timer", where="name ===")
        error = caught.exception
        self.assertEqual(error.name, "org.seam.Store.InvalidRequest")
        self.assertEqual(error.short_name, "InvalidRequest")
        self.assertEqual(error.parameters["field"], "predicate")
        self.assertIn("org.seam.Store.InvalidRequest", str(error))
        self.assertIn("field=predicate", str(error))
        self.assertIn(error.parameters["message"], str(error))
        with self.assertRaises(seam.SeamError) as caught:
            await self.client.save([seam.update("Timer", "0b7e3f7a-52a4-4d0e-9c3e-6f1d2a9b8c09", {"name": "x"})])
        self.assertEqual(caught.exception.name, "org.seam.Store.NotFound")
        with self.assertRaises(seam.SeamError) as caught:
            await self.client.call("org.seam.Store.Frobnicate")
        self.assertEqual(caught.exception.name, "org.varlink.service.MethodNotFound")
        self.assertEqual(caught.exception.parameters, {"method": "org.seam.Store.Frobnicate"})
        self.assertTrue(self.client.connected, "an error reply leaves the connection as it was")
        with self.assertRaises(TypeError):
            await self.client.save([{"entity": "Timer"}])  # type: ignore[list-item]
        with self.assertRaises(seam.RequestTooLarge):
            await self.client.save([seam.insert("Timer", {"name": "x" * (5 << 20)})])
        self.assertEqual(await self.client.count("Timer"), 0)

    async def test_call_and_call_more(self) -> None:
        flashed = await self.client.call("org.seam.Timers.Flash", {"seconds": 60, "name": "Egg"})
        self.assertEqual(flashed["sequence"], 1)
        paused = await self.client.call("org.seam.Timers.Pause", {"session": flashed["session"]})
        self.assertEqual(paused["state"], "paused")
        replies = [p async for p in self.client.call_more("org.seam.Maintenance.Check")]
        self.assertEqual(replies[-1]["state"], "done")
        self.assertTrue(all(p["state"] == "running" for p in replies[:-1]))
        with self.assertRaises(seam.SeamError) as caught:
            async for _ in self.client.call_more("org.seam.Maintenance.Backup", {"directory": "relative"}):
                pass
        self.assertTrue(caught.exception.name.startswith("org."), caught.exception)
        self.assertEqual(await self.client.call("org.seam.Store.Status", oneway=True), {})
        status = await self.client.status()
        self.assertEqual(status["sequence"], 2)
        self.assertEqual(status["pid"], self.seamd.pid)
        models = await self.client.schema()
        self.assertIn("Timer", [e["name"] for m in models for e in m["entities"]])

    async def test_many_calls_at_once_on_one_connection(self) -> None:
        await self.client.save([seam.insert("Timer", {"name": f"t{i}"}) for i in range(20)])
        counts = await asyncio.gather(*(self.client.count("Timer", "name == $n", {"n": f"t{i % 25}"}) for i in range(200)))
        self.assertEqual(counts, [1 if i % 25 < 20 else 0 for i in range(200)])
        self.assertEqual(self.client.connections, 1)

    async def test_a_subscription_and_its_end(self) -> None:
        sub = self.client.subscribe("Session", where='state == "running"', sort="name", fields=["name", "state"])
        first = await sub.next(5)
        self.assertEqual((first.kind, first.sequence, first.rows), ("result", 0, []))
        self.assertIsInstance(sub.subscription, int)
        flashed = await self.client.call("org.seam.Timers.Flash", {"seconds": 60, "name": "Pasta"})
        (diff,) = sub.drain()
        self.assertEqual(diff.kind, "diff")
        self.assertEqual(diff.inserted, [{"uuid": flashed["session"], "index": 0,
                                          "row": {"uuid": flashed["session"], "name": "Pasta", "state": "running"}}])
        self.assertEqual(sub.sequence, 1)
        await sub.close()
        self.assertEqual(sub.ended_at, 1)
        self.assertEqual([u async for u in sub], [])
        status = await self.client.status()
        self.assertEqual(status["subscriptions"], 0)

    async def test_a_subscription_closed_before_its_first_reply_is_unsubscribed(self) -> None:
        sub = self.client.subscribe("Timer")
        await sub.close()
        self.assertEqual([u async for u in sub], [])
        for _ in range(50):
            if (await self.client.status())["subscriptions"] == 0:
                break
            await asyncio.sleep(0.02)
        self.assertEqual((await self.client.status())["subscriptions"], 0)

    async def test_a_subscription_that_the_broker_refuses_raises(self) -> None:
        sub = self.client.subscribe("Timer", where="nmae == 'x'")
        with self.assertRaises(seam.SeamError) as caught:
            await sub.next(5)
        self.assertEqual(caught.exception.name, "org.seam.Store.InvalidRequest")
        with self.assertRaises(StopAsyncIteration):
            await sub.next(5)

    async def test_a_live_view(self) -> None:
        async with self.client.live("Timer", where="sortOrder >= 0", sort="-name", fields=["name"]) as view:
            self.assertEqual(await view.next(5), [])
            reply = await self.client.save([seam.insert("Timer", {"name": n}) for n in ("a", "c", "b")])
            rows = view.drain()
            self.assertEqual([r["name"] for r in rows], ["c", "b", "a"])
            self.assertEqual(view.sequence, reply["sequence"])

            async def rename() -> None:
                await asyncio.sleep(0.05)
                await self.client.save([seam.update("Timer", reply["inserted"][0], {"name": "z"})])

            task = asyncio.create_task(rename())
            async for rows in view:
                self.assertEqual([r["name"] for r in rows], ["z", "c", "b"])
                break
            await task
        self.assertEqual((await self.client.status())["subscriptions"], 0)

    async def test_timeouts_leave_the_connection_usable(self) -> None:
        self.seamd.signal(19)  # SIGSTOP: nothing is answered
        try:
            with self.assertRaises(seam.Timeout) as caught:
                await self.client.count("Timer", timeout=0.2)
            self.assertIsInstance(caught.exception, TimeoutError)
        finally:
            self.seamd.signal(18)  # SIGCONT
        self.assertEqual(await self.client.count("Timer"), 0)


@requires_seamd
class HelloTests(SeamdTestCase):
    async def test_a_plugin_is_held_to_its_capabilities(self) -> None:
        async with await seam.connect(self.socket, role="plugin", name="reader", capabilities={"reads": ["Timer"], "writes": []}) as plugin:
            self.assertEqual(plugin.hello["author"], "plugin:reader")
            self.assertEqual(await plugin.count("Timer"), 0)
            with self.assertRaises(seam.SeamError) as caught:
                await plugin.fetch("Session")
            self.assertEqual(caught.exception.name, "org.seam.Store.PermissionDenied")
            status = await plugin.status()
            self.assertEqual([(p["name"], p["reads"], p["writes"]) for p in status["plugins"]], [("reader", ["Timer"], [])])

    async def test_a_refused_hello_fails_connect(self) -> None:
        for options, name in [({"role": "ticker"}, "org.seam.Store.PermissionDenied"), ({"role": "plugin"}, "org.seam.Store.InvalidRequest"),
                              ({"capabilities": {"reads": ["Nope"]}}, "org.seam.Store.InvalidRequest")]:
            with self.subTest(options=options):
                with self.assertRaises(seam.SeamError) as caught:
                    await seam.connect(self.socket, **options)  # type: ignore[arg-type]
                self.assertEqual(caught.exception.name, name)

    async def test_without_a_role_hello_is_the_default(self) -> None:
        async with await seam.connect(self.socket, role=None) as client:
            self.assertEqual(client.hello["role"], "cli")


class WhereTests(unittest.IsolatedAsyncioTestCase):
    async def test_nobody_answering_is_unreachable(self) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "none.sock")
            with self.assertRaises(seam.Unreachable) as caught:
                await seam.connect(path)
            self.assertIsInstance(caught.exception, seam.Disconnected)
            self.assertEqual(caught.exception.address, path)
            self.assertEqual(caught.exception.strerror, "No such file or directory")
            self.assertIn(path, str(caught.exception))

    def test_the_default_path(self) -> None:
        with mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": "/run/user/1000"}):
            self.assertEqual(seam.default_socket_path(), "/run/user/1000/seam/seamd.sock")
        with mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": ""}):
            self.assertEqual(seam.default_socket_path(), f"/tmp/seam-{os.getuid()}/seamd.sock")

    @requires_seamd
    async def test_seam_socket_then_the_default(self) -> None:
        runtime = tempfile.mkdtemp(prefix="seam-py-run-")
        broker = Seamd()
        broker.socket = os.path.join(runtime, "seam", "seamd.sock")
        broker.start()
        try:
            with mock.patch.dict(os.environ, {"SEAM_SOCKET": broker.socket}):
                os.environ.pop("SEAM_FD", None)
                async with await seam.connect() as client:
                    self.assertEqual(client.address, broker.socket)
            with mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": runtime}):
                os.environ.pop("SEAM_FD", None)
                os.environ.pop("SEAM_SOCKET", None)
                async with await seam.connect() as client:
                    self.assertEqual(client.address, broker.socket)
                    self.assertEqual(await client.count("Timer"), 0)
        finally:
            broker.remove()
            os.rmdir(os.path.join(runtime, "seam")) if os.path.isdir(os.path.join(runtime, "seam")) else None
            os.rmdir(runtime)


if __name__ == "__main__":
    unittest.main()
