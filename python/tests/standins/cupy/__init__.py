"""CuPy stand-in (tests only): see ../README."""
from . import cuda  # noqa: F401
