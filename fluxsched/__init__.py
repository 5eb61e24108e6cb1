"""fluxlite as the scheduler of a real Flux instance (RFC 27), in Fluxion's place.

* :mod:`fluxsched.core`   the decisions (engine + queue), without Flux
* :mod:`fluxsched.rset`   R (RFC 20) to and from the engine's graph
* :mod:`fluxsched.config` the module's settings
* :mod:`fluxsched.module` the ``sched-fluxlite`` broker module (imports flux-core's bindings)
* :mod:`fluxsched.cli`    ``fluxlite-flux``: the loader for the broker's Python, the benchmark

Only :mod:`fluxsched.module` imports ``flux``; nothing in ``fluxlite/`` does.
"""
