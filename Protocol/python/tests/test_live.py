"""LiveResult on its own: PROTOCOL.md's transcript, diffs made from random pairs of results by
the rules PROTOCOL.md states, and diffs that do not fit."""

from __future__ import annotations

import os
import random
import unittest
from typing import Any

import seam

TEA = "0f8fad5b-d9cb-469f-a165-70867728950e"
BREAD = "7c9e6679-7425-40de-944b-e07fc1f90ae7"


class TranscriptTests(unittest.TestCase):
    """The subscription transcript of PROTOCOL.md, reply by reply."""

    def test_the_transcript(self) -> None:
        live = seam.LiveResult()
        self.assertFalse(live.held)
        live.apply({"subscription": 1, "kind": "result", "sequence": 1, "rows": [{"uuid": TEA, "name": "Tea", "state": "running"}]})
        live.apply(seam.Update.from_parameters({"subscription": 1, "kind": "diff", "sequence": 2, "deleted": [],
                                                "inserted": [{"uuid": BREAD, "index": 0, "row": {"uuid": BREAD, "name": "Bread", "state": "running"}}],
                                                "updated": [], "moved": []}))
        self.assertEqual([r["name"] for r in live.rows], ["Bread", "Tea"])
        live.apply({"subscription": 1, "kind": "diff", "sequence": 3, "deleted": [], "inserted": [],
                    "updated": [{"uuid": BREAD, "index": 1, "changedKeys": ["name"], "row": {"uuid": BREAD, "name": "Wine", "state": "running"}}],
                    "moved": [{"uuid": BREAD, "from": 0, "to": 1}]})
        self.assertEqual([r["name"] for r in live.rows], ["Tea", "Wine"])
        live.apply({"subscription": 1, "kind": "diff", "sequence": 4, "deleted": [{"uuid": TEA, "index": 0}], "inserted": [], "updated": [], "moved": []})
        self.assertEqual(live.rows, [{"uuid": BREAD, "name": "Wine", "state": "running"}])
        self.assertEqual(live.sequence, 4)
        live.apply({"subscription": 1, "kind": "end", "sequence": 4})
        self.assertEqual(live.sequence, 4)
        live.apply({"subscription": 2, "kind": "diff", "sequence": 4, "deleted": [], "inserted": [], "updated": [], "moved": []})
        live.apply({"subscription": 2, "kind": "resync", "sequence": 9, "from": 4, "rows": []})
        self.assertEqual((live.rows, live.sequence), ([], 9))

    def test_a_moved_row_that_keeps_its_place(self) -> None:
        """A row whose sort key changed is listed in moved even when its position did not."""
        a, b = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
        live = seam.LiveResult([{"uuid": a, "n": 1}, {"uuid": b, "n": 5}], sequence=1)
        live.apply({"kind": "diff", "sequence": 2, "deleted": [], "inserted": [], "moved": [{"uuid": a, "from": 0, "to": 0}],
                    "updated": [{"uuid": a, "index": 0, "changedKeys": ["n"], "row": {"uuid": a, "n": 2}}]})
        self.assertEqual(live.rows, [{"uuid": a, "n": 2}, {"uuid": b, "n": 5}])


class MisfitTests(unittest.TestCase):
    def setUp(self) -> None:
        self.rows = [{"uuid": f"u{i}", "n": i} for i in range(3)]
        self.live = seam.LiveResult(self.rows, sequence=5)

    def refused(self, parameters: dict[str, Any], words: str) -> None:
        diff = {"kind": "diff", "deleted": [], "inserted": [], "updated": [], "moved": [], **parameters}
        with self.assertRaises(seam.DiffError) as caught:
            self.live.apply(diff)
        self.assertIn(words, str(caught.exception))
        self.assertEqual(self.live.rows, self.rows, "the rows are left as they were")
        self.assertEqual(self.live.sequence, 5)

    def test_diffs_that_do_not_fit_are_refused_and_change_nothing(self) -> None:
        self.refused({"sequence": 4}, "does not follow")
        self.refused({"sequence": 5, "deleted": [{"uuid": "u0", "index": 0}]}, "does not follow")
        self.refused({"sequence": 6, "deleted": [{"uuid": "u1", "index": 0}]}, "holds 'u0'")
        self.refused({"sequence": 6, "deleted": [{"uuid": "u9", "index": 7}]}, "past the 3 rows")
        self.refused({"sequence": 6, "deleted": [{"uuid": "u0", "index": 0}, {"uuid": "u0", "index": 0}]}, "twice")
        self.refused({"sequence": 6, "inserted": [{"uuid": "x", "index": 9, "row": {"uuid": "x"}}]}, "past the 3 rows")
        self.refused({"sequence": 6, "inserted": [{"uuid": "x", "index": 0, "row": {"uuid": "y"}}]}, "has uuid 'y'")
        self.refused({"sequence": 6, "inserted": [{"uuid": "x", "index": 0, "row": "x"}]}, "not an object")
        self.refused({"sequence": 6, "inserted": [{"uuid": "u1", "index": 0, "row": {"uuid": "u1"}}]}, "twice")
        self.refused({"sequence": 6, "updated": [{"uuid": "u1", "index": 0, "row": {"uuid": "u1"}}]}, "holds 'u0'")
        self.refused({"sequence": 6, "updated": [{"uuid": "u1", "index": -1, "row": {"uuid": "u1"}}]}, "not a position")
        self.refused({"sequence": 6, "moved": [{"uuid": "u1", "from": 1, "to": 5}]}, "past the 2 rows")

    def test_a_diff_with_nothing_held_is_refused(self) -> None:
        with self.assertRaises(seam.DiffError):
            seam.LiveResult().apply({"kind": "diff", "sequence": 1, "deleted": [], "inserted": [], "updated": [], "moved": []})
        with self.assertRaises(seam.ProtocolError):
            seam.LiveResult().apply({"kind": "strange", "sequence": 1})
        with self.assertRaises(seam.ProtocolError):
            seam.LiveResult().apply({"kind": "result", "sequence": "1", "rows": []})

    def test_a_handed_out_rows_list_never_changes(self) -> None:
        before = self.live.rows
        self.live.apply({"kind": "diff", "sequence": 6, "deleted": [{"uuid": "u0", "index": 0}], "inserted": [], "updated": [], "moved": []})
        self.assertEqual(len(before), 3)
        self.assertEqual(len(self.live.rows), 2)


def broker_diff(old: list[dict[str, Any]], new: list[dict[str, Any]], sort_key: str, sequence: int) -> dict[str, Any]:
    """A diff from old to new by PROTOCOL.md's rules (what the broker would send)."""
    old_at = {row["uuid"]: i for i, row in enumerate(old)}
    new_at = {row["uuid"]: i for i, row in enumerate(new)}
    deleted = [{"uuid": u, "index": i} for u, i in old_at.items() if u not in new_at]
    inserted = [{"uuid": u, "index": i, "row": new[i]} for u, i in new_at.items() if u not in old_at]
    moved, updated = [], []
    for u, i in new_at.items():
        if u in old_at:
            before, after = old[old_at[u]], new[i]
            if before[sort_key] != after[sort_key]:
                moved.append({"uuid": u, "from": old_at[u], "to": i})
            changed = sorted(k for k in after if before.get(k) != after[k])
            if changed:
                updated.append({"uuid": u, "index": i, "changedKeys": changed, "row": after})
    for part in (deleted, inserted, moved, updated):
        random.shuffle(part)  # the rules do not depend on the order of the entries
    return {"kind": "diff", "sequence": sequence, "deleted": deleted, "inserted": inserted, "updated": updated, "moved": moved}


class RandomDiffTests(unittest.TestCase):
    def test_random_diffs_give_the_new_result(self) -> None:
        seed = int(os.environ.get("SEAM_TEST_SEED") or random.randrange(1 << 32))
        rng = random.Random(seed)
        random.seed(seed)
        for trial in range(300):
            table = {f"{i:04d}": {"uuid": f"{i:04d}", "k": rng.randrange(6), "v": rng.randrange(3)} for i in range(rng.randrange(0, 12))}
            limit = rng.choice([None, 1, 3, 8])

            def result() -> list[dict[str, Any]]:
                rows = sorted(table.values(), key=lambda r: (r["k"], r["uuid"]))
                return [dict(r) for r in (rows if limit is None else rows[:limit])]

            live = seam.LiveResult()
            live.apply({"kind": "result", "sequence": 1, "rows": result()})
            for step in range(2, 8):
                previous = result()
                for _ in range(rng.randrange(1, 5)):
                    action = rng.randrange(4)
                    if action == 0 or not table:
                        u = f"{rng.randrange(10000):04d}"
                        table[u] = {"uuid": u, "k": rng.randrange(6), "v": rng.randrange(3)}
                    elif action == 1:
                        del table[rng.choice(sorted(table))]
                    elif action == 2:
                        table[rng.choice(sorted(table))]["k"] = rng.randrange(6)
                    else:
                        table[rng.choice(sorted(table))]["v"] = rng.randrange(3)
                live.apply(broker_diff(previous, result(), "k", step))
                self.assertEqual(live.rows, result(), f"seed {seed}, trial {trial}, step {step}")


if __name__ == "__main__":
    unittest.main()
