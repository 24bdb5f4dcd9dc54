#!/usr/bin/env python3
"""ARCHITECTURE.md's module table against the code.

Each row's last column ("depends on") must name exactly the project's modules that the row's
modules import (the toolchain's Foundation, Glibc, Dispatch, Synchronization and XCTest aside):
a new import without its row updated, or a row naming a module no longer imported, fails.
Rows whose modules have no Swift sources (the C modules) and the benchmark's ("all of the
above") are not checked. Prints one line per difference and exits 1 if there was any.

    python3 scripts/lib/check-layers.py
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOLCHAIN = {"Foundation", "Glibc", "Dispatch", "Synchronization", "XCTest"}
IMPORT = re.compile(r"^\s*(?:@testable\s+)?import\s+(?:(?:struct|class|enum|func|protocol|var|let|typealias)\s+)?([A-Za-z_]\w*)", re.M)
NAME = re.compile(r"`([A-Za-z][\w-]*)`")


def swift_sources(module):
    for base in ("Sources", "Plugins"):
        directory = ROOT / base / module
        if directory.is_dir():
            return sorted(directory.rglob("*.swift"))
    return []


def imports(module):
    found = set()
    for path in swift_sources(module):
        found.update(IMPORT.findall(path.read_text(encoding="utf-8")))
    return found - TOOLCHAIN


def main():
    failures = 0
    checked = 0
    for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or "all of the above" in cells[-1]:
            continue
        modules = [n for n in NAME.findall(cells[0]) if swift_sources(n)]
        if not modules:
            continue
        checked += 1
        actual = set().union(*(imports(m) for m in modules)) - set(NAME.findall(cells[0]))
        declared = set(NAME.findall(cells[-1])) if cells[-1] not in ("—", "-") else set()
        row = ", ".join(modules)
        for missing in sorted(actual - declared):
            print(f"ARCHITECTURE.md: {row} imports {missing}, which its row does not name")
            failures += 1
        for extra in sorted(declared - actual):
            print(f"ARCHITECTURE.md: {row}'s row names {extra}, which it does not import")
            failures += 1
    if checked == 0:
        print("ARCHITECTURE.md: no module rows found")
        failures += 1
    if failures:
        sys.exit(1)
    print(f"ARCHITECTURE.md: the dependencies of {checked} rows match the imports")


if __name__ == "__main__":
    main()
