"""Enumerations of the C API as IntEnums (the values are the C values)."""
import enum
import operator

from .errors import invalid

__all__ = ["Stage", "Direction", "CvodeMethod", "DaeForm"]


class Stage(enum.IntEnum):
    """mbk_stage: Topology..Report (Infinity marks lazy cache entries)."""
    EMPTY = 0
    TOPOLOGY = 1
    MODEL = 2
    INSTANCE = 3
    TIME = 4
    POSITION = 5
    VELOCITY = 6
    DYNAMICS = 7
    ACCELERATION = 8
    REPORT = 9
    INFINITY = 10

    def __str__(self):
        return self.name.capitalize()


class Direction(enum.IntEnum):
    """mbk_event_direction: the witness crossings that count."""
    RISING = 1
    FALLING = 2
    ANY = 3


class CvodeMethod(enum.IntEnum):
    BDF = 0
    ADAMS = 1


class DaeForm(enum.IntEnum):
    """mbk_dae_form (include/mbk/external.h)."""
    INDEX1 = 1
    GGL = 2
    INDEX3 = 3


def stage_arg(stage):
    """A Stage from a Stage, an int or a name ("position"); anything else (5.5, None)
    is refused rather than truncated."""
    if isinstance(stage, str):
        try:
            return Stage[stage.upper()]
        except KeyError:
            raise invalid("unknown stage %r; the stages are %s" % (
                stage, ", ".join(s.name.lower() for s in Stage))) from None
    try:
        return operator.index(stage)
    except TypeError:
        raise invalid("stage must be an mbk.Stage, an int or a stage name such as "
                      "\"position\", got %r" % (stage,)) from None
