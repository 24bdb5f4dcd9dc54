#!/usr/bin/env python3
"""ARCHITECTURE.md's module table against the code.

Each row's last column ("depends on") must name exactly the project's modules that the row's
modules import (the toolchain's Foundation, Glibc, Dispatch, Synchronization and XCTest aside):
a new import without its row updated, or a row naming a module no longer imported, fails.
Rows whose modules have no Swift sources (the C modules) and the benchmark's ("all of the
above") are not checked. Also: each target in Package.swift must declare as dependencies exactly
the project's modules its sources import (an import reached only through another target, or a
dependency nothing imports, fails), and no module but SeamSystem may import Glibc (the C library
is reached through it alone). Prints one line per difference and exits 1 if there was any.

    python3 scripts/lib/check-layers.py [--graph]

With --graph it prints the import graph instead: each module of Sources/, then the project's
modules it imports, its Glibc shown.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOLCHAIN = {"Foundation", "Glibc", "Dispatch", "Synchronization", "XCTest"}
IMPORT = re.compile(r"^(?:@testable\s+)?import\s+(?:(?:struct|class|enum|func|protocol|var|let|typealias)\s+)?([A-Za-z_]\w*)", re.M)
NAME = re.compile(r"`([A-Za-z][\w-]*)`")


TARGET = re.compile(r"\.(?:target|executableTarget|testTarget)\(\s*name:\s*\"([^\"]+)\"(.*?)\)\s*,\s*(?=\.|//|\])", re.S)
QUOTED = re.compile(r"\"([^\"]+)\"")


def swift_sources(module, path=None):
    bases = [ROOT / path] if path else [ROOT / base / module for base in ("Sources", "Plugins", "Tests")]
    for directory in bases:
        if directory.is_dir():
            return sorted(directory.rglob("*.swift"))
    return []


def imports(module, path=None, toolchain=TOOLCHAIN):
    found = set()
    for source in swift_sources(module, path):
        found.update(IMPORT.findall(source.read_text(encoding="utf-8")))
    return found - toolchain


def package_targets():
    """Each target of Package.swift: name, its declared dependencies, its path (or None)."""
    text = (ROOT / "Package.swift").read_text(encoding="utf-8")
    for name, rest in TARGET.findall(text):
        deps = re.search(r"dependencies:\s*\[(.*?)\]", rest, re.S)
        path = re.search(r"path:\s*\"([^\"]+)\"", rest)
        yield name, set(QUOTED.findall(deps.group(1))) if deps else set(), path.group(1) if path else None


def check_package():
    """Package.swift's dependencies against the imports, and Glibc outside SeamSystem."""
    failures = 0
    targets = list(package_targets())
    for name, declared, path in targets:
        if not swift_sources(name, path):
            continue
        found = imports(name, path, toolchain=TOOLCHAIN - {"Glibc"})
        is_test = (path or "").startswith("Tests/") or (ROOT / "Tests" / name).is_dir()
        if "Glibc" in found and name != "SeamSystem" and not is_test:
            print(f"{name} imports Glibc: the C library is SeamSystem's to call (add what it needs there)")
            failures += 1
        found.discard("Glibc")
        for missing in sorted(found - declared - {name}):
            print(f"Package.swift: {name} imports {missing}, which its target does not list as a dependency")
            failures += 1
        for extra in sorted(declared - found):
            print(f"Package.swift: {name} lists {extra} as a dependency, which it does not import")
            failures += 1
    return failures, len(targets)


def graph():
    for name, _, path in sorted(package_targets()):
        in_sources = path.startswith("Sources/") if path else (ROOT / "Sources" / name).is_dir()
        if in_sources and swift_sources(name, path):
            found = sorted(imports(name, path, toolchain=TOOLCHAIN - {"Glibc"}) - {name})
            print(f"{name} → {', '.join(found) if found else '—'}")


def main():
    if "--graph" in sys.argv[1:]:
        return graph()
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
    package_failures, targets = check_package()
    failures += package_failures
    if failures:
        sys.exit(1)
    print(f"ARCHITECTURE.md: the dependencies of {checked} rows match the imports; "
          f"Package.swift: the dependencies of {targets} targets match theirs; Glibc only in SeamSystem")


if __name__ == "__main__":
    main()
