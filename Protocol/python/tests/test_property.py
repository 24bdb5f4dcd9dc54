"""The diff-application property: a seeded random workload of inserts, updates and deletes of
Timer, UserGroup and Session rows, watched by many subscriptions (predicates with parameters,
sorts ascending, descending and case-folded, limits, fields), each kept by a LiveResult; after
each batch every LiveResult's rows must equal a fresh fetch of the same query.

Most batches are saved on the subscribers' own connection, where the diffs of a save come
before its reply, so the check is exact; some on another connection (the check then waits
for the diffs to arrive); now and then a subscription is replaced by one that resumes with
``since`` (its first reply a diff from the broker's ring, or a resync).

The seed is printed; SEAM_TEST_SEED=N replays it, SEAM_PROPERTY_ITERATIONS=N sets the batches.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import seam

from .support import SeamdTestCase, requires_seamd

UTC = datetime.timezone.utc
NAMES = ["Tea", "tea", "Toast", "toast", "Bread", "Pasta", "Egg", "Éclair", "Zed", "bread", "Tee"]
NOTES = ["", "x", "tax", "note", "X"]
STATES = ["running", "paused", "finished"]

QUERIES: list[dict[str, Any]] = [
    {"entity": "Timer", "sort": "name", "fields": ["name", "sortOrder"]},
    {"entity": "Timer", "where": "sortOrder >= 2", "sort": "-sortOrder,name[c]", "limit": 4},
    {"entity": "Timer", "where": "groupUUID == nil", "sort": "repeatCount DESC, name", "fields": ["name", "repeatCount", "groupUUID"]},
    {"entity": "Timer", "where": "groupUUID != nil AND name BEGINSWITH[c] $p", "parameters": {"p": "t"}, "sort": "groupUUID,name",
     "limit": 3},
    {"entity": "Timer", "where": "name IN {'Tea', 'Toast', 'Bread'} OR repeatCount BETWEEN {3, 4}", "fields": ["name"]},
    {"entity": "Timer", "sort": "name[c],-sortOrder", "limit": 1, "fields": ["name", "sortOrder"]},
    {"entity": "UserGroup", "sort": "sortOrder,name", "limit": 4, "fields": ["name", "sortOrder"]},
    {"entity": "UserGroup", "where": "name CONTAINS 'e'"},
    {"entity": "Session", "where": "state IN {'running', 'paused'}", "sort": "-startedAt", "fields": ["name", "state", "startedAt"]},
    {"entity": "Session"},
    {"entity": "Session", "where": "note CONTAINS 'x' OR timerUUID == nil", "sort": "name[c] DESC", "limit": 2,
     "fields": ["name", "note", "timerUUID"]},
    {"entity": "Session", "where": "startedAt > $since", "parameters": {"since": datetime.datetime(2026, 6, 1, tzinfo=UTC)},
     "sort": "stepIndex,round", "limit": 5, "fields": ["stepIndex", "round", "startedAt"]},
    {"entity": "Session", "where": "NOT state == 'finished' AND name LIKE '*e*'", "sort": "-name", "fields": ["name", "state"]},
]


@dataclass
class Watch:
    query: dict[str, Any]
    subscription: seam.Subscription
    live: seam.LiveResult = field(default_factory=seam.LiveResult)

    def catch_up(self) -> None:
        for update in self.subscription.drain():
            self.live.apply(update)


class Workload:
    """Random batches that the broker accepts: each row is touched at most once a batch, a
    session's timer has no other session, nothing deleted is also touched."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.timers: set[str] = set()
        self.groups: set[str] = set()
        self.sessions: dict[str, str | None] = {}  # session → its timer

    def date(self) -> str:
        moment = datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=self.rng.randrange(365 * 86400))
        return seam.format_date(moment.replace(microsecond=self.rng.choice([0, 250000, 999999])))

    def timer_values(self, everything: bool) -> dict[str, Any]:
        rng = self.rng
        values = {"name": rng.choice(NAMES), "sortOrder": rng.randrange(6), "repeatCount": rng.randrange(1, 6),
                  "groupUUID": rng.choice(sorted(self.groups) + [None]) if self.groups else None}
        return values if everything else dict(rng.sample(sorted(values.items()), rng.randrange(1, 4)))

    def session_values(self, everything: bool) -> dict[str, Any]:
        rng = self.rng
        values = {"name": rng.choice(NAMES), "state": rng.choice(STATES), "startedAt": self.date(), "stepIndex": rng.randrange(3),
                  "round": rng.randrange(3), "note": rng.choice(NOTES)}
        if everything:
            values["steps"] = [{"label": "one", "seconds": 60}, {"label": "two", "seconds": 30}, {"label": "three", "seconds": 10}]
            return values
        return dict(rng.sample(sorted(values.items()), rng.randrange(1, 4)))

    def batch(self) -> tuple[list[seam.Operation], list[str | None]]:
        """Operations, and for each Session insert (in order) the timer it names."""
        rng = self.rng
        operations: list[seam.Operation] = []
        session_timers: list[str | None] = []
        touched: set[str] = set()
        deleted_timers: set[str] = set()
        taken_timers = {t for t in self.sessions.values() if t is not None}
        for _ in range(rng.randrange(1, 7)):
            action = rng.choices(["+timer", "+group", "+session", "~timer", "~group", "~session", "-timer", "-group", "-session"],
                                 weights=[4, 1, 3, 4, 1, 3, 1, 1, 1])[0]
            kind, entity = action[0], action[1:]
            if kind == "+":
                if entity == "timer":
                    operations.append(seam.insert("Timer", self.timer_values(True)))
                elif entity == "group":
                    operations.append(seam.insert("UserGroup", {"name": rng.choice(NAMES), "sortOrder": rng.randrange(4)}))
                else:
                    free = sorted(self.timers - taken_timers - deleted_timers)
                    timer = rng.choice(free + [None]) if free else None
                    if timer is not None:
                        taken_timers.add(timer)
                        touched.add(timer)
                    operations.append(seam.insert("Session", {**self.session_values(True), "timerUUID": timer}))
                    session_timers.append(timer)
                continue
            pool = {"timer": self.timers, "group": self.groups, "session": set(self.sessions)}[entity]
            candidates = sorted(pool - touched)
            if not candidates:
                continue
            uuid = rng.choice(candidates)
            if kind == "~":
                if entity == "timer":
                    operations.append(seam.update("Timer", uuid, self.timer_values(False)))
                elif entity == "group":
                    operations.append(seam.update("UserGroup", uuid, {"name": rng.choice(NAMES)} if rng.random() < 0.5
                                                  else {"sortOrder": rng.randrange(4)}))
                else:
                    operations.append(seam.update("Session", uuid, self.session_values(False)))
                touched.add(uuid)
            else:
                if entity == "timer":
                    session = next((s for s, t in self.sessions.items() if t == uuid), None)
                    if session in touched or uuid in taken_timers - {t for t in self.sessions.values()}:
                        continue
                    deleted_timers.add(uuid)
                    if session is not None:
                        touched.add(session)
                elif entity == "session" and self.sessions[uuid] in deleted_timers:
                    continue
                elif entity == "group" and any(o.values and o.values.get("groupUUID") == uuid for o in operations):
                    continue
                operations.append(seam.delete({"timer": "Timer", "group": "UserGroup", "session": "Session"}[entity], uuid))
                touched.add(uuid)
        return operations, session_timers

    def saved(self, operations: list[seam.Operation], session_timers: list[str | None], reply: dict[str, Any]) -> None:
        timers = iter(session_timers)
        for operation, uuid in zip([o for o in operations if o.kind == "insert"], reply["inserted"]):
            if operation.entity == "Timer":
                self.timers.add(uuid)
            elif operation.entity == "UserGroup":
                self.groups.add(uuid)
            else:
                self.sessions[uuid] = next(timers)
        for change in reply["changes"]:
            if change["kind"] == "delete":
                self.timers.discard(change["uuid"])
                self.groups.discard(change["uuid"])
                self.sessions.pop(change["uuid"], None)


def fetch_arguments(query: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in query.items() if k != "entity"}


@requires_seamd
class DiffPropertyTests(SeamdTestCase):
    async def test_every_live_result_equals_a_fresh_fetch(self) -> None:
        seed = int(os.environ.get("SEAM_TEST_SEED") or random.randrange(1 << 32))
        batches = int(os.environ.get("SEAM_PROPERTY_ITERATIONS") or 150)
        print(f"\n  property: seed {seed} (SEAM_TEST_SEED={seed} replays it), {batches} batches, {len(QUERIES)} subscriptions",
              file=sys.stderr)
        rng = random.Random(seed)
        workload = Workload(rng)
        started = time.monotonic()
        client = await seam.connect(self.socket)
        other = await seam.connect(self.socket)
        try:
            watches = [Watch(q, client.subscribe(**q)) for q in QUERIES]
            counts = {"saves": 0, "refused": 0, "elsewhere": 0, "resumed": 0, "diffs": 0, "resyncs": 0, "rows": 0}

            async def check(batch: int, exact: bool) -> None:
                fetched = await asyncio.gather(*(client.call("org.seam.Store.Fetch", seam_query(w.query)) for w in watches))
                for watch, reply in zip(watches, fetched):
                    if not exact and watch.live.rows != reply["rows"]:
                        deadline = time.monotonic() + 5
                        while watch.live.rows != reply["rows"] and time.monotonic() < deadline:
                            try:
                                watch.live.apply(await watch.subscription.next(0.2))
                            except seam.Timeout:
                                reply = await client.call("org.seam.Store.Fetch", seam_query(watch.query))
                    else:
                        watch.catch_up()
                    self.assertEqual(watch.live.rows, reply["rows"],
                                     f"seed {seed}, batch {batch}: the live result of {watch.query} differs from a fetch")
                    self.assertIsNotNone(watch.live.sequence)
                    assert watch.live.sequence is not None
                    self.assertLessEqual(watch.live.sequence, reply["sequence"])
                    counts["rows"] += len(reply["rows"])

            await check(0, True)
            for batch in range(1, batches + 1):
                operations, session_timers = workload.batch()
                if not operations:
                    continue
                elsewhere = rng.random() < 0.2
                writer = other if elsewhere else client
                try:
                    reply = await writer.save(operations)
                except seam.SeamError as e:
                    counts["refused"] += 1
                    self.assertIn(e.name, ("org.seam.Store.NotFound", "org.seam.Store.Conflict"), f"seed {seed}, batch {batch}: {e}")
                    continue
                counts["saves"] += 1
                counts["elsewhere"] += elsewhere
                workload.saved(operations, session_timers, reply)
                for watch in watches:
                    for update in watch.subscription.drain():
                        counts["diffs"] += update.kind == "diff"
                        counts["resyncs"] += update.kind == "resync"
                        watch.live.apply(update)
                await check(batch, not elsewhere)
                if rng.random() < 0.1:
                    # Replace a subscription by one that resumes from its last sequence.
                    index = rng.randrange(len(watches))
                    old = watches[index]
                    resumed = client.subscribe(**old.query, since=old.live.sequence)
                    await old.subscription.close()
                    watches[index] = Watch(old.query, resumed, old.live)
                    counts["resumed"] += 1
            for watch in watches:
                await watch.subscription.close()
        finally:
            await client.close()
            await other.close()
        print(f"  property: {counts['saves']} saves ({counts['elsewhere']} on another connection, {counts['refused']} refused), "
              f"{counts['diffs']} diffs, {counts['resyncs']} resyncs, {counts['resumed']} resumes, {counts['rows']} rows compared "
              f"in {time.monotonic() - started:.1f} s", file=sys.stderr)
        self.assertGreater(counts["diffs"], batches // 2)


def seam_query(query: dict[str, Any]) -> dict[str, Any]:
    """The Fetch parameters of a subscription's query, as the client would send them."""
    out: dict[str, Any] = {"entity": query["entity"]}
    if "where" in query:
        out["predicate"] = query["where"]
    if "parameters" in query:
        out["parameters"] = {k: v.timestamp() if isinstance(v, datetime.datetime) else v for k, v in query["parameters"].items()}
    for key in ("sort", "limit", "fields"):
        if key in query:
            out[key] = query[key]
    return out


if __name__ == "__main__":
    import unittest

    unittest.main()
