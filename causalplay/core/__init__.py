"""The core: the math every other layer stands on (rules, priors, WorldSpec and HypothesisSpace, histories,
the exact engine, EIG, beliefs, overhypotheses, the causal-DAG structures and posterior, metrics, the Pyro drivers).

Imports nothing of causalplay outside this folder."""
