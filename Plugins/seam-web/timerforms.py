"""The timer forms' rules, as the `seam` CLI has them (`seam timer add`, `seam timer edit`,
`seam flash`): the same checks, the same messages. A test runs both on the same inputs and
compares what they say, so the page and the terminal never disagree on what a duration is."""
from __future__ import annotations

import unicodedata

MAXIMUM_SECONDS = 7 * 24 * 3600
MAX_STEPS = 100
MAX_ROUNDS = 1000


class FormError(ValueError):
    """What is wrong with a form's field, in the words the CLI uses."""


def _fail(text: str) -> FormError:
    return FormError(f"'{text}' is not a duration: write 90s, 5m, 1h30m, 1:30 (minutes:seconds), 1:02:03 or a number of seconds")


def _too_long(text: str) -> FormError:
    return FormError(f"'{text}' is longer than a week: a step lasts at most 168h (7 days)")


def _number(digits: str, text: str) -> int:
    significant = digits.lstrip("0")
    if len(significant) > 7:
        raise _too_long(text)
    return int(significant or "0")


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


def _trim(text: str) -> str:
    # SeamTimers' trimmingSpaces: whitespace at either end, newlines and Unicode spaces included.
    return text.strip()


def parse_duration(text: str) -> int:
    """Seconds from `90s`, `5m`, `1h30m`, `1:30`, `1:02:03` or a number of seconds."""
    t = _trim(text)
    if not t:
        raise _fail(text)
    seconds = 0
    if ":" in t:
        parts = t.split(":")
        if len(parts) not in (2, 3) or not all(p and all(_is_digit(c) for c in p) for p in parts):
            raise _fail(text)
        numbers = [_number(p, text) for p in parts]
        if any(n >= 60 for n in numbers[1:]):
            raise _fail(text)
        for n in numbers:
            seconds = seconds * 60 + n
    elif all(_is_digit(c) for c in t):
        seconds = _number(t, text)
    else:
        digits = ""
        seen: set[str] = set()
        last_unit = 1 << 62
        for c in t:
            if _is_digit(c):
                digits += c
                continue
            units = {"h": 3600, "m": 60, "s": 1}
            if c not in units:
                raise _fail(text)
            unit = units[c]
            if not digits or c in seen or unit >= last_unit:
                raise _fail(text)
            seen.add(c)
            last_unit = unit
            seconds += _number(digits, text) * unit
            digits = ""
        if digits:
            raise _fail(text)
    if seconds <= 0:
        raise FormError(f"'{text}' is zero: a step lasts at least one second")
    if seconds > MAXIMUM_SECONDS:
        raise _too_long(text)
    return seconds


def _visible(c: str) -> bool:
    # Takes a column on a terminal: not a control, format or combining character, not a space.
    if c.isspace():
        return False
    return unicodedata.category(c) not in ("Cc", "Cf", "Mn", "Me", "Zs", "Zl", "Zp", "Cs", "Co", "Cn")


def check_name(text: str, of: str) -> str:
    if not any(_visible(c) for c in text):
        raise FormError(f"{of}'s name cannot be empty or only spaces")
    return text


def parse_step(argument: str) -> dict:
    """`LABEL=DURATION`, as `--step` takes it."""
    if "=" not in argument:
        raise FormError(f"'{argument}' is not a step: write LABEL=DURATION, e.g. Steep=3m")
    eq = argument.rindex("=")
    label = _trim(argument[:eq])
    if not label:
        raise FormError(f"the step '{argument}' has no label: write LABEL=DURATION")
    return {"label": label, "seconds": parse_duration(argument[eq + 1:])}


def parse_steps(arguments: list[str]) -> list[dict]:
    if not arguments:
        raise FormError("a timer needs at least one --step LABEL=DURATION")
    if len(arguments) > MAX_STEPS:
        raise FormError(f"a timer has at most {MAX_STEPS} steps; {len(arguments)} given")
    return [parse_step(a) for a in arguments]


def parse_rounds(text: str) -> int:
    # Swift's Int(text): an optional sign, then ASCII digits only.
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not all(_is_digit(c) for c in body) or not (1 <= int(text) <= MAX_ROUNDS):
        raise FormError(f"--repeat takes a whole number from 1 to {MAX_ROUNDS}, not '{text}'")
    return int(text)


def check_new_name(name: str, rows: list[dict], kind: str, renaming: str | None = None) -> None:
    for row in rows:
        if row.get("name") == name and row.get("uuid") != renaming:
            short = (row.get("uuid") or "")[-8:]
            raise FormError(f"a {kind} named '{name}' exists already ({short}); give this one another name")
