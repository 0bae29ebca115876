#!/usr/bin/env python3
"""check-layers.py - fails when the code breaks fdmini's layer stack (CONTRIBUTING.md, "Layers"):

    kernels/ (no MPI)  <-  base/ (errors, MPI and device memory)  <-  halo/ (the exchange)  <-  src/ (the driver)

It checks, and prints one line per violation:
  1. includes: a file includes the header of a layer above its own (by name or by path: a
     base/ file a halo/ or src/ header, say), and a kernels/ file includes mpi.h, mpi-ext.h or
     mpio.h;
  2. include circles: two or more files whose .c files include each other's headers (a file
     and its header count as one: src/io/output.c with src/io/output.h), directly or round a longer
     circle, and headers that include each other: "no two files call each other" holds for
     includes too, even where an inline function leaves no symbol for part 4 to see (a header
     that includes another only for a type does not make its file a caller);
  3. getenv: base/, halo/ or kernels/ reads an environment variable that the list in CONTRIBUTING.md
     ("Environment variables") does not name for that file, reads one by a non-literal name, or
     the list names one that the file no longer reads;
  4. symbols (needs a build): from `nm` of the product's object files (the fdmini_kernels,
     fdmini_base, fdmini_halo, fdmini_driver and fdmini targets of BUILD_DIR), two or more translation units
     that reference each other's symbols (a cycle: "no two files call each other"), and an
     object of a lower layer that references a symbol defined in a higher one.
The build already refuses most upward includes (each layer's library sees only its own folder
and the ones below); this catches the rest: relative paths, and what no compiler sees.

Usage: tools/check-layers.py [BUILD_DIR...]   (default: build; a directory without the
       product's objects is skipped with a note, so parts 1 to 3 run on a bare checkout)
Exit status 0 when nothing is wrong, 1 otherwise.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = ["kernels", "base", "halo", "src"]  # bottom to top
TARGET_LAYER = {"fdmini_kernels": 0, "fdmini_base": 1, "fdmini_halo": 2, "fdmini_driver": 3, "fdmini": 3}
SOURCE_EXT = (".c", ".h", ".hip", ".cuh", ".in", ".cu", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
GETENV = re.compile(r"\b(?:secure_)?getenv\s*\(\s*([^)]*)\)")
LIST_ROW = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)`\s*\|\s*`([^`]+)`\s*\|")

errors = []


def fail(msg):
    errors.append(msg)
    print("check-layers: " + msg)


def files_of(layer):
    out = []
    for d, _, names in os.walk(os.path.join(ROOT, layer)):
        out += [os.path.relpath(os.path.join(d, n), ROOT) for n in sorted(names) if n.endswith(SOURCE_EXT)]
    return sorted(out)


def headers_of(layer):
    return {os.path.basename(f) for f in files_of(layer) if f.endswith((".h", ".cuh"))}


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def check_includes():
    forbidden = {}
    for i, layer in enumerate(LAYERS[:-1]):
        forbidden[layer] = {above: headers_of(above) for above in LAYERS[i + 1:]}
    forbidden["kernels"]["MPI"] = {"mpi.h", "mpi-ext.h", "mpio.h"}
    for layer, rules in forbidden.items():
        for path in files_of(layer):
            text = read(path)
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                parts = inc.replace("\\", "/").split("/")
                for above, names in rules.items():
                    by_path = above in parts
                    if by_path or parts[-1] in names:
                        what = "mpi.h" if above == "MPI" else "a %s/ header" % above
                        fail("%s:%d includes %s (%s): %s/ is below %s" % (path, line, inc, what, layer,
                             "MPI" if above == "MPI" else above + "/"))
                        break


def module_of(path):
    """src/io/output.c and src/io/output.h -> src/output: a file and its header are one unit."""
    return os.path.splitext(path)[0]


def check_include_circles():
    """Include circles in kernels/, base/, halo/ and src/: between units (a .c file that includes
    another unit's header uses it; a header that includes another for a type does not make its
    unit a user) and between headers themselves."""
    files = [f for layer in LAYERS for f in files_of(layer)]
    header = {}  # basename -> path, for the project's own headers
    for f in files:
        if f.endswith((".h", ".cuh")):
            header.setdefault(os.path.basename(f), f)
    graphs = {"units": ({}, {}), "headers": ({}, {})}
    for path in files:
        is_header = path.endswith((".h", ".cuh"))
        text = read(path)
        for m in re.finditer(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            target = header.get(os.path.basename(m.group(1)))
            if not target:
                continue
            kind = "headers" if is_header else "units"
            a, b = (path, target) if is_header else (module_of(path), module_of(target))
            if a == b:
                continue
            edges, why = graphs[kind]
            edges.setdefault(a, set()).add(b)
            why.setdefault((a, b), "%s includes %s" % (path, os.path.basename(target)))
    for kind, (edges, why) in sorted(graphs.items()):
        nodes = set(edges) | {b for bs in edges.values() for b in bs}
        for comp in strongly_connected(nodes, edges):
            if len(comp) < 2:
                continue
            links = [why[(a, b)] for a in comp for b in comp if (a, b) in why]
            fail("files that include each other (%s): %s" % (", ".join(comp), "; ".join(links)))


def documented_getenv():
    path = "CONTRIBUTING.md"
    if not os.path.exists(os.path.join(ROOT, path)):
        fail("CONTRIBUTING.md is missing: it holds the list of environment variables base/, halo/ and kernels/ may read")
        return set()
    text = read(path)
    begin, end = text.find("<!-- getenv-list -->"), text.find("<!-- /getenv-list -->")
    if begin < 0 or end < begin:
        fail("CONTRIBUTING.md has no <!-- getenv-list --> ... <!-- /getenv-list --> table")
        return set()
    rows = set()
    for line in text[begin:end].splitlines():
        m = LIST_ROW.match(line.strip())
        if m:
            rows.add((m.group(1), m.group(2)))
    return rows


def check_getenv():
    allowed = documented_getenv()
    found = set()
    for layer in ("base", "halo", "kernels"):
        for path in files_of(layer):
            text = read(path)
            for m in GETENV.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                arg = m.group(1).strip()
                lit = re.fullmatch(r'"([A-Za-z_][A-Za-z0-9_]*)"', arg)
                if not lit:
                    fail("%s:%d: getenv(%s): not a literal name, so it cannot be checked against the list" % (path, line, arg))
                    continue
                found.add((lit.group(1), path))
                if (lit.group(1), path) not in allowed:
                    fail("%s:%d reads %s, which CONTRIBUTING.md's getenv list does not document for this file "
                         "(a setting a user needs is an option in src/run/options.c)" % (path, line, lit.group(1)))
    for name, path in sorted(allowed - found):
        if path.split("/")[0] in ("base", "halo", "kernels"):
            fail("CONTRIBUTING.md lists %s in %s, which no longer reads it: drop the row" % (name, path))


def nm(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defs, refs = set(), set()
    for line in out.splitlines():
        p = line.split()
        if len(p) < 2:
            continue
        name, kind = p[0], p[1]
        if kind == "U":
            refs.add(name)
        elif kind in "TDBRCGS":  # strong global definitions (weak and local ones do not bind files)
            defs.add(name)
    return defs, refs


def product_objects(build):
    objs = []
    for target, layer in TARGET_LAYER.items():
        d = os.path.join(build, "CMakeFiles", target + ".dir")
        for dd, _, names in os.walk(d):
            objs += [(os.path.join(dd, n), layer) for n in sorted(names) if n.endswith((".o", ".obj"))]
    return objs


def source_name(obj):
    """CMakeFiles/fdmini_halo.dir/halo/halo.c.o -> halo/halo.c"""
    rel = obj.split(".dir" + os.sep, 1)[-1]
    return re.sub(r"\.(o|obj)$", "", rel)


def strongly_connected(nodes, edges):
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_symbols(build):
    before = len(errors)
    objs = product_objects(build)
    if not objs:
        print("check-layers: note: %s holds no object files of the product: symbols not checked" % build)
        return
    info = {}
    for obj, layer in objs:
        defs, refs = nm(obj)
        info[source_name(obj)] = (layer, defs, refs)
    owner = {}
    for src, (_, defs, _) in info.items():
        for s in defs:
            owner.setdefault(s, src)
    edges = {}
    for src, (layer, _, refs) in info.items():
        for s in refs:
            dst = owner.get(s)
            if dst is None or dst == src:
                continue
            edges.setdefault(src, {}).setdefault(dst, set()).add(s)
            if info[dst][0] > layer:
                fail("%s (%s/) uses %s of %s (%s/): a lower layer calls a higher one" %
                     (src, LAYERS[layer], s, dst, LAYERS[info[dst][0]]))
    for comp in strongly_connected(info.keys(), edges):
        if len(comp) < 2:
            continue
        links = []
        for a in comp:
            for b in comp:
                if b in edges.get(a, {}):
                    links.append("%s uses %s of %s" % (a, ", ".join(sorted(edges[a][b])[:3]), b))
        fail("files that call each other (%s): %s" % (", ".join(comp), "; ".join(links)))
    if len(errors) == before:
        print("check-layers: %s: %d object files of the product, %d file-to-file uses, no cycle, none upward" %
              (build, len(info), sum(len(v) for v in edges.values())))


def main(argv):
    builds = argv[1:] or ["build"]
    check_includes()
    check_include_circles()
    check_getenv()
    for b in builds:
        check_symbols(b)
    if errors:
        print("check-layers: %d violation(s) of the layer stack (see CONTRIBUTING.md, \"Layers\")" % len(errors))
        return 1
    print("check-layers: ok (includes, include circles, getenv list%s)" % (", symbols" if builds else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
