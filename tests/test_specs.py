"""``causalplay.core.specs.format_spec``: the spec builder quotes what needs quoting, so every value parses back as
itself (the texts below are written out by hand from the grammar's rules)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from causalplay.core.specs import format_spec, parse_spec, split_specs


@pytest.mark.parametrize("options, text", [
    ({}, "eig"),
    ({"shared": ["gamma", "stop_a"]}, "eig:shared=[gamma,stop_a]"),  # a list of bare strings
    ({"names": ["a b", "c"]}, "eig:names=['a b','c']"),  # one needs quotes: a literal
    ({"mixed": ["x", 1, None]}, "eig:mixed=['x',1,None]"),  # only a list of names goes unquoted
    ({"path": "runs/rl/ppo", "name": "ppo-s1"}, "eig:name=ppo-s1:path=runs/rl/ppo"),  # keys sorted, bare strings
    ({"path": "C:/runs/a,b"}, "eig:path='C:/runs/a,b'"),  # ':' and ',' would split the spec: quoted
    ({"model": "1"}, "eig:model='1'"),  # bare 1 would read as an int
    ({"flag": "True"}, "eig:flag='True'"),
    ({"flag": True, "depth": 2, "x": 0.1, "cache": None}, "eig:cache=None:depth=2:flag=True:x=0.1"),
    ({"q": "it's"}, "eig:q=\"it's\""),
    ({"u": "a b"}, "eig:u='a b'"),
    ({"v": "k=v"}, "eig:v='k=v'"),
    ({"t": (1,)}, "eig:t=(1,)"),
    ({"d": {"a": [1, 2.5]}}, "eig:d={'a':[1,2.5]}"),
])
def test_format_spec_writes_the_grammar_and_parses_back(options, text):
    assert format_spec("eig", **options) == text
    assert parse_spec(text).kwargs == options
    assert split_specs(f"{text},random") == [text, "random"]  # commas inside quotes or brackets stay


_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                  st.text(max_size=12))
_value = st.one_of(_leaf, st.lists(_leaf, max_size=3), st.dictionaries(st.text(max_size=4), _leaf, max_size=2))


@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), _value, max_size=4))
def test_any_options_round_trip(options):
    text = format_spec("agent", **options)
    back = parse_spec(text)
    assert back.name == "agent" and back.kwargs == options
    assert format_spec("agent", **back.kwargs) == text  # canonical: formatting is idempotent


def test_a_list_of_names_needs_no_quotes_but_an_expression_is_refused():
    assert parse_spec("eig:shared=[gamma, stop_a]").kwargs == {"shared": ["gamma", "stop_a"]}
    assert parse_spec("eig:x=[a,2,None]").kwargs == {"x": ["a", 2, None]}
    with pytest.raises(ValueError, match="is not a valid Python literal"):
        parse_spec("planner:depth=[2+]")


@pytest.mark.parametrize("name, options, error, match", [
    ("", {}, ValueError, "spec name ''"),
    ("a:b", {}, ValueError, "spec name 'a:b'"),
    (" eig", {}, ValueError, "spec name ' eig'"),
    ("eig", {"x": float("nan")}, ValueError, "option 'x': nan has no Python literal"),
    ("eig", {"x": {1, 2}}, TypeError, r"option 'x': \{1, 2\} \(set\) cannot be written"),
])
def test_format_spec_refuses_what_the_grammar_cannot_hold(name, options, error, match):
    with pytest.raises(error, match=match):
        format_spec(name, **options)
