#!/usr/bin/env python3
"""Reproduce Seam's schema hashes from canonical JSON alone, as Protocol/schema.md specifies.

An independent implementation in another language: it reads no Swift, only the committed
canonical JSON, and checks every frozen version (Protocol/schemas/<Model>/vN.json against
vN.hashes.json) and every conformance vector (Protocol/vectors/schema/*.json).

    python3 Protocol/tools/schema_hash.py [PROTOCOL_DIR]      exit 0 when every hash matches
"""
import hashlib
import json
import pathlib
import sys


def canonical(value):
    """Seam's canonical JSON: keys sorted by code point (= UTF-8 byte order), no whitespace,
    minimal escapes, UTF-8 output. Python's encoder escapes exactly the characters the spec
    names (quote, backslash, controls below U+0020) when ensure_ascii is off."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reject_floats(value, where="$"):
    if isinstance(value, float):
        raise ValueError(f"{where}: floating-point number in hashed content")
    if isinstance(value, dict):
        for k, v in value.items():
            reject_floats(v, f"{where}.{k}")
    if isinstance(value, list):
        for i, v in enumerate(value):
            reject_floats(v, f"{where}[{i}]")


def hashes(model_text):
    doc = json.loads(model_text)
    reject_floats(doc)
    if canonical(doc) != model_text:
        raise ValueError("the model JSON is not in canonical form")
    entities = {name: sha256_hex(canonical(e)) for name, e in doc["entities"].items()}
    configurations = dict(doc["configurations"])
    configurations["Default"] = sorted(doc["entities"])
    config_hashes = {}
    for name, members in configurations.items():
        c = {"format": doc["format"], "model": doc["model"], "configuration": name,
             "entities": {m: entities[m] for m in members}}
        if "versionHashModifier" in doc:
            c["versionHashModifier"] = doc["versionHashModifier"]
        config_hashes[name] = sha256_hex(canonical(c))
    return {"model": sha256_hex(model_text), "entities": entities, "configurations": config_hashes}


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    checked, failures = 0, []
    for path in sorted(root.glob("schemas/*/v*.json")):
        if path.name.endswith(".hashes.json"):
            continue
        expected = json.loads(path.with_name(path.stem + ".hashes.json").read_text("utf-8"))
        got = hashes(path.read_text("utf-8"))
        want = {"model": expected["modelHash"], "entities": expected["entities"],
                "configurations": expected["configurations"]}
        checked += 1
        if got != want:
            failures.append(str(path))
    for path in sorted(root.glob("vectors/schema/*.json")):
        vector = json.loads(path.read_text("utf-8"))
        checked += 1
        if hashes(vector["canonicalJSON"]) != vector["hashes"]:
            failures.append(str(path))
    for f in failures:
        print(f"mismatch: {f}", file=sys.stderr)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
