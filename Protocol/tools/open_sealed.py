#!/usr/bin/env python3
"""Opens the sealed fields of a record taken from a Seam sync server, from Protocol/sync.md
("Encrypted fields") alone, with PyNaCl (libsodium from PyPI).

    open_sealed.py KEYFILE RECORD.json        prints the record's fields, opened, as JSON
    open_sealed.py --phrase "WORD …" RECORD.json

RECORD.json: {"zone": ROLE, "record_type": TYPE, "uuid": UUID, "fields": {…}} as the server
holds it. KEYFILE: a machine's sync.key. Exits 1 naming the field that does not open.
"""
import base64
import hashlib
import json
import sys

import nacl.bindings
import nacl.exceptions

CONSONANTS = "b d f g h j k l m n p r s t v z".split()
VOWELS = "a e i o u ai ei ou".split()


def key_from_file(path):
    words = open(path, encoding="ascii").read().split()
    if len(words) != 3 or words[:2] != ["seam-zone-key", "1"] or len(words[2]) != 64:
        raise ValueError(f"{path} is not a Seam key file")
    return bytes.fromhex(words[2])


def key_from_phrase(text):
    numbers = []
    for i, word in enumerate(text.lower().replace("-", " ").split()):
        first, last, middle = word[:1], word[-1:], word[1:-1]
        if len(word) < 3 or first not in CONSONANTS or last not in CONSONANTS or middle not in VOWELS:
            raise ValueError(f"word {i + 1} is not a word of a recovery phrase")
        numbers.append(CONSONANTS.index(first) << 7 | VOWELS.index(middle) << 4 | CONSONANTS.index(last))
    if len(numbers) != 24:
        raise ValueError("a recovery phrase has 24 words")
    bits = 0
    for n in numbers:
        bits = bits << 11 | n
    data = bits.to_bytes(33, "big")
    key, check = data[:32], data[32]
    if hashlib.sha256(key).digest()[0] != check:
        raise ValueError("the phrase's checksum does not match")
    return key


def key_id(key):
    return hashlib.sha256(b"seam-zone-key:" + key).digest()[:8].hex()


def canonical_array(strings):
    """The canonical JSON of an array of strings (schema.md): minimal escapes, UTF-8."""
    out = []
    for s in strings:
        esc = []
        for ch in s:
            o = ord(ch)
            if ch == '"':
                esc.append('\\"')
            elif ch == "\\":
                esc.append("\\\\")
            elif ch in "\b\f\n\r\t":
                esc.append({"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
            elif o < 0x20:
                esc.append(f"\\u{o:04x}")
            else:
                esc.append(ch)
        out.append('"' + "".join(esc) + '"')
    return ("[" + ",".join(out) + "]").encode("utf-8")


def is_sealed(value):
    return isinstance(value, dict) and set(value) == {"box", "key", "sealed"}


def open_field(key, record, name, value):
    if value["sealed"] != 1 or value["key"] != key_id(key):
        raise ValueError(f"field {name}: sealed with another key ({value['key']}) or format")
    box = base64.b64decode(value["box"], validate=True)
    if len(box) < 40:
        raise ValueError(f"field {name}: the box is too short")
    ad = canonical_array(["seam-sealed-1", record["zone"], record["record_type"], record["uuid"], name])
    try:
        plain = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(box[24:], ad, box[:24], key)
    except nacl.exceptions.CryptoError:
        raise ValueError(f"field {name}: does not open (tampered with, or moved from another row or field)")
    return json.loads(plain.decode("utf-8"))


def main(argv):
    if len(argv) == 4 and argv[1] == "--phrase":
        key, path = key_from_phrase(argv[2]), argv[3]
    elif len(argv) == 3:
        key, path = key_from_file(argv[1]), argv[2]
    else:
        print(__doc__, file=sys.stderr)
        return 64
    record = json.load(open(path, encoding="utf-8"))
    fields = {}
    try:
        for name, value in record["fields"].items():
            fields[name] = open_field(key, record, name, value) if is_sealed(value) else value
    except ValueError as e:
        print(f"open_sealed.py: {e}", file=sys.stderr)
        return 1
    print(json.dumps(fields, ensure_ascii=False, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
