"""timewarp: run unmodified GPU programs on a machine with no GPU and predict how long they take on real ones.

Subpackages: timewarp.predictors (GPU catalog, kernel-duration models), timewarp.integrations (the `timewarp`
command, framework integrations), timewarp.coordinator (the virtual-time service). The fake CUDA libraries
are installed in timewarp/_lib.
"""
__version__ = "0.1.0"
