"""The ctypes declarations of mbk/_capi.py against the C headers: every Structure
field for field (name, order, type) and every callback type's signature. A struct
the C side copies whole (mbk_force_add_custom copies mbk_force_ops) with a field
missing at the end makes C read past the Python object."""
import ctypes
import glob
import os
import re

import pytest

from conftest import REPO
from mbk import _capi, mobilizers

HEADERS = sorted(glob.glob(os.path.join(REPO, "include", "mbk", "*.h")))
pytestmark = pytest.mark.skipif(not HEADERS, reason="the C headers (include/mbk) are not here")

# each Structure of _capi.py and the C struct it mirrors
STRUCTS = {"Vec3": "mbk_vec3", "Mat33": "mbk_mat33", "Transform": "mbk_transform",
           "SpatialVec": "mbk_spatial_vec", "MassProps": "mbk_mass_props",
           "Mobilizer": "mbk_mobilizer", "Function": "mbk_function",
           "EventResult": "mbk_event_result", "IntegratorSettings": "mbk_integrator_settings",
           "IntegratorStats": "mbk_integrator_stats", "WitnessInfo": "mbk_witness_info",
           "DaeOptions": "mbk_dae_options", "DaeLayout": "mbk_dae_layout",
           "UrdfOptions": "mbk_urdf_options", "ForceOps": "mbk_force_ops"}
# each callback type and the C function-pointer typedef it mirrors
CALLBACKS = {"REALIZE_FN": "mbk_realize_fn", "WITNESS_FN": "mbk_witness_fn",
             "HANDLER_FN": "mbk_handler_fn", "REPORTER_FN": "mbk_reporter_fn",
             "MEMBER_INIT_FN": "mbk_member_init_fn", "MEMBER_DONE_FN": "mbk_member_done_fn"}
SCALARS = {"double": ctypes.c_double, "int": ctypes.c_int, "bool": ctypes.c_bool,
           "long": ctypes.c_long, "size_t": ctypes.c_size_t}


def _source():
    text = "\n".join(open(h).read() for h in HEADERS)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


SRC = _source() if HEADERS else ""
ENUMS = set(re.findall(r"typedef\s+enum\s+\w+\s*\{[^}]*\}\s*(\w+)\s*;", SRC))


def _struct_fields(name):
    """[(field name, C type, pointer, array dims, fn params or None)] of a C struct."""
    m = re.search(r"typedef\s+struct\s+%s\s*\{(.*?)\}\s*%s\s*;" % (name, name), SRC, re.S)
    assert m, "struct %s not found in include/mbk" % name
    out = []
    for decl in (d.strip() for d in m.group(1).split(";")):
        if not decl:
            continue
        fn = re.match(r"(.*?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)$", decl, re.S)
        if fn:
            out.append((fn.group(2), fn.group(1).strip(), True, (), _params(fn.group(3))))
            continue
        head, *more = decl.split(",")
        first = re.match(r"^(.*?[\s*])(\w+)((?:\[\d+\])*)$", head.strip(), re.S)
        ctype = first.group(1).replace("const", "").replace("*", "").strip()
        rest = [(first.group(1), first.group(2), first.group(3))]
        rest += [re.match(r"^\s*(\**)\s*(\w+)((?:\[\d+\])*)\s*$", m).groups() for m in more]
        for stars, fname, dims in rest:
            out.append((fname, ctype, "*" in stars, tuple(int(d) for d in
                                                           re.findall(r"\d+", dims)), None))
    return out


def _params(text):
    text = text.strip()
    return [] if text in ("", "void") else [p.strip() for p in text.split(",")]


def _typedef_params(name):
    m = re.search(r"typedef\s+([\w\s*]+?)\s*\(\s*\*\s*%s\s*\)\s*\(([^;]*?)\)\s*;" % name, SRC)
    assert m, "typedef %s not found" % name
    return m.group(1).strip(), _params(m.group(2))


def _restype(ctype):
    ctype = ctype.replace("const", "").strip()
    if ctype == "void":
        return None
    if ctype.endswith("*"):
        return ctypes.c_void_p
    return ctypes.c_int if ctype in ENUMS else SCALARS[ctype]


def _check_fn(ctype_obj, ret, params, where):
    assert isinstance(ctype_obj, type) and issubclass(ctype_obj, ctypes._CFuncPtr), \
        "%s: C has a function pointer, ctypes has %r" % (where, ctype_obj)
    assert len(ctype_obj._argtypes_) == len(params), \
        "%s: C takes %d arguments (%s), ctypes %d" % (where, len(params), ", ".join(params),
                                                      len(ctype_obj._argtypes_))
    assert ctype_obj._restype_ is _restype(ret) or (
        _restype(ret) is None and ctype_obj._restype_ is None), "%s: result type" % where


def _expected(ctype, pointer, dims):
    """The ctypes type a C field must have (None: any pointer type)."""
    if pointer:
        return ctypes.c_char_p if ctype == "char" else None
    if ctype in ENUMS:
        t = ctypes.c_int
    elif ctype in SCALARS:
        t = SCALARS[ctype]
    else:
        t = next(getattr(_capi, py) for py, c in STRUCTS.items() if c == ctype)
    for d in reversed(dims):
        t = t * d
    return t


def _same_type(a, b):
    if a is b:
        return True
    if hasattr(a, "_length_") and hasattr(b, "_length_"):
        return a._length_ == b._length_ and _same_type(a._type_, b._type_)
    return False


def _check_struct(py, c_name, prefix=False, names=True):
    fields = _struct_fields(c_name)
    got = py._fields_
    if prefix:
        fields = fields[:len(got)]
    assert len(got) == len(fields), "%s has %d fields, %s has %d: %s" % (
        py.__name__, len(got), c_name, len(fields), [f[0] for f in fields])
    for (pname, ptype), (cname, ctype, pointer, dims, fn) in zip(got, fields):
        where = "%s.%s (C %s.%s)" % (py.__name__, pname, c_name, cname)
        if names:
            assert pname == cname, "%s: the fields differ in name or order" % where
        if fn is not None:
            if issubclass(ptype, ctypes._CFuncPtr):
                _check_fn(ptype, ctype, fn, where)
            else:
                assert ptype is ctypes.c_void_p, where
        elif ctype.endswith("_fn"):         # a typedef of a function pointer
            ret, params = _typedef_params(ctype)
            _check_fn(ptype, ret, params, where)
        elif pointer:
            exp = _expected(ctype, pointer, dims)
            assert (ptype is exp if exp is not None else
                    ptype in (ctypes.c_void_p, ctypes.c_char_p) or
                    issubclass(ptype, ctypes._Pointer)), "%s: C has a pointer, ctypes %r" % (
                        where, ptype)
        else:
            assert _same_type(ptype, _expected(ctype, pointer, dims)), \
                "%s: C type %s%s, ctypes %r" % (where, ctype, list(dims), ptype)


@pytest.mark.parametrize("py,c_name", sorted(STRUCTS.items()))
def test_structure_matches_its_c_struct(py, c_name):
    _check_struct(getattr(_capi, py), c_name)


def test_every_structure_is_checked():
    declared = {n for n, v in vars(_capi).items() if not n.startswith("_") and
                isinstance(v, type) and issubclass(v, ctypes.Structure) and v is not
                ctypes.Structure}
    assert declared == set(STRUCTS), "add the new Structure to STRUCTS: %s" % (
        declared ^ set(STRUCTS))


def test_force_ops_is_whole():
    # mbk_force_add_custom copies sizeof(mbk_force_ops) bytes: calc_jacobian included
    assert _capi.ForceOps._fields_[-1][0] == "calc_jacobian"
    ops = _capi.ForceOps()
    assert not ops.calc_jacobian            # NULL: differentiated by central differences
    assert ctypes.sizeof(ops) == 9 * 8


def test_mobilizer_ops_head_is_a_prefix():
    # mobilizers._MobilizerOpsHead reads the destroy op out of mbk_mobilizer_ops
    head = mobilizers._MobilizerOpsHead
    _check_struct(head, "mbk_mobilizer_ops", prefix=True, names=False)
    assert [f[0] for f in _struct_fields("mbk_mobilizer_ops")][len(head._fields_) - 1] == \
        "destroy"


@pytest.mark.parametrize("py,c_name", sorted(CALLBACKS.items()))
def test_callback_type_matches_its_typedef(py, c_name):
    ret, params = _typedef_params(c_name)
    _check_fn(getattr(_capi, py), ret, params, py)
