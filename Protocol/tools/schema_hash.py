#!/usr/bin/env python3
"""Reproduce Seam's schema hashes from canonical JSON alone, as Protocol/schema.md specifies.

An independent implementation in another language: it reads no Swift, only the committed
canonical JSON, and checks every frozen version (Protocol/schemas/<Model>/vN.json against
vN.hashes.json) and every conformance vector (Protocol/vectors/schema/*.json), and refuses every document of
Protocol/vectors/schema/invalid/ (each breaks one rule of schema.md's "Valid models").

It also checks what canonical form alone does not (sorted lists, names, one configuration
per entity, defaults that fit their type), and that documents breaking those rules are refused.

    python3 Protocol/tools/schema_hash.py [PROTOCOL_DIR]      exit 0 when every hash matches
"""
import base64
import hashlib
import json
import math
import pathlib
import re
import struct
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


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
TYPES = {"string", "integer", "double", "bool", "date", "uuid", "binary", "json"}
TRANSFORMERS = {"encrypted"}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
F64 = re.compile(r"f64:[0-9a-f]{16}\Z")
# Both included; the upper is the double nearest 9999-12-31T23:59:59.999999Z (it is 253402300800.0).
DATES = (struct.unpack(">d", bytes.fromhex("c22cef23ee000000"))[0], struct.unpack(">d", bytes.fromhex("424d7ffa20c00000"))[0])


def utf8_sorted(items):
    return items == sorted(items, key=lambda x: [n.encode("utf-8") for n in x] if isinstance(x, list) else x.encode("utf-8"))


def check_name(name, what):
    if not isinstance(name, str) or not NAME.match(name) or len(name.encode("utf-8")) > 64 \
            or name.lower().startswith(("seam_", "sqlite_")):
        raise ValueError(f"{what} {name!r} is not a valid name")


def check_keys(obj, required, optional, what):
    if not isinstance(obj, dict) or not required <= obj.keys() <= required | optional:
        raise ValueError(f"{what} must have {sorted(required)} (and may have {sorted(optional)})")


def check_default(value, type_, where):
    if type_ == "string" and isinstance(value, str):
        return
    if type_ == "integer" and isinstance(value, int) and not isinstance(value, bool) and -2**63 <= value < 2**63:
        return
    if type_ == "bool" and isinstance(value, bool):
        return
    if type_ in ("double", "date") and isinstance(value, str) and F64.match(value):
        d = struct.unpack(">d", bytes.fromhex(value[4:]))[0]
        if math.isfinite(d) and value != "f64:8000000000000000" and (type_ == "double" or DATES[0] <= d <= DATES[1]):
            return
    if type_ == "uuid" and isinstance(value, str) and UUID.match(value):
        return
    if type_ == "binary" and isinstance(value, str):
        try:
            if base64.b64encode(base64.b64decode(value, validate=True)).decode() == value:
                return
        except ValueError:
            pass
    if type_ == "json" and isinstance(value, str):
        try:
            if canonical_json_text(json.loads(value, parse_int=Number, parse_float=Number, object_pairs_hook=unique_members)) == value:
                return
        except ValueError:
            pass
    raise ValueError(f"{where}: {value!r} is no canonical {type_} default")


class Number(str):
    """A JSON number kept as written: a json default's numbers are not reformatted."""


def unique_members(pairs):
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("duplicate key")
    return dict(pairs)


def canonical_json_text(value):
    """A json default's canonical text: as `canonical`, but numbers exactly as written."""
    if isinstance(value, Number):
        return str.__str__(value)
    if isinstance(value, dict):
        return "{" + ",".join(canonical(k) + ":" + canonical_json_text(value[k])
                              for k in sorted(value, key=lambda k: k.encode("utf-8"))) + "}"
    if isinstance(value, list):
        return "[" + ",".join(canonical_json_text(v) for v in value) + "]"
    return canonical(value)


def check_case_blind(names, what):
    """Names equal but for case clash (SQLite's table and index names are case-blind)."""
    seen = {}
    for n in names:
        if n.lower() in seen:
            raise ValueError(f"{what} {n!r} and {seen[n.lower()]!r} differ only in case")
        seen[n.lower()] = n


def check(doc):
    """The rules of Protocol/schema.md ("Valid models") that canonical form alone does not enforce."""
    check_keys(doc, {"configurations", "entities", "format", "model"}, {"versionHashModifier"}, "a model document")
    if doc["format"] != 1:
        raise ValueError("format must be 1")
    check_name(doc["model"], "model")
    entities, configurations = doc["entities"], doc["configurations"]
    if not isinstance(entities, dict) or not isinstance(configurations, dict) or "Default" in configurations:
        raise ValueError("configurations name declared configurations only (never Default)")
    holders = {}
    for name, members in configurations.items():
        check_name(name, "configuration")
        if not isinstance(members, list) or not utf8_sorted(members) or len(set(members)) != len(members):
            raise ValueError(f"configuration {name}: its entities must be listed once each, sorted")
        for m in members:
            if m not in entities:
                raise ValueError(f"configuration {name} lists {m!r}, which is no entity of the version")
            holders.setdefault(m, []).append(name)
    check_case_blind(entities, "entities")
    index_names = {n.lower() for n in entities}
    for name, e in entities.items():
        check_name(name, "entity")
        if len(holders.get(name, [])) != 1:
            raise ValueError(f"entity {name} must be in exactly one configuration, not {holders.get(name, [])}")
        check_keys(e, {"attributes", "indexes", "links", "name", "unique"}, {"versionHashModifier"}, f"entity {name}")
        if e["name"] != name:
            raise ValueError(f"entity {name} is named {e['name']!r} inside")
        attributes = e["attributes"]
        if attributes.get("uuid", {}).get("type") != "uuid" or attributes["uuid"].get("optional") is not False:
            raise ValueError(f"entity {name} needs a required uuid attribute")
        check_case_blind(attributes, f"attributes of {name}:")
        for a, attr in attributes.items():
            check_name(a, "attribute")
            check_keys(attr, {"optional", "type"}, {"default", "transformer", "versionHashModifier"}, f"{name}.{a}")
            if "transformer" in attr and attr["transformer"] not in TRANSFORMERS:
                raise ValueError(f"{name}.{a}: unknown transformer {attr['transformer']!r} (rule 10)")
            if attr["type"] not in TYPES or not isinstance(attr["optional"], bool):
                raise ValueError(f"{name}.{a}: unknown type or optionality")
            if "default" in attr:
                check_default(attr["default"], attr["type"], f"{name}.{a}")
        for key, kind in (("indexes", "idx"), ("unique", "unique")):
            lists = e[key]
            if not utf8_sorted(lists) or any(not l or any(x not in attributes for x in l) for l in lists):
                raise ValueError(f"entity {name}: {key} must be sorted lists of its attributes")
            if any(a == b for a, b in zip(lists, lists[1:])):
                raise ValueError(f"entity {name}: a list appears twice among its {key}")
            for l in lists:
                index = f"{name}_{kind}_{'_'.join(l)}"
                if index.lower() in index_names:
                    raise ValueError(f"entity {name}: the index name {index} clashes with another index or an entity")
                index_names.add(index.lower())
        for a, link in e["links"].items():
            check_keys(link, {"deleteRule", "kind", "target"}, set(), f"link {name}.{a}")
            if a not in attributes or link["target"] not in entities \
                    or link["deleteRule"] not in ("cascade", "nullify", "deny", "none") \
                    or link["kind"] not in ("value", "relationship"):
                raise ValueError(f"link {name}.{a} is not valid")
            if attributes[a]["type"] != "uuid":
                raise ValueError(f"link {name}.{a}: its attribute must be of type uuid")
            if link["deleteRule"] == "nullify" and not attributes[a]["optional"]:
                raise ValueError(f"link {name}.{a}: nullify needs an optional attribute")
            if link["kind"] == "relationship" and holders.get(name) != holders.get(link["target"]):
                raise ValueError(f"link {name}.{a}: a relationship joins entities of one configuration only")


def hashes(model_text):
    doc = json.loads(model_text)
    reject_floats(doc)
    if canonical(doc) != model_text:
        raise ValueError("the model JSON is not in canonical form")
    check(doc)
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


def refusals(doc):
    """Documents the spec forbids, each one change away from a valid one: `hashes` must refuse them."""
    def changed(edit):
        d = json.loads(json.dumps(doc))
        edit(d)
        return d
    every = lambda d: d["entities"]["Every"]
    attrs = lambda d: every(d)["attributes"]
    return {
        "indexes out of order": changed(lambda d: every(d).update(indexes=[["text"], ["count"]])),
        "an integer past 64 bits": changed(lambda d: attrs(d)["count"].update(default=2**63)),
        "a null default written out": changed(lambda d: attrs(d)["maybe"].update(default=None)),
        "an unknown top-level key": changed(lambda d: d.update(extra=1)),
        "a declared Default": changed(lambda d: d["configurations"].update(Default=["Every"])),
        "an entity in no configuration": changed(lambda d: d["configurations"].update(Cloud=[])),
        "uppercase f64 hex": changed(lambda d: attrs(d)["ratio"].update(default=attrs(d)["ratio"]["default"].upper().replace("F64", "f64"))),
        "a date past 9999": changed(lambda d: attrs(d)["when"].update(default="f64:" + struct.pack(">d", 1e12).hex())),
        "base64 with stray bits": changed(lambda d: attrs(d)["bytes"].update(default="Zh==")),
        "an uppercase uuid": changed(lambda d: attrs(d)["ref"].update(default=attrs(d)["ref"]["default"].upper())),
        "a name of 65 bytes": changed(lambda d: attrs(d).update({"x" * 65: {"optional": True, "type": "bool"}})),
        "json default not minified": changed(lambda d: attrs(d)["doc"].update(default='{"a": 1}')),
    }


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
    defaults = root / "vectors/schema/defaults.json"
    if defaults.exists():
        for what, doc in refusals(json.loads(json.loads(defaults.read_text("utf-8"))["canonicalJSON"])).items():
            checked += 1
            try:
                hashes(canonical(doc))
                failures.append(f"accepted {what}")
            except ValueError:
                pass
    # Each breaks one rule of "Valid models" (written by make_invalid_vectors.py): refused.
    for path in sorted(root.glob("vectors/schema/invalid/*.json")):
        vector = json.loads(path.read_text("utf-8"))
        checked += 1
        try:
            hashes(vector["canonicalJSON"])
            failures.append(f"accepted {path.name} ({vector['rule']})")
        except ValueError:
            pass
        except KeyError as e:
            failures.append(f"{path.name}: refused by a KeyError ({e}), not a ValueError naming the rule")
    for f in failures:
        print(f"mismatch: {f}", file=sys.stderr)
    print(f"{checked - len(failures)} passed, {len(failures)} failed")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
