"""Installers of cca into frameworks: ``cca.allocators.torch`` (CuPy and
Numba follow in the same layout as RMM's ``rmm.allocators``)."""
