"""Reconnects: seamd stopped and started again (cleanly, and killed) on the same data directory
and socket while a subscription is open; a call in flight; a client that may not reconnect."""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import seam

from .support import SeamdTestCase, requires_seamd

QUERY: dict[str, Any] = {"entity": "Timer", "where": "sortOrder < 3", "sort": "name,-sortOrder", "fields": ["name", "sortOrder"]}


@requires_seamd
class ReconnectTests(SeamdTestCase):
    async def asyncSetUp(self) -> None:
        self.client = await seam.connect(self.socket)

    async def asyncTearDown(self) -> None:
        await self.client.close()

    async def fresh(self) -> list[seam.Row]:
        return await self.client.fetch("Timer", where=QUERY["where"], sort=QUERY["sort"], fields=QUERY["fields"])

    async def restart_while_subscribed(self, *, kill: bool) -> None:
        async with self.client.live(**QUERY) as view:
            await view.next(5)
            reply = await self.client.save([seam.insert("Timer", {"name": n, "sortOrder": i % 4}) for i, n in enumerate("dbca")])
            view.drain()
            self.assertEqual(view.rows, await self.fresh())
            before = view.sequence

            self.seamd.stop(kill=kill)
            self.seamd.start()
            # Meanwhile, another client changes the result: the resume must bring it.
            async with await seam.connect(self.socket) as other:
                await other.save([seam.update("Timer", reply["inserted"][0], {"name": "z"}), seam.insert("Timer", {"name": "e"}),
                                  seam.delete("Timer", reply["inserted"][1])])

            assert view.subscription is not None
            update = await view.subscription.next(10)
            view.live.apply(update)
            self.assertTrue(update.resumed)
            self.assertIn(update.kind, ("diff", "resync"))
            if update.kind == "resync":
                self.assertEqual(update.from_sequence, before)
            self.assertEqual(view.rows, await self.fresh())
            self.assertEqual(self.client.connections, 2)

            # And it goes on as before.
            await self.client.save([seam.insert("Timer", {"name": "b2", "sortOrder": 1})])
            self.assertEqual(view.drain(), await self.fresh())

    async def test_a_subscription_resumes_after_a_clean_restart(self) -> None:
        await self.restart_while_subscribed(kill=False)

    async def test_a_subscription_resumes_after_seamd_is_killed(self) -> None:
        await self.restart_while_subscribed(kill=True)

    async def test_a_call_in_flight_raises_disconnected_and_the_next_succeeds(self) -> None:
        sub = self.client.subscribe(**QUERY)
        live = seam.LiveResult()
        live.apply(await sub.next(5))
        self.seamd.signal(signal.SIGSTOP)
        call = asyncio.create_task(self.client.count("Timer"))
        await asyncio.sleep(0.2)
        self.assertFalse(call.done())
        self.seamd.stop(kill=True)
        with self.assertRaises(seam.Disconnected) as caught:
            await call
        self.assertIn(self.socket, str(caught.exception))
        self.assertFalse(self.client.connected)
        with self.assertRaises(seam.Unreachable):
            await self.client.count("Timer")  # nobody there yet: it says so at once
        self.seamd.start()
        self.assertEqual(await self.client.count("Timer"), 0)
        await self.client.save([seam.insert("Timer", {"name": "after"})])
        # The subscription was subscribed again by the call that reconnected; its resume comes
        # before the save's reply.
        for update in sub.drain():
            live.apply(update)
        self.assertEqual(live.rows, await self.fresh())
        await sub.close()

    async def test_a_client_that_may_not_reconnect_says_so(self) -> None:
        async with await seam.connect(self.socket, reconnect=False) as client:
            sub = client.subscribe("Timer")
            await sub.next(5)
            self.seamd.stop()
            with self.assertRaises(seam.Disconnected):
                await sub.next(5)
            self.seamd.start()
            with self.assertRaises(seam.Disconnected) as caught:
                await client.count("Timer")
            self.assertIn("does not reconnect", str(caught.exception))

    async def test_a_subscription_gives_up_after_its_reconnect_timeout(self) -> None:
        async with await seam.connect(self.socket, reconnect_timeout=0.5) as client:
            sub = client.subscribe("Timer")
            await sub.next(5)
            self.seamd.stop()
            started = time.monotonic()
            with self.assertRaises(seam.Unreachable):
                await sub.next(10)
            self.assertLess(time.monotonic() - started, 3)

    async def test_a_subscription_waits_for_seamd_to_come_back(self) -> None:
        sub = self.client.subscribe("Timer", fields=["name"])
        live = seam.LiveResult()
        live.apply(await sub.next(5))
        self.seamd.stop()
        waiting = asyncio.create_task(sub.next(20))
        await asyncio.sleep(0.5)
        self.assertFalse(waiting.done(), "it retries while nobody answers")
        self.seamd.start()
        update = await waiting
        # Nothing was saved since: an empty diff at the same sequence (or a resync).
        self.assertTrue(update.resumed)
        self.assertTrue(update.empty or update.kind == "resync", update)
        live.apply(update)
        await self.client.save([seam.insert("Timer", {"name": "back"})])
        for update in sub.drain():
            live.apply(update)
        self.assertEqual([r["name"] for r in live.rows], ["back"])
        await sub.close()

    async def test_a_resume_from_beyond_the_broker_starts_afresh(self) -> None:
        await self.client.save([seam.insert("Timer", {"name": "x"})])
        sub = self.client.subscribe("Timer", fields=["name"], since=10**9)
        update = await sub.next(5)
        self.assertEqual((update.kind, update.resumed, [r["name"] for r in update.rows or []]), ("result", True, ["x"]))
        await sub.close()


if __name__ == "__main__":
    import unittest

    unittest.main()
