#!/usr/bin/env python3
"""Check that mbk's folders form layers (docs/architecture.md).

The layers are in scripts/layers.txt: every folder has a rank, and a folder
may use only folders of strictly lower rank (and itself). The check reads

  (a) every #include in every .c/.h of the checked folders, resolves it to a
      file and so to a folder;
  (b) the symbol tables (nm) of the library's and the program's object files
      (BUILD/CMakeFiles/*.dir/<folder>/<file>.c.o): each undefined symbol
      belongs to the folder whose object defines it;

and fails on every use of a folder of higher or equal rank, on a "public"
folder including or calling anything but the public API (include/mbk/), and
on folders that are not in the table.

  check_layers.py --source-dir SRC --build-dir BUILD [--nm NM]  # what ctest -L layers runs
  check_layers.py --source-dir SRC --objects A.o B.o ...
  check_layers.py --source-dir SRC --symbols LISTING   # nm -A -P output, precomputed
  check_layers.py --selftest                           # plants violations, expects them found

Exit status: 0 clean, 1 violations, 2 usage or setup error, 77 nm not found.
Python 3 standard library only.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# ---------------------------------------------------------------- the table


class Table:
    """scripts/layers.txt: `folder rank access` lines and three directives."""

    def __init__(self, text, name="layers.txt"):
        self.rank = {}       # folder -> rank
        self.access = {}     # folder -> "private" | "public"
        self.headers = None  # the public header folder ("include")
        self.search = []     # -I directories of the library build, in order
        self.skip = set()    # folders that are not checked
        self.only = {}       # folder -> the lower folders it may use, when restricted
        for n, line in enumerate(text.splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "headers" and len(words) == 2:
                self.headers = words[1].strip("/")
            elif words[0] == "search":
                self.search = [w.strip("/") for w in words[1:]]
            elif words[0] == "skip":
                self.skip.update(w.strip("/") for w in words[1:])
            elif (len(words) in (3, 4) and words[1].isdigit() and words[2] in ("private", "public")
                  and (len(words) == 3 or words[3].startswith("only="))):
                f = words[0].strip("/")
                self.rank[f] = int(words[1])
                self.access[f] = words[2]
                if len(words) == 4:
                    self.only[f] = {w.strip("/") for w in words[3][5:].split(",") if w}
            else:
                raise ValueError("%s:%d: expected `folder rank private|public [only=F,...]`, "
                                 "`headers DIR`, `search DIR...` or `skip DIR...`: %r"
                                 % (name, n, line))
        if not self.headers:
            raise ValueError("%s: no `headers DIR` line" % name)
        if not self.search:
            self.search = [self.headers]

    def folder_of(self, rel):
        """The table folder (or headers/skip folder) holding source path `rel`,
        or None if it is in none of them."""
        rel = rel.replace(os.sep, "/")
        best = None
        for f in list(self.rank) + [self.headers] + sorted(self.skip):
            if rel == f or rel.startswith(f + "/"):
                if best is None or len(f) > len(best):
                    best = f
        return best


# ------------------------------------------------------------ explanations

def explain(kind, src, dst, table):
    rs, rd = table.rank.get(src), table.rank.get(dst)
    if kind == "upward":
        return ("%s (rank %d) sits below %s (rank %d) and must not reach it: have %s install "
                "a hook (a table of function pointers) that %s calls, or move the code up."
                % (src, rs, dst, rd, dst, src))
    if kind == "peer":
        return ("%s and %s are peers (rank %d) and must not reach each other: move what both "
                "need into a lower layer, or have one install a hook the other calls."
                % (src, dst, rs))
    if kind == "private":
        return ("%s may use only the public API: include \"mbk/...\" headers and call functions "
                "declared in %s/mbk/ (add a public function if none fits), not %s's internals."
                % (src, table.headers, dst))
    if kind == "headers":
        return ("public headers (%s/) may include only each other: move what they need into "
                "a public header." % table.headers)
    if kind == "outside":
        return ("%s is not a layer of the library (skip line of scripts/layers.txt): "
                "nothing in the layers may use it." % dst)
    if kind == "restricted":
        return ("%s may use only %s (scripts/layers.txt), not %s: have %s install a hook, "
                "or move the code." % (src, ", ".join(sorted(table.only[src])), dst, dst))
    if kind == "unresolved":
        return ("a quoted #include must name a file of the tree (next to the includer, or in "
                "%s): fix the path, or use <...> for a system header."
                % " or ".join(d + "/" for d in table.search))
    if kind == "unknown":
        return ("every folder with C sources needs a rank in scripts/layers.txt (or a place on "
                "its skip line): add it there, and to docs/architecture.md.")
    raise AssertionError(kind)


def classify(src, dst, table, by_rank_only=False):
    """The kind of violation when folder src uses folder dst, or None if
    allowed. by_rank_only: leave the public-API rule to the caller."""
    if dst == src:
        return None
    if src == table.headers:
        return "headers"
    if dst == table.headers:
        return None
    if dst not in table.rank:
        return "outside"
    rs, rd = table.rank[src], table.rank[dst]
    if rd > rs:
        return "upward"
    if rd == rs:
        return "peer"
    if src in table.only and dst not in table.only[src]:
        return "restricted"
    if table.access[src] == "public" and not by_rank_only:
        return "private"
    return None


# ------------------------------------------------------------- (a) includes

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^">]+)[">]', re.M)


def strip_comments(text):
    """Blank out C comments (keeping newlines, so line numbers hold) and
    leave string and character literals alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def source_files(root, table, skip_dirs):
    """Every .c/.h under root outside hidden, build and skip folders."""
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            rel = d if rel_dir == "." else rel_dir + "/" + d
            if (d.startswith(".") or rel in table.skip or os.path.realpath(full) in skip_dirs
                    or os.path.exists(os.path.join(full, "CMakeCache.txt"))):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")


def resolve(root, table, rel, quote, name):
    """The source-relative path an #include names, or None."""
    cands = ([os.path.dirname(rel)] if quote == '"' else []) + table.search
    for d in cands:
        p = os.path.normpath(os.path.join(root, d, name))
        if os.path.isfile(p):
            r = os.path.relpath(p, root).replace(os.sep, "/")
            if not r.startswith("../"):
                return r
    return None


def check_includes(root, table, skip_dirs=()):
    """[(kind, from, to, item)] for every #include that breaks the layers,
    and the unknown folders."""
    found, unknown = [], {}
    for rel in source_files(root, table, {os.path.realpath(d) for d in skip_dirs}):
        src = table.folder_of(rel)
        if src is None:
            unknown.setdefault(os.path.dirname(rel) or ".", rel)
            continue
        if src in table.skip:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            text = strip_comments(fh.read())
        for m in INCLUDE_RE.finditer(text):
            quote, name = m.group(1), m.group(2).strip()
            line = text.count("\n", 0, m.start()) + 1
            item = '%s:%d "%s"' % (rel, line, name)
            target = resolve(root, table, rel, quote, name)
            if target is None:
                # system headers, and public headers generated into the build
                if quote == "<" or name.startswith("mbk/"):
                    continue
                found.append(("unresolved", src, "?", item))
                continue
            dst = table.folder_of(target)
            kind = classify(src, dst if dst else "?", table)
            if kind:
                found.append((kind, src, dst or os.path.dirname(target), item))
    return found, unknown


# --------------------------------------------------------------- (b) symbols

def object_source(path):
    """Object file path -> the source path it was compiled from, relative to
    the source dir: .../CMakeFiles/mbk_objects.dir/src/state.c.o -> src/state.c.
    A path without a `*.dir/` part is taken as source-relative already."""
    p = path.replace(os.sep, "/")
    m = re.search(r"(?:^|/)CMakeFiles/[^/]+\.dir/(.*)$", p) or re.search(r"(?:^|/)[^/]+\.dir/(.*)$", p)
    if m:
        p = m.group(1)
    for ext in (".o", ".obj"):
        if p.endswith(ext):
            return p[: -len(ext)]
    return p


def parse_symbols(listing):
    """`nm -A -P` output -> {object: ([defined globals], [undefined])}."""
    objs = {}
    for line in listing.splitlines():
        if ": " not in line:
            continue
        obj, rest = line.split(": ", 1)
        fields = rest.split()
        if len(fields) < 2:
            continue
        sym, typ = fields[0], fields[1]
        d, u = objs.setdefault(obj.strip(), ([], []))
        if typ in ("U", "w", "v"):
            u.append(sym)
        elif typ.isupper() or typ == "u":
            d.append(sym)
    return objs


def public_names(root, table):
    """Every identifier the public headers declare (comments stripped)."""
    names = set()
    for h in glob.glob(os.path.join(root, table.headers, "**", "*.h"), recursive=True):
        with open(h, encoding="utf-8", errors="replace") as fh:
            names.update(re.findall(r"[A-Za-z_]\w*", strip_comments(fh.read())))
    return names


def check_symbols(listing, table, public):
    """[(kind, from, to, symbol)] for every call that breaks the layers, and
    the unknown folders."""
    objs = parse_symbols(listing)
    where, unknown = {}, {}
    folder = {}
    for obj in objs:
        src_rel = object_source(obj)
        f = table.folder_of(src_rel)
        if f is None or f == table.headers:
            unknown.setdefault(os.path.dirname(src_rel) or ".", obj)
        folder[obj] = f if f in table.rank else None
    for obj, (defined, _) in objs.items():
        if folder[obj]:
            for s in defined:
                where.setdefault(s, folder[obj])
    found = []
    for obj, (_, undefined) in sorted(objs.items()):
        src = folder[obj]
        if not src:
            continue
        for s in undefined:
            dst = where.get(s)
            if dst is None:
                continue  # the C library, LAPACK, SUNDIALS, expat ...
            kind = classify(src, dst, table, by_rank_only=True)
            if kind is None and table.access[src] == "public" and dst != src and s not in public:
                kind = "private"
            if kind:
                found.append((kind, src, dst, s))
    return found, unknown


def build_objects(root, build):
    """The object files of the top-level targets (the library, the program),
    leaving out stale ones whose source file is gone (moved or deleted)."""
    objs = sorted(glob.glob(os.path.join(build, "CMakeFiles", "*.dir", "**", "*.o"), recursive=True))
    objs = [o for o in objs if os.path.isfile(os.path.join(root, object_source(o)))]
    if not objs:
        raise FileNotFoundError("no object files under %s/CMakeFiles/*.dir: build first "
                                "(cmake --build %s)" % (build, build))
    return objs


def run_nm(nm, objs, build):
    out = []
    for i in range(0, len(objs), 200):
        r = subprocess.run([nm, "-A", "-P"] + objs[i:i + 200], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed: %s" % (nm, r.stderr.strip()))
        out.append(r.stdout)
    listing = "".join(out)
    # paths relative to the build dir keep the listing short
    return listing.replace(os.path.join(build, ""), "") if build else listing


# ------------------------------------------------------------------ report

def report(found, unknown, table, what, out):
    groups = {}
    for kind, src, dst, item in found:
        groups.setdefault((src, dst, kind), set()).add(item)
    for folder_name, example in sorted(unknown.items()):
        print("unknown folder %s (%s): %s" % (folder_name, example, explain("unknown", "", "", table)),
              file=out)
    for (src, dst, kind), items in sorted(groups.items()):
        print("%s -> %s: %s" % (src, dst, ", ".join(sorted(items))), file=out)
        print("    %s (%s)" % (explain(kind, src, dst, table), what), file=out)
    return len(groups) + len(unknown)


def check(root, table, listing, skip_dirs=(), out=sys.stdout):
    """Run both checks; print the violations; return their number."""
    inc, unk_a = check_includes(root, table, skip_dirs)
    n = report(inc, unk_a, table, "#include", out)
    if listing is not None:
        sym, unk_b = check_symbols(listing, table, public_names(root, table))
        n += report(sym, {k: v for k, v in unk_b.items() if k not in unk_a}, table, "symbols", out)
    return n


# ---------------------------------------------------------------- selftest

PLANT_TABLE = """
src 0 private
subsystems/matter 1 private
subsystems/constraints 2 private
subsystems/forces 2 private
subsystems/events 2 private only=src
integrators 4 public
apps 6 public
headers include
search include src
skip tests
"""

PLANT_FILES = {
    "include/mbk/system.h": '#include "mbk/state.h"\nint mbk_system_realize(void);\n',
    "include/mbk/state.h": '/* mbk__state_alloc is not public */\n#include "../../src/state_impl.h"\n',
    "src/state_impl.h": "int mbk__state_alloc(void);\n",
    "src/system.c": '#include "mbk/system.h"\n#include "state_impl.h"\n#include <stdio.h>\n',
    # upward, with a commented-out peer include that must not count
    "src/urdf.c": '#include "../subsystems/matter/matter_impl.h"\n'
                  '/* #include "../subsystems/forces/forces_impl.h" */\n',
    "subsystems/matter/matter_impl.h": '#include "state_impl.h"\n',
    "subsystems/matter/matter.c": '#include "matter_impl.h"\n#include "mbk/system.h"\n',
    "subsystems/forces/forces_impl.h": '#include "../matter/matter_impl.h"\n',
    # peer include and an include that names no file
    "subsystems/constraints/solve.c": '#include "../matter/matter_impl.h"\n'
                                      '#include "../forces/forces_impl.h"\n#include "nowhere.h"\n',
    # own header fine, core's private header not
    "integrators/integrator_impl.h": '#include "mbk/system.h"\n',
    "integrators/rk.c": '#include "integrator_impl.h"\n#include "system_impl.h"\n',
    "src/system_impl.h": "\n",
    # a folder restricted to core reaching matter
    "subsystems/events/events.c": '#include "state_impl.h"\n#include "../matter/matter_impl.h"\n',
    "apps/mbk.c": '#include "mbk/system.h"\n#include <mbk/state.h>\n',
    "tests/test_x.c": '#include "../src/system_impl.h"\n#include "../apps/app.h"\n',
    "newdir/x.c": '#include "mbk/system.h"\n',
}

PLANT_SYMBOLS = """\
build/CMakeFiles/mbk_objects.dir/src/system.c.o: mbk_system_realize T 0 10
build/CMakeFiles/mbk_objects.dir/src/system.c.o: mbk__state_alloc U
build/CMakeFiles/mbk_objects.dir/src/system.c.o: helper t 20 5
build/CMakeFiles/mbk_objects.dir/src/state.c.o: mbk__state_alloc T 0 10
build/CMakeFiles/mbk_objects.dir/src/state.c.o: memcpy U
build/CMakeFiles/mbk_objects.dir/src/urdf.c.o: mbk_matter_add_body U
build/CMakeFiles/mbk_objects.dir/src/urdf.c.o: helper t 0 5
build/CMakeFiles/mbk_objects.dir/subsystems/matter/matter.c.o: mbk_matter_add_body T 0 10
build/CMakeFiles/mbk_objects.dir/subsystems/matter/matter.c.o: mbk__constraints_solve U
build/CMakeFiles/mbk_objects.dir/subsystems/matter/matter.c.o: mbk__state_alloc U
build/CMakeFiles/mbk_objects.dir/subsystems/constraints/solve.c.o: mbk__constraints_solve T 0 10
build/CMakeFiles/mbk_objects.dir/subsystems/constraints/solve.c.o: mbk__forces_thing U
build/CMakeFiles/mbk_objects.dir/subsystems/constraints/solve.c.o: mbk_matter_add_body U
build/CMakeFiles/mbk_objects.dir/subsystems/forces/forces.c.o: mbk__forces_thing T 0 10
build/CMakeFiles/mbk_objects.dir/subsystems/forces/forces.c.o: mbk_matter_add_body U
build/CMakeFiles/mbk_objects.dir/subsystems/events/events.c.o: mbk__state_alloc U
build/CMakeFiles/mbk_objects.dir/subsystems/events/events.c.o: mbk_matter_add_body U
build/CMakeFiles/mbk_objects.dir/integrators/rk.c.o: mbk_system_realize U
build/CMakeFiles/mbk_objects.dir/integrators/rk.c.o: mbk__state_alloc U
build/CMakeFiles/mbk_objects.dir/integrators/rk.c.o: memcpy U
build/CMakeFiles/mbk_objects.dir/integrators/rk.c.o: mbk__rk_step T 0 10
build/CMakeFiles/mbk_app.dir/apps/mbk.c.o: main T 0 10
build/CMakeFiles/mbk_app.dir/apps/mbk.c.o: mbk_system_realize U
build/CMakeFiles/mbk_app.dir/apps/mbk.c.o: mbk__rk_step U
build/CMakeFiles/mbk_objects.dir/newdir/x.c.o: mbk__new T 0 10
"""

PLANT_EXPECT_INCLUDES = {
    ("headers", "include", "src", 'include/mbk/state.h:2 "../../src/state_impl.h"'),
    ("upward", "src", "subsystems/matter", 'src/urdf.c:1 "../subsystems/matter/matter_impl.h"'),
    ("peer", "subsystems/constraints", "subsystems/forces",
     'subsystems/constraints/solve.c:2 "../forces/forces_impl.h"'),
    ("unresolved", "subsystems/constraints", "?", 'subsystems/constraints/solve.c:3 "nowhere.h"'),
    ("private", "integrators", "src", 'integrators/rk.c:2 "system_impl.h"'),
    ("restricted", "subsystems/events", "subsystems/matter",
     'subsystems/events/events.c:2 "../matter/matter_impl.h"'),
}
PLANT_EXPECT_SYMBOLS = {
    ("upward", "src", "subsystems/matter", "mbk_matter_add_body"),
    ("upward", "subsystems/matter", "subsystems/constraints", "mbk__constraints_solve"),
    ("peer", "subsystems/constraints", "subsystems/forces", "mbk__forces_thing"),
    ("private", "integrators", "src", "mbk__state_alloc"),
    ("private", "apps", "integrators", "mbk__rk_step"),
    ("restricted", "subsystems/events", "subsystems/matter", "mbk_matter_add_body"),
}


def selftest():
    """Plant a tree with known violations; the checker must report exactly
    those, and fail on them from the command line."""
    failures = []
    table = Table(PLANT_TABLE, "planted table")
    tmp = tempfile.mkdtemp(prefix="mbk-layers-selftest-")
    try:
        for rel, text in PLANT_FILES.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as fh:
                fh.write(text)
        inc, unk = check_includes(tmp, table)
        if set(inc) != PLANT_EXPECT_INCLUDES:
            failures.append("includes: missed %s; spurious %s"
                            % (sorted(PLANT_EXPECT_INCLUDES - set(inc)), sorted(set(inc) - PLANT_EXPECT_INCLUDES)))
        if set(unk) != {"newdir"}:
            failures.append("includes: unknown folders %s, expected ['newdir']" % sorted(unk))
        sym, unk = check_symbols(PLANT_SYMBOLS, table, public_names(tmp, table))
        if set(sym) != PLANT_EXPECT_SYMBOLS:
            failures.append("symbols: missed %s; spurious %s"
                            % (sorted(PLANT_EXPECT_SYMBOLS - set(sym)), sorted(set(sym) - PLANT_EXPECT_SYMBOLS)))
        if set(unk) != {"newdir"}:
            failures.append("symbols: unknown folders %s, expected ['newdir']" % sorted(unk))

        # the command line, end to end, on the planted tree
        with open(os.path.join(tmp, "layers.txt"), "w") as fh:
            fh.write(PLANT_TABLE)
        with open(os.path.join(tmp, "symbols.txt"), "w") as fh:
            fh.write(PLANT_SYMBOLS)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--source-dir", tmp,
                            "--table", os.path.join(tmp, "layers.txt"),
                            "--symbols", os.path.join(tmp, "symbols.txt")],
                           capture_output=True, text=True)
        print(r.stdout, end="")
        if r.returncode != 1:
            failures.append("command line: exit status %d on a tree with violations, expected 1"
                            % r.returncode)
        for want in ("src -> subsystems/matter: mbk_matter_add_body",
                     "subsystems/constraints -> subsystems/forces: mbk__forces_thing",
                     "unknown folder newdir"):
            if want not in r.stdout:
                failures.append("command line: no line %r in the report" % want)

        # and a tree without violations passes
        for rel in ("src/urdf.c", "subsystems/constraints/solve.c", "integrators/rk.c", "newdir/x.c",
                    "include/mbk/state.h", "subsystems/events/events.c"):
            os.remove(os.path.join(tmp, rel))
        clean = "".join(l + "\n" for l in PLANT_SYMBOLS.splitlines()
                        if not re.search(r"urdf|solve|rk\.c|newdir|mbk__rk_step|events\.c", l))
        with open(os.path.join(tmp, "symbols.txt"), "w") as fh:
            fh.write(clean)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--source-dir", tmp,
                            "--table", os.path.join(tmp, "layers.txt"),
                            "--symbols", os.path.join(tmp, "symbols.txt")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            failures.append("command line: exit status %d on a clean tree, expected 0:\n%s"
                            % (r.returncode, r.stdout + r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("SELFTEST FAILED: " + f)
    print("selftest: %s" % ("failed" if failures else "the planted violations were all found, and nothing else"))
    return 1 if failures else 0


# -------------------------------------------------------------------- main

def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source-dir", default=os.path.dirname(here))
    ap.add_argument("--build-dir", help="run nm on the object files under BUILD/CMakeFiles/*.dir")
    ap.add_argument("--objects", nargs="+", metavar="OBJ",
                    help="run nm on these object files instead of those under --build-dir")
    ap.add_argument("--symbols", help="a precomputed `nm -A -P` listing instead of running nm")
    ap.add_argument("--table", help="the layer table (default: scripts/layers.txt of the source dir)")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--dump-symbols", metavar="FILE", help="write the nm listing used to FILE")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest()

    root = os.path.abspath(args.source_dir)
    table_path = args.table or os.path.join(root, "scripts", "layers.txt")
    try:
        with open(table_path) as fh:
            table = Table(fh.read(), table_path)
    except (OSError, ValueError) as e:
        print("check_layers: %s" % e, file=sys.stderr)
        return 2

    listing = None
    nobj = None
    skip_dirs = [args.build_dir] if args.build_dir else []
    try:
        if args.symbols:
            with open(args.symbols) as fh:
                listing = fh.read()
        elif args.build_dir or args.objects:
            build = os.path.abspath(args.build_dir) if args.build_dir else None
            if not args.nm or not shutil.which(args.nm):
                print("check_layers: nm (%r) not found: skipping" % args.nm)
                return SKIP
            objs = args.objects or build_objects(root, build)
            listing = run_nm(args.nm, objs, build)
            nobj = len(objs)
    except (OSError, RuntimeError) as e:
        print("check_layers: %s" % e, file=sys.stderr)
        return 2
    if listing is not None and args.dump_symbols:
        with open(args.dump_symbols, "w") as fh:
            fh.write(listing)

    n = check(root, table, listing, skip_dirs)
    what = "#includes" + (" and symbols" if listing is not None else ", no symbols: pass --build-dir")
    if nobj is not None:
        what += " of %d object files" % nobj
    if n:
        print("layering check: %d violation%s (%s; the layers are in %s)"
              % (n, "" if n == 1 else "s", what, os.path.relpath(table_path, root)))
        return 1
    print("layering check: clean (%s)" % what)
    return 0


if __name__ == "__main__":
    sys.exit(main())
