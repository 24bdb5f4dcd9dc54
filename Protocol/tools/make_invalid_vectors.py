#!/usr/bin/env python3
"""Writes Protocol/vectors/schema/invalid/*.json: canonical documents one change away from the
valid vectors `defaults` and `links`, each breaking one rule of schema.md's "Valid models".
Both implementations must refuse every one (schema_hash.py, and Swift's SchemaVectorsTests).

    python3 Protocol/tools/make_invalid_vectors.py     rewrites the directory
"""
import json
import pathlib
import struct

from schema_hash import canonical

ROOT = pathlib.Path(__file__).resolve().parent.parent


def base(name):
    return json.loads(json.loads((ROOT / f"vectors/schema/{name}.json").read_text("utf-8"))["canonicalJSON"])


def f64(hex_digits):
    return "f64:" + hex_digits


def edits():
    """(file name, rule, the valid vector it starts from, the change)."""
    every = lambda d: d["entities"]["Every"]
    attrs = lambda d: every(d)["attributes"]
    child = lambda d: d["entities"]["Child"]
    def add_entity(d, name, configuration="Cloud"):
        d["entities"][name] = {"attributes": {"uuid": {"optional": False, "type": "uuid"}}, "indexes": [], "links": {},
                               "name": name, "unique": []}
        d["configurations"][configuration] = sorted(d["configurations"][configuration] + [name], key=lambda n: n.encode())
    return [
        ("name-too-long", "1. a name of 65 bytes", "defaults",
         lambda d: attrs(d).update({"x" * 65: {"optional": True, "type": "bool"}})),
        ("name-reserved-prefix", "1. a name that starts with seam_ (any case)", "defaults",
         lambda d: attrs(d).update({"SEAM_x": {"optional": True, "type": "bool"}})),
        ("entities-differ-in-case", "2. two entities whose names differ only in case", "defaults",
         lambda d: add_entity(d, "EVERY")),
        ("attributes-differ-in-case", "2. two attributes of one entity whose names differ only in case", "defaults",
         lambda d: attrs(d).update({"Count": {"optional": True, "type": "integer"}})),
        ("uuid-optional", "3. an entity whose uuid attribute is optional", "defaults",
         lambda d: attrs(d)["uuid"].update(optional=True)),
        ("uuid-missing", "3. an entity without a uuid attribute", "defaults",
         lambda d: attrs(d).pop("uuid")),
        ("default-wrong-type", "4. a default of another type than its attribute", "defaults",
         lambda d: attrs(d)["flag"].update(default=0)),
        ("default-null-written", "4. a null default written out", "defaults",
         lambda d: attrs(d)["maybe"].update(default=None)),
        ("date-above-upper-bound", "4. a date default one double above the upper bound", "defaults",
         lambda d: attrs(d)["when"].update(default=f64("424d7ffa20c00001"))),
        ("date-below-lower-bound", "4. a date default one double below the lower bound", "defaults",
         lambda d: attrs(d)["when"].update(default=f64("c22cef23ee000001"))),
        ("double-not-finite", "4. a double default that is infinite", "defaults",
         lambda d: attrs(d)["ratio"].update(default=f64(struct.pack(">d", float("inf")).hex()))),
        ("uuid-uppercase", "4. an uppercase uuid default", "defaults",
         lambda d: attrs(d)["ref"].update(default=attrs(d)["ref"]["default"].upper())),
        ("base64-stray-bits", "4. base64 that is not canonical", "defaults",
         lambda d: attrs(d)["bytes"].update(default="Zh==")),
        ("json-not-minified", "4. a json default that is not minified", "defaults",
         lambda d: attrs(d)["doc"].update(default='{"a": 1}')),
        ("json-duplicate-key", "4. a json default with a key twice (byte for byte)", "defaults",
         lambda d: attrs(d)["doc"].update(default='{"a":1,"a":2}')),
        ("index-empty", "5. an empty index", "defaults",
         lambda d: every(d).update(indexes=[[]])),
        ("index-unknown-attribute", "5. an index naming no attribute of its entity", "defaults",
         lambda d: every(d).update(indexes=[["nothing"]])),
        ("index-twice", "5. one list twice among an entity's indexes", "defaults",
         lambda d: every(d).update(indexes=[["count"], ["count"]])),
        ("unique-twice", "5. one list twice among an entity's unique constraints", "defaults",
         lambda d: every(d).update(unique=[["count"], ["count"]])),
        ("index-name-clash", "6. an index named as an entity is (Every_idx_count)", "defaults",
         lambda d: (every(d).update(indexes=[["count"]]), add_entity(d, "Every_idx_count"))),
        ("link-attribute-not-uuid", "7. a link keyed by an attribute that is not a uuid", "defaults",
         lambda d: every(d)["links"].update(count={"deleteRule": "none", "kind": "value", "target": "Every"})),
        ("link-to-unknown-entity", "7. a link to an entity the version does not have", "links",
         lambda d: child(d)["links"]["cousinUUID"].update(target="Nobody")),
        ("nullify-required", "7. nullify on a required attribute", "links",
         lambda d: child(d)["attributes"]["ownerUUID"].update(optional=False)),
        ("relationship-across-configurations", "8. a relationship between entities of two configurations", "links",
         lambda d: child(d)["links"]["parentUUID"].update(kind="relationship")),
        ("entity-in-no-configuration", "9. an entity in no configuration", "defaults",
         lambda d: d["configurations"].update(Cloud=[])),
        ("entity-in-two-configurations", "9. an entity in two configurations", "links",
         lambda d: d["configurations"].update(Cloud=["Child", "Parent"])),
        ("configuration-unknown-entity", "9. a configuration listing an entity the version does not have", "links",
         lambda d: d["configurations"].update(Local=["Child", "Nobody"])),
        ("default-configuration-declared", "9. Default declared", "defaults",
         lambda d: d["configurations"].update(Default=["Every"])),
        ("transformer-unknown", "10. a transformer Seam does not know", "defaults",
         lambda d: attrs(d)["maybe"].update(transformer="rot13")),
    ]


def main():
    out = ROOT / "vectors/schema/invalid"
    out.mkdir(exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    for name, rule, source, edit in edits():
        doc = base(source)
        edit(doc)
        (out / f"{name}.json").write_text(canonical({"canonicalJSON": canonical(doc), "rule": rule}) + "\n", "utf-8")
    print(f"{len(edits())} documents in {out}")


if __name__ == "__main__":
    main()
