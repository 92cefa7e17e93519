"""The lifetime of a Python object that owns one C object (a System, an
Integrator, an Ensemble): destroyed once, by close(), at the end of a with
block, or when the object is collected."""
from .errors import invalid


class Handle:
    """Base of the owning classes. A subclass sets self._ptr, defines close()
    (which destroys the C object and sets _ptr to None) and names itself in
    _what for messages."""

    _what = "object"

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
