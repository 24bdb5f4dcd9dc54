#!/usr/bin/env python3
"""The lines each Swift type spans in Sources/: its declaration and every extension of it,
each from its first line to its closing brace (nested types counted in their parent too).

    scripts/lib/type-sizes.py [--top N] [--max LINES] [--module NAME]

Prints the N largest (10 by default); with --max, exits 1 naming every type past LINES (of
module NAME alone, with --module). scripts/test holds the broker's types to a few hundred
lines: the broker is parts, each owning its state, not one type over many files.
"""
import os, re, sys

DECL = re.compile(r'^(?:(?:public|internal|private|fileprivate|package|open|final|indirect|@\w+(?:\([^)]*\))?)\s+)*'
                  r'(class|struct|enum|actor|protocol|extension)\s+([A-Za-z_][\w.]*)')

def blocks(path):
    """(kind, name, lines) of each top-level declaration in `path`."""
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = DECL.match(lines[i])
        if not m:
            i += 1
            continue
        depth, start, seen = 0, i, False
        while i < len(lines):
            # Strings first (a "//" may stand in one), then the comment.
            text = re.sub(r'"(?:\\.|[^"\\])*"', '""', lines[i]).split('//')[0]
            depth += text.count('{') - text.count('}')
            seen = seen or '{' in text
            i += 1
            if seen and depth <= 0:
                break
        yield m.group(1), m.group(2), i - start

def main():
    args = sys.argv[1:]
    top = int(args[args.index('--top') + 1]) if '--top' in args else 10
    limit = int(args[args.index('--max') + 1]) if '--max' in args else None
    only = args[args.index('--module') + 1] if '--module' in args else None
    sizes, parts = {}, {}
    for root, _, files in os.walk('Sources'):
        for f in sorted(files):
            if not f.endswith('.swift'):
                continue
            path = os.path.join(root, f)
            module = path.split(os.sep)[1]
            for kind, name, n in blocks(path):
                if kind == 'protocol':
                    continue
                key = f'{module}.{name.split(".")[0]}'
                sizes[key] = sizes.get(key, 0) + n
                parts.setdefault(key, set()).add(f)
    ranked = [(name, n) for name, n in sorted(sizes.items(), key=lambda kv: -kv[1]) if only is None or name.startswith(only + '.')]
    print(f'{"type":<44} {"lines":>6}  files')
    for name, n in ranked[:top]:
        print(f'{name:<44} {n:>6}  {len(parts[name])}')
    if limit is not None:
        over = [(name, n) for name, n in ranked if n > limit]
        for name, n in over:
            print(f'type-sizes: {name} spans {n} lines, past {limit}: split it into parts of its own', file=sys.stderr)
        sys.exit(1 if over else 0)

main()
