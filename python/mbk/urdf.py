"""Building a MultibodySystem from a URDF file or string (include/mbk/urdf.h)."""
import ctypes
import os

from . import _capi
from .errors import error_class, invalid, last_error
from .multibody import MultibodySystem

lib = _capi.lib

__all__ = ["load_urdf", "load_urdf_string", "URDF_OPTIONS"]

#: option names accepted as keywords (the fields of mbk_urdf_options)
URDF_OPTIONS = tuple(n for n, _ in _capi.UrdfOptions._fields_
                     if n not in ("warning", "warning_user", "error", "error_user"))


def _options(opts):
    o = lib.mbk_urdf_options_default()
    keep = []
    for name, value in opts.items():
        if name not in URDF_OPTIONS:
            raise invalid("unknown URDF option %r; the options are %s" % (name, ", ".join(URDF_OPTIONS)))
        if name == "gravity":
            value = _capi.Vec3(*[float(c) for c in value])
        elif name == "source_name":
            value = value.encode()
            keep.append(value)
        setattr(o, name, value)
    return o, keep


def _load(fn, arg, opts):
    o, keep = _options(opts)
    warnings, errors = [], []
    w = _capi.MESSAGE_FN(lambda user, msg: warnings.append(msg.decode("utf-8", "replace")))
    e = _capi.MESSAGE_FN(lambda user, msg: errors.append(msg.decode("utf-8", "replace")))
    o.warning, o.error = w, e
    out = ctypes.c_void_p()
    rc = fn(arg, ctypes.byref(o), ctypes.byref(out))
    if rc < 0:
        exc = error_class(rc)(last_error(), rc)
        exc.errors = errors
        raise exc
    sys = MultibodySystem(_ptr=out.value)
    sys.warnings = warnings
    return sys


def load_urdf(path, **options):
    """A MultibodySystem from a URDF file. Keywords are the fields of
    mbk_urdf_options (floating_base=True, gravity=(0, 0, -9.81), ground_contact=True,
    ...). The System's `warnings` lists the loader's warnings; on failure the
    exception's `errors` lists every problem found, in file order."""
    return _load(lib.mbk_urdf_load, os.fsencode(path), options)


def load_urdf_string(xml, **options):
    """The same from a string holding the XML."""
    return _load(lib.mbk_urdf_load_string, xml.encode() if isinstance(xml, str) else bytes(xml),
                 options)
