"""cca's version: the one meson.build's project() and pyproject.toml give (a
test checks the three agree)."""

__version__ = "0.1.0"
