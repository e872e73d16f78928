#!/usr/bin/env python3
"""Holds chunkref's modules in their layers (docs/architecture.md).

Reads every file under src/ (but src/bin/, the command, which may use
anything), finds the modules each one imports (`use` and inline paths
through `crate::`, `super::` and `self::`; code under `#[cfg(test)]` left
out, since tests may build their fixtures with either half), and fails when

- a file imports a module of a layer above its own, or
- files import each other in a circle.

A file's layer is its first folder under src/ (`src/read/chunk.rs` is in
`read`); `src/lib.rs` and `src/fuzzing.rs` are faces, at the top.

    scripts/check-layers.py            # check; print the figures
    scripts/check-layers.py --verbose  # also every import arrow, by file
"""

import os
import re
import sys

LAYERS = ["base", "conventions", "io", "formats", "codec", "index", "read", "builders", "faces"]
FACES = {"driver", "fuzzing", "lib"}


def layer_of(module):
    """The layer of a module path (a tuple of names under the crate root)."""
    top = module[0] if module else "lib"
    return "faces" if top in FACES else top


def strip(text):
    """Blanks comments and literals (keeping line breaks), so paths inside
    them are not read as imports."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif re.match(r'b?r#*"', text[i:i + 40]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(b?r)(#*)"', text[i:])
            end = text.find('"' + m.group(2), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(2))
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'\n])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_code(text):
    """Removes every item under `#[cfg(test)]` (a test module, a helper)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        i = m.end()
        depth = 0
        while i < len(text):
            c = text[i]
            if c == "[" or c == "(":
                depth += 1
            elif c == "]" or c == ")":
                depth -= 1
            elif c == ";" and depth == 0:
                i += 1
                break
            elif c == "{" and depth == 0:
                level = 1
                i += 1
                while i < len(text) and level:
                    level += {"{": 1, "}": -1}.get(text[i], 0)
                    i += 1
                break
            i += 1
        text = text[:m.start()] + re.sub(r"[^\n]", " ", text[m.start():i]) + text[i:]


def expand(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = tree.strip()
    m = re.match(r"^(.*?)::\{(.*)\}$", tree, re.S)
    if not m:
        return [re.sub(r"\s+as\s+\w+$", "", tree)]
    prefix, inner, items, depth, cur = m.group(1), m.group(2), [], 0, ""
    for c in inner:
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += c
    items.append(cur)
    paths = []
    for item in filter(None, (i.strip() for i in items)):
        paths += [prefix if sub == "self" else f"{prefix}::{sub}" for sub in expand(item)]
    return paths


def modules(src):
    """Module path -> file, for every file of the crate but the command."""
    found = {}
    for folder, _, names in os.walk(src):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, src)
            if not name.endswith(".rs") or rel.startswith("bin" + os.sep):
                continue
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            found[tuple(parts)] = path
    return found


def imports(module, path, known):
    """The modules `module` (in file `path`) imports, with the names."""
    text = drop_test_code(strip(open(path, encoding="utf-8").read()))
    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)\b[^;]*);", text):
        paths += expand(" ".join(m.group(1).split()).replace(" ", ""))
    paths += re.findall(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", text)
    here = list(module)
    found = {}
    for p in paths:
        segs = p.split("::")
        if segs[0] == "crate":
            absolute = segs[1:]
        else:
            cur = here[:]
            if segs[0] == "self":
                segs = segs[1:]
            while segs and segs[0] == "super":
                cur, segs = cur[:-1], segs[1:]
            absolute = cur + segs
        for i in range(len(absolute), 0, -1):
            target = tuple(absolute[:i])
            if target in known:
                if target != module:
                    found.setdefault(target, set()).add(absolute[-1])
                break
    return found


def circles(graph):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    verbose = "--verbose" in sys.argv
    known = modules(root)
    graph = {m: imports(m, p, known) for m, p in known.items()}
    name = lambda m: os.path.relpath(known[m], os.path.join(root, ".."))
    problems = []
    for m in sorted(graph):
        lm = layer_of(m)
        if lm not in LAYERS:
            problems.append(f"{name(m)}: folder '{m[0]}' is no layer ({', '.join(LAYERS[:-1])})")
            continue
        for target, names in sorted(graph[m].items()):
            lt = layer_of(target)
            if verbose:
                print(f"{name(m)} -> {name(target)}: {', '.join(sorted(names))}")
            if lt in LAYERS and LAYERS.index(lt) > LAYERS.index(lm):
                problems.append(
                    f"{name(m)} ({lm}) imports {', '.join(sorted(names))} from "
                    f"{name(target)} ({lt}), a layer above: move the item down, or the file up"
                )
    rings = circles({m: set(g) for m, g in graph.items()})
    for ring in rings:
        problems.append("import circle: " + " -> ".join(name(m) for m in ring))
    arrows = sum(len(g) for g in graph.values())
    largest = max((len(r) for r in rings), default=0)
    print(
        f"{len(graph)} files, {arrows} import arrows, "
        f"{sum('a layer above' in p for p in problems)} running up a layer, "
        f"{len(rings)} circles (largest {largest} files)"
    )
    for p in problems:
        print("  " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
