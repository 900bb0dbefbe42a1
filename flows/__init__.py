"""Prefect flows: one thin module per pipeline stage (`python -m flows.<stage> ...`).

Importing the package pins the numeric path of the stage process first (tasks.core.numerics),
before a stage module loads torch or numpy, in the mode params.yaml's `numerics` names:
portable (the same bits on any x86-64 host with AVX2) or native (the host's fastest kernels).
"""

from tasks.core.numerics import pin

pin()
