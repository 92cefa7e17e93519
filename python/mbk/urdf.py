"""Building a MultibodySystem from a URDF file or string (include/mbk/urdf.h)."""
import ctypes
import os

import numpy as np

from . import _arrays, _capi
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
        value = _option(name, value)
        if name == "source_name":
            keep.append(value)
        # ctypes refuses a value of the wrong type (a str for a double, ...): say which option
        try:
            setattr(o, name, value)
        except (TypeError, ValueError) as e:
            raise invalid("URDF option %s=%r: %s" % (name, value, e)) from None
    return o, keep


def _option(name, value):
    """One option's value as the C field wants it, or refused with what to give."""
    if name == "gravity":
        return _arrays.vec3(value, "URDF option gravity")
    if name == "source_name":
        # a name for messages: str or bytes (None: the loader's default, "<string>")
        if isinstance(value, str):
            return value.encode()
        if value is None or isinstance(value, bytes):
            return value
        raise invalid("URDF option source_name must be a str or bytes, got %r" % (value,))
    if name == "max_bytes":
        # a size_t: a negative int would wrap around to about 2^64
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise invalid("URDF option max_bytes must be an int >= 0 (bytes), got %r" % (value,))
        return int(value)
    return value


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
