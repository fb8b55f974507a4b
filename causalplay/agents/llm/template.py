"""The dialogue a language-model agent plays: IVRE's appendix-D template, in one place, swappable.

Source of the wording: the IVRE paper's appendix D and the authors' public notebook that produced its GPT
rows (``src/baselines/gpt_baselines.ipynb`` of the IVRE repository). One episode is one chat (a growing list
of OpenAI-style messages, every task text a ``user`` message, every model answer an ``assistant`` message)::

    user       There are nine objects: 1, 2, 3, 4, 5, 6, 7, 8, 9 that can be put on a machine. Up to four of
               all the objects have a unique property that can activate the machine. Your goal is to find out
               all the objects that can activate the machine in ten rounds.
               Answer all the following questions in the format of "1, 2, and 3."
    user       Round 1:
               1, 6, 8 are on the machine, and the machine is not activated.
               Question: Which objects can activate the machine?
               Answer: From 1-9, objects that can activate the machine are
    assistant  3, 4, and 9.
    user       Your answer is wrong.                      (only when the episode goes on)
    user       Round 2: ...
    ...        in trial rounds, after the belief answer:
    user       Now design your own trial, you can put some of the objects on the machine to validate your
               hypothesis. Question: Which objects will you put on the machine?
               Answer: From 1-9, I will put
    assistant  2, 5 on the machine.

Timing follows the task (:mod:`causalplay.envs.core`): round ``k`` shows panel ``k`` (the context panels,
then the outcome of the previous round's trial) and asks for the belief; the trial question is asked exactly
in the rounds whose trial the task runs (rounds ``C..T-1``). Objects are 1-based in the text.

The ``"ivre"`` template uses the paper's words, as its appendix-D transcript shows them: rounds are numbered
from 0 ("Round 0:") and an empty panel reads "None are on the machine". Differences from the public notebook, on
purpose (the paper's numbers do not depend on them): the trial question is asked in the rounds whose trial is run
(the notebook asked from its fifth round to its last, so its fourth-round trial was empty and its last one was
never run); the stray space at the start of the notebook's second round line is dropped.

A template is a :class:`DialogueTemplate`; :data:`TEMPLATES` holds the named ones (``"ivre"``, the paper's;
``"ivre-clear"``, the same with rounds numbered from 1 and "No objects are on the machine" for an empty panel;
``"ivre-cot"``, a chain-of-thought variant; ``"ivre-count"``, which also tells the episode's blicket count as
the other agents' observation does). Rule wording is per rule name (``rule_text``), so the conjunctive tasks get
a conjunctive sentence. Make a new template with :func:`dataclasses.replace` or by subclassing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["DialogueTemplate", "TEMPLATES", "get_template", "number_word", "render_objects", "render_set",
           "format_transcript"]

#: the words the paper writes small counts in, ``NUMBER_WORDS[n]`` for ``n`` in 0..20
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")


def number_word(n: int) -> str:
    """``9 -> "nine"`` for 0..20, digits above (the paper writes small counts as words)."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def render_objects(objects: Sequence[int]) -> str:
    """Objects on the machine as the paper writes them: ``[1, 6, 8] -> "1, 6, 8"`` (1-based numbers)."""
    return ", ".join(str(o) for o in objects)


def render_set(objects: Sequence[int]) -> str:
    """An answer in the instructed format: ``"None."``, ``"3."``, ``"2 and 5."``, ``"1, 2, and 3."``."""
    objs = [str(o) for o in objects]
    if len(objs) <= 2:
        return (" and ".join(objs) or "None") + "."
    return ", ".join(objs[:-1]) + f", and {objs[-1]}."


@dataclass(frozen=True)
class DialogueTemplate:
    """Every text of the dialogue. Fields are :meth:`str.format` templates; the placeholders are listed.

    Parameters
    ----------
    name : str
        Registry name.
    opening : str
        First message. ``{n_word}`` (objects, as a word), ``{objects}`` ("1, 2, ..., 9"), ``{rule_text}``,
        ``{rounds_word}`` (the horizon as a word), ``{count_text}``.
    rule_text : dict
        Rule name -> sentence about the blickets. ``{max_word}`` (largest allowed blicket count, as a word),
        ``{count_word}`` (this episode's count).
    count_text : str
        Sentence for ``{count_text}`` in the opening (``""`` for none). Same placeholders as ``rule_text``.
    round : str
        Belief question of round ``{k}``: ``{panel}`` ("1, 6, 8 are on the machine" text, see ``panel`` /
        ``empty_panel``), ``{state}`` (``activated`` / ``not_activated``), ``{n}`` (objects, digits).
    panel, empty_panel : str
        ``{objects}`` on the machine / nothing on the machine.
    activated, not_activated : str
        Machine states.
    trial : str
        Trial question (``{n}``).
    wrong : str
        Sent before the next round when the episode goes on (the guess was wrong).
    first_round : int
        The number the first round is given (the paper's transcript counts from 0).
    answer_marker : str or None
        When set, only the text after the last occurrence of this marker is parsed (chain-of-thought
        answers end with ``Answer: ...``); otherwise the whole reply.
    max_tokens : int
        Default completion budget (the paper's notebook used 15).
    """

    name: str
    opening: str
    rule_text: dict[str, str]
    round: str
    trial: str
    count_text: str = ""
    panel: str = "{objects} are on the machine"
    empty_panel: str = "None are on the machine"
    activated: str = "activated"
    not_activated: str = "not activated"
    wrong: str = "Your answer is wrong."
    answer_marker: str | None = None
    max_tokens: int = 15
    primers: tuple[str, ...] = field(default=())
    first_round: int = 0

    # -- the messages --------------------------------------------------------------------------------------
    def opening_text(self, n_objects: int, horizon: int, rule: str, max_count: int, count: int) -> str:
        """The first message for a task of ``n_objects`` objects, ``horizon`` rounds and rule ``rule``."""
        if rule not in self.rule_text:
            raise ValueError(f"template {self.name!r} has no wording for rule {rule!r}; it covers "
                             f"{sorted(self.rule_text)} (add one to rule_text)")
        words = {"max_word": number_word(max_count), "count_word": number_word(count)}
        return self.opening.format(
            n_word=number_word(n_objects), objects=", ".join(str(i) for i in range(1, n_objects + 1)),
            rule_text=self.rule_text[rule].format(**words), rounds_word=number_word(horizon),
            count_text=self.count_text.format(**words), n=n_objects)

    def round_text(self, k: int, objects: Sequence[int], lit: bool, n_objects: int) -> str:
        """The ``k``-th round (``k`` counts from 1; it is shown as ``k - 1 + first_round``): panel ``objects``
        (1-based numbers) and the belief question."""
        panel = self.panel.format(objects=render_objects(objects)) if len(objects) else self.empty_panel
        state = self.activated if lit else self.not_activated
        return self.round.format(k=k - 1 + self.first_round, panel=panel, state=state, n=n_objects)

    def trial_text(self, n_objects: int) -> str:
        """The trial question."""
        return self.trial.format(n=n_objects)

    def answer_primer_phrases(self, n_objects: int) -> tuple[str, ...]:
        """Phrases a model may echo back before its answer (removed before parsing)."""
        return tuple(p.format(n=n_objects) for p in self.primers)


_IVRE_RULES = {
    "disjunctive": "Up to {max_word} of all the objects have a unique property that can activate the machine.",
    "conjunctive": ("Up to {max_word} of all the objects have a unique property; the machine is activated only "
                    "when at least two objects with that property are on it."),
}

IVRE = DialogueTemplate(
    name="ivre",
    opening=("There are {n_word} objects: {objects} that can be put on a machine. {rule_text}{count_text} "
             "Your goal is to find out all the objects that can activate the machine in {rounds_word} rounds.\n"
             "Answer all the following questions in the format of \"1, 2, and 3.\"\n"),
    rule_text=_IVRE_RULES,
    round=("Round {k}:\n{panel}, and the machine is {state}.\n"
           "Question: Which objects can activate the machine?\n"
           "Answer: From 1-{n}, objects that can activate the machine are "),
    trial=("Now design your own trial, you can put some of the objects on the machine to validate your "
           "hypothesis. Question: Which objects will you put on the machine?\n"
           "Answer: From 1-{n}, I will put "),
    primers=("Answer:", "From 1-{n},", "From 1 to {n},", "objects that can activate the machine are",
             "I will put"),
)

#: Our corrected wording: rounds numbered from 1, and an empty panel that says what it means.
IVRE_CLEAR = dataclasses.replace(IVRE, name="ivre-clear", first_round=1, empty_panel="No objects are on the machine")

#: Chain-of-thought variant: the model reasons, then ends with "Answer: ..." (only that part is parsed).
IVRE_COT = dataclasses.replace(
    IVRE, name="ivre-cot",
    opening=IVRE.opening.replace(
        "Answer all the following questions in the format of \"1, 2, and 3.\"\n",
        "Think step by step about what each round shows, then end every reply with a last line of the form "
        "\"Answer: 1, 2, and 3.\"\n"),
    round=("Round {k}:\n{panel}, and the machine is {state}.\n"
           "Question: Which objects can activate the machine?\n"),
    trial=("Now design your own trial, you can put some of the objects on the machine to validate your "
           "hypothesis. Question: Which objects will you put on the machine?\n"),
    answer_marker="Answer:", max_tokens=400,
)

#: The paper's wording plus the episode's blicket count (what every other agent sees in its observation).
IVRE_COUNT = dataclasses.replace(
    IVRE, name="ivre-count",
    count_text=" Exactly {count_word} of the objects have it.",
)

#: name -> template.
TEMPLATES: dict[str, DialogueTemplate] = {t.name: t for t in (IVRE, IVRE_CLEAR, IVRE_COT, IVRE_COUNT)}


def get_template(template: str | DialogueTemplate) -> DialogueTemplate:
    """A template by name (see :data:`TEMPLATES`) or the template itself."""
    if isinstance(template, DialogueTemplate):
        return template
    if template not in TEMPLATES:
        raise ValueError(f"unknown dialogue template {template!r}; expected one of {list(TEMPLATES)} "
                         "or a DialogueTemplate")
    return TEMPLATES[template]


def format_transcript(messages: Sequence[dict], roles: bool = False) -> str:
    """One episode's dialogue as text, the way appendix D prints it: every message on its own lines, an answer
    continuing the primed ``Answer: ...`` line it answers.

    Parameters
    ----------
    messages : sequence of dict
        ``role`` / ``content`` messages (as :meth:`causalplay.agents.llm.LLMAgent.dialogues` returns them).
    roles : bool
        Prefix each message with ``[user]`` / ``[assistant]`` (on its own line) instead.
    """
    out = ""
    for m in messages:
        text = m.get("content") or ""
        if roles:
            out += f"[{m['role']}]\n{text.rstrip(chr(10))}\n"
            continue
        if m["role"] == "assistant":
            out += text.rstrip("\n") + "\n"  # on the primed line (or its own, when the question ended a line)
        else:
            if out and not out.endswith("\n"):
                out += "\n"
            out += text
    return out.rstrip("\n")
