"""Prefect flows: one thin module per pipeline stage (`python -m flows.<stage> ...`).

Importing the package pins the numeric path of the stage process first (tasks.core.numerics):
the same bits on any x86-64 host with AVX2, before a stage module loads torch or numpy.
"""

from tasks.core.numerics import pin

pin()
