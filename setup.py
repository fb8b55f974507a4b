"""The one compiled part of causalplay: the physics rollout loop (envs/physics_rollout.c).

Optional: where no C compiler is found the build goes on without it and ``causalplay.envs.physics_sim`` runs the
same rollouts in its Python loop (slower). ``-ffp-contract=off`` keeps the compiler from fusing multiply-adds, so
the loop's arithmetic rounds as Python's does.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("causalplay.envs.physics_rollout", ["envs/physics_rollout.c"], optional=True,
                             extra_compile_args=["-O2", "-ffp-contract=off"])])
