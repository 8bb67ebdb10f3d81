"""Installers of cca into frameworks: ``cca.allocators.torch``,
``cca.allocators.cupy`` and ``cca.allocators.numba``, in the layout of
RMM's ``rmm.allocators``."""
