#!/usr/bin/python3
"""The layering of docs/architecture.md, checked against the includes (issue #35 item 2).

docs/architecture.md's "Layers" table says, for each top-level directory, which directories it
uses ("uses" column: a comma-separated list of directories, "—" for none, "everything" for
all). This check reads that table, scans every .h, .cuh, .cpp and .cu file under each listed
directory for `#include "dplab/<dir>/..."` (or <dplab/<dir>/...>), and fails on each include of
a directory the including one does not list, naming the file, the line and the include. A
directory may always include itself. A name in the "uses" column that is not a row of the table
is an error too (a typo would otherwise allow nothing, silently).

Usage: layering_check.py SOURCE_DIR     check the tree (after the self-test below)
       layering_check.py --self-test    only the self-test: a fake tree with one violating
                                        include must fail, naming it
"""
import os
import re
import subprocess
import sys
import tempfile

DOC = os.path.join("docs", "architecture.md")
SUFFIXES = (".h", ".cuh", ".cpp", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"]dplab/([^/">]+)/[^">]*[">])')
NONE = {"—", "-", ""}
ALL = "everything"


class DocError(Exception):
    pass


def read_layers(doc_path):
    """{directory: set of directories it uses, or None for everything} from the Layers table."""
    with open(doc_path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "## Layers")
    except StopIteration:
        raise DocError(f"{doc_path}: no '## Layers' section")
    rows = []
    header = None
    for no in range(start + 1, len(lines)):
        line = lines[no].strip()
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if rows or header:
                break  # the end of the first table
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if set(line) <= set("|-: "):
            continue  # the separator row
        rows.append((no + 1, cells))
    if not header or "directory" not in header or "uses" not in header:
        raise DocError(f"{doc_path}: the Layers table has no 'directory' and 'uses' columns")
    # "holds" cells may contain "|" inside code spans (`optim = sgd | lars`): take the directory
    # from the first cell and the uses from the last.
    layers = {}
    for no, cells in rows:
        d = cells[0].strip("`").rstrip("/")
        if not re.fullmatch(r"[A-Za-z0-9_]+", d):
            raise DocError(f"{doc_path}:{no}: not a directory: {cells[0]}")
        uses = cells[-1].strip()
        if uses.lower() == ALL:
            layers[d] = None
        elif uses in NONE:
            layers[d] = set()
        else:
            layers[d] = {u.strip().strip("`").rstrip("/") for u in uses.split(",")}
    for d, uses in layers.items():
        for u in sorted(uses or ()):
            if u not in layers:
                raise DocError(f"{doc_path}: `{d}/` uses '{u}', which is no row of the table")
    if not layers:
        raise DocError(f"{doc_path}: the Layers table has no rows")
    return layers


def violations(root, layers):
    found = []
    for d in sorted(layers):
        allowed = layers[d]
        top = os.path.join(root, d)
        if not os.path.isdir(top):
            found.append(f"{DOC}: `{d}/` is in the Layers table but no directory")
            continue
        for dirpath, dirnames, files in os.walk(top):
            dirnames.sort()
            for f in sorted(files):
                if not f.endswith(SUFFIXES):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for no, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(2)
                        if target == d or allowed is None or target in allowed:
                            continue
                        uses = ", ".join(sorted(allowed)) or "nothing"
                        found.append(f"{rel}:{no}: includes {m.group(1)}: `{d}/` uses only "
                                     f"{uses} (docs/architecture.md, Layers)")
    return found


def check(root):
    """Prints the violations of the tree at root; returns the exit status."""
    try:
        layers = read_layers(os.path.join(root, DOC))
    except (OSError, DocError) as e:
        print(f"layering_check: {e}")
        return 1
    found = violations(root, layers)
    for v in found:
        print(v)
    print(f"layering_check: {len(found)} include(s) against the layering of {DOC} in "
          f"{len(layers)} directories ({', '.join(sorted(layers))})")
    return 1 if found else 0


FAKE_DOC = """# Architecture

## Layers

| directory | holds | uses |
|---|---|---|
| `core/` | tensors | — |
| `layers/` | modules (`a | b` in a code span) | core |
| `models/` | models | layers, core |
| `tools/` | executables | everything |

## Next section

| directory | holds | uses |
|---|---|---|
| `ignored/` | not the Layers table | — |
"""

FAKE_FILES = {
    "core/tensor.h": '#pragma once\n#include "dplab/core/shape.h"\n',
    "core/shape.h": "#pragma once\n",
    "layers/conv.cpp": ('#include "dplab/layers/conv.h"\n#include "dplab/core/tensor.h"\n'
                        '// #include "dplab/models/resnet.h" in a comment is no include\n'
                        '#include "dplab/models/resnet.h"\n'),
    "layers/conv.h": '#pragma once\n#include <dplab/core/tensor.h>\n',
    "models/resnet.h": ('#pragma once\n#include "dplab/layers/conv.h"\n'
                        '#include "dplab/core/shape.h"\n'),
    "tools/main.cpp": '#include "dplab/models/resnet.h"\n#include "dplab/tools/x.h"\n',
    "tools/x.h": "#pragma once\n",
}


def self_test():
    """A fake tree with one violating include (layers/conv.cpp:4) must fail, naming it."""
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "docs"))
        with open(os.path.join(t, DOC), "w", encoding="utf-8") as f:
            f.write(FAKE_DOC)
        for rel, text in FAKE_FILES.items():
            os.makedirs(os.path.dirname(os.path.join(t, rel)), exist_ok=True)
            with open(os.path.join(t, rel), "w", encoding="utf-8") as f:
                f.write(text)
        # Through the command line, as ctest runs it (the exit status included).
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--no-self-test", t],
                           capture_output=True, text=True)
        want = 'layers/conv.cpp:4: includes "dplab/models/resnet.h": `layers/` uses only core'
        ok = (r.returncode == 1 and want in r.stdout
              and "layering_check: 1 include(s)" in r.stdout)
        if not ok:
            print(f"layering_check: self-test failed: expected exit status 1 and\n  {want}\n"
                  f"got exit status {r.returncode}:\n{r.stdout}{r.stderr}")
            return False
        # A "uses" name that is no row of the table is an error.
        with open(os.path.join(t, DOC), "w", encoding="utf-8") as f:
            f.write(FAKE_DOC.replace("| layers, core |", "| layer, core |"))
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--no-self-test", t],
                           capture_output=True, text=True)
        if r.returncode != 1 or "uses 'layer', which is no row" not in r.stdout:
            print(f"layering_check: self-test failed: an unknown 'uses' name was taken "
                  f"(exit status {r.returncode}):\n{r.stdout}{r.stderr}")
            return False
    print("layering_check: self-test passed (a fake tree's violating include is reported)")
    return True


def main(argv):
    args = argv[1:]
    if args == ["--self-test"]:
        return 0 if self_test() else 1
    run_self_test = True
    if args and args[0] == "--no-self-test":
        run_self_test, args = False, args[1:]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    if run_self_test and not self_test():
        return 1
    return check(args[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
