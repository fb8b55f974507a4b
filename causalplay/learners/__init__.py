"""The rational learners behind :func:`causalplay.infer`: exact beliefs, or SVI on the Pyro world models
(:mod:`causalplay.models`) for worlds too large to enumerate."""
