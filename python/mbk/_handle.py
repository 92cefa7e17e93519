"""The lifetime of a Python object that owns one C object (a System, an
Integrator, an Ensemble): destroyed once, by close(), at the end of a with
block, or when the object is collected. Such an object cannot be copied or
pickled: a copy would own the same C object and destroy it a second time."""
from .errors import invalid


class Handle:
    """Base of the owning classes. A subclass sets self._ptr, defines close()
    (which destroys the C object and sets _ptr to None), names itself in
    _what for messages and says in _instead what to use rather than a copy."""

    _what = "object"
    _instead = "make a new one"

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _p(self):
        """The C pointer; a closed object is refused with a clear error."""
        if not self._ptr:
            raise invalid("this %s was closed" % self._what)
        return self._ptr

    # ---- no copies: the C object has one owner ---------------------------------
    def _no_copy(self, how):
        raise TypeError("an mbk.%s cannot be %s (it owns a C object that would then be "
                        "destroyed twice): %s" % (self._what, how, self._instead))

    def __copy__(self):
        self._no_copy("copied")

    def __deepcopy__(self, memo):
        self._no_copy("copied")

    def __reduce_ex__(self, protocol):
        self._no_copy("pickled")
