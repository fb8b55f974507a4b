"""Study designs as data, what fitted models of people predict under them, and which design tells models apart.

::

    from causalplay.design import Design, nexiom_designs, predict, utility
    fits = {m: causalplay.fit(people, m, method="svi") for m in ("positive", "random", "eig_sweep")}
    p = predict(fits["eig_sweep"], nexiom_designs(), draws=200)          # [designs, draws, 2**N + 1]
    u = utility(fits, candidates, choices=1)                              # nats per design
    u.to_frame(candidates).head()

* :class:`Design` (defined in :mod:`causalplay.core.design`, so that every layer can use it): the world, the
  demonstrations shown first, a told blicket count, a test budget;
* :func:`predict`, :func:`utility` (:mod:`.predict`): first-choice probabilities per new participant, and the mutual
  information between the model identity and a participant's first ``K`` choices (adaptive design optimisation);
* :mod:`.ado`: sequential adaptive design across a study's participants (the posterior over models after each
  finished participant, the next participant's design), its state a JSON-ready dict;
* :func:`designs_of`, :func:`nexiom_designs`, :func:`design_space` (:mod:`.data`): the designs in trial data, in the
  shipped study, and every design of a stated space;
* :func:`score_people`, :func:`score_histories`, :func:`record_nexiom`, :func:`summarise` (:mod:`.trajectories`): any
  play of the task (people, transcripts, agents) scored against the ideal learner.
"""

from ..core.design import Design
from . import ado
from .data import design_space, designs_of, nexiom_designs
from .predict import (
    Utility,
    information,
    population_draws,
    predict,
    sampled_information,
    sequence_log_probs,
    sequence_samples,
    utility,
)
from .trajectories import EpisodeRecorder, record_nexiom, score_histories, score_people, summarise

__all__ = ["Design", "predict", "utility", "Utility", "population_draws", "sequence_log_probs", "information",
           "sequence_samples", "sampled_information", "ado",
           "designs_of", "nexiom_designs",
           "design_space", "score_histories", "score_people", "record_nexiom", "EpisodeRecorder", "summarise"]
