#!/usr/bin/env python3
"""Check that a shared library exports exactly the public API.

usage: check_exports.py INCLUDE_DIR LIBRARY [NM]

The public API is every function and variable declared in INCLUDE_DIR/*.h
(static inline functions and typedefs excluded). The exported symbols are the
defined dynamic symbols of LIBRARY (`nm -D --defined-only`). Every declared
name must be exported, nothing else may be, and every exported name must
carry the mbk_ prefix. Prints what differs and exits 1 when anything does,
0 when the two sets agree. Python 3 standard library only.
"""
import glob
import os
import re
import subprocess
import sys

# Names the linker itself defines in every shared object.
LINKER_SYMBOLS = {"_init", "_fini", "_edata", "_end", "__bss_start"}
KEYWORDS = {"__attribute__", "__declspec", "sizeof", "return", "if", "while", "for"}


def strip_source(text):
    """Remove comments, string and character literals, and preprocessor lines;
    drop whole `#ifdef __cplusplus` blocks (extern "C" braces)."""
    text = re.sub(r"\\\n", " ", text)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\])*'", "''", text)
    out, skip = [], 0
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("#"):
            directive = s[1:].strip()
            if skip:
                if re.match(r"if", directive):
                    skip += 1
                elif directive.startswith("endif"):
                    skip -= 1
                elif skip == 1 and re.match(r"(else|elif)", directive):
                    skip = 0  # the non-C++ branch follows
                continue
            if re.match(r"(ifdef\s+__cplusplus|if\s+defined\s*\(?\s*__cplusplus)", directive):
                skip = 1
            continue
        if not skip:
            out.append(line)
    return "\n".join(out)


def tokens(text):
    return re.findall(r"[A-Za-z_]\w*|\d[\w.]*|\S", text)


def statements(toks):
    """Top-level declarations: (tokens, had_body)."""
    stmt, depth_paren, depth_brace, had_body = [], 0, 0, False
    for t in toks:
        stmt.append(t)
        if t == "(":
            depth_paren += 1
        elif t == ")":
            depth_paren -= 1
        elif t == "{":
            depth_brace += 1
            if depth_brace == 1:
                had_body = True
        elif t == "}":
            depth_brace -= 1
            if depth_brace == 0 and depth_paren == 0:
                # a function body ends the statement; a struct/enum body is followed by ';'
                if "typedef" not in stmt and stmt[0] not in ("struct", "enum", "union"):
                    yield stmt, True
                    stmt, had_body = [], False
        elif t == ";" and depth_paren == 0 and depth_brace == 0:
            yield stmt, had_body
            stmt, had_body = [], False
    if any(t.strip() for t in stmt):
        yield stmt, had_body


def split_top(stmt):
    """Split a declaration at top-level commas (int a, b; f(void), g(void);)."""
    parts, cur, depth = [], [], 0
    for t in stmt:
        if t in "([":
            depth += 1
        elif t in ")]":
            depth -= 1
        if t == "," and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return parts


def declared_names(path):
    """(functions, variables) declared in one header."""
    with open(path, encoding="utf-8") as f:
        toks = tokens(strip_source(f.read()))
    funcs, variables = set(), set()
    for stmt, had_body in statements(toks):
        if not stmt or stmt[-1] == ";" and len(stmt) == 1:
            continue
        if stmt[0] == "typedef" or "static" in stmt or had_body:
            continue  # types, static inline helpers, struct/enum definitions
        if stmt[-1] == ";":
            stmt = stmt[:-1]
        is_function = False
        for part in split_top(stmt):
            # first '(' that follows a name other than an attribute keyword
            name = None
            for i, t in enumerate(part):
                if t == "(" and i > 0 and re.match(r"[A-Za-z_]\w*$", part[i - 1]) and part[i - 1] not in KEYWORDS:
                    name = part[i - 1]
                    break
                if t == "(" and (i == 0 or part[i - 1] not in KEYWORDS):
                    break
            if name:
                funcs.add(name)
                is_function = True
                continue
            if is_function:
                continue
            # a variable: the last name before any array bounds or initializer
            idents = [t for t in part if re.match(r"[A-Za-z_]\w*$", t)]
            if "extern" in stmt and idents:
                cut = part.index("[") if "[" in part else len(part)
                names = [t for t in part[:cut] if re.match(r"[A-Za-z_]\w*$", t)]
                variables.add(names[-1])
    return funcs, variables


# Public headers of the optional libraries beside libmbk (ensemble_mpi.h: libmbk_mpi).
OTHER_LIBRARIES = {"ensemble_mpi.h"}

# What a sanitizer build adds to the exports (ASan's one-definition-rule markers, its
# runtime hooks): not part of the API, and not there in a normal build.
SANITIZER_PREFIXES = ("__odr_asan", "__asan", "__tsan", "__ubsan", "__sanitizer")


def exported(library, nm):
    out = subprocess.run([nm, "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            name = fields[-1].split("@")[0]
            if name not in LINKER_SYMBOLS and not name.startswith(SANITIZER_PREFIXES):
                names.add(name)
    return names


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    include_dir, library = argv[1], argv[2]
    nm = argv[3] if len(argv) > 3 else "nm"
    headers = sorted(h for h in glob.glob(os.path.join(include_dir, "*.h"))
                     if os.path.basename(h) not in OTHER_LIBRARIES)
    if not headers:
        print(f"check_exports: no headers in {include_dir}", file=sys.stderr)
        return 2
    declared, where = set(), {}
    for h in headers:
        funcs, variables = declared_names(h)
        for n in funcs | variables:
            where[n] = os.path.basename(h)
        declared |= funcs | variables
    exports = exported(library, nm)
    missing = sorted(declared - exports)
    extra = sorted(exports - declared)
    unprefixed = sorted(n for n in exports if not n.startswith("mbk_"))
    for n in missing:
        print(f"declared in {where[n]} but not exported by {os.path.basename(library)}: {n}")
    for n in extra:
        print(f"exported by {os.path.basename(library)} but declared in no public header: {n}")
    for n in unprefixed:
        print(f"exported without the mbk_ prefix: {n}")
    print(f"{len(declared)} declared, {len(exports)} exported, {len(missing)} missing, {len(extra)} not public")
    return 1 if missing or extra or unprefixed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
