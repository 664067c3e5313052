"""Every reasoning item's answer worked out again from its own text, not from its generator.

``reasoning-gym`` 0.1.25 has keys that are wrong (its family generator keys "What relation is
Jessica to Jennifer?" by Jennifer's role when Jessica is Jennifer's daughter-in-law) and questions
that cannot be answered (one ``aiw`` template asks about "Bob's brother" after a story about Susan).
So the lane keeps an item only when the answer worked out here from the question itself agrees with
its key, and for the family suite it keys the item with the relation worked out here
(:mod:`.gym`). Each solver reads one suite's wording and returns None for a text it does not
recognise (the item is then dropped, never guessed at):

* arithmetic: the expression evaluated exactly (rationals; a division that does not come out whole
  is kept as a fraction, and a key must equal it);
* ``aiw``: the sibling and friend puzzles whose question is about the person the story introduces
  (her brother has her sisters and her; a male friend has her female friends and her);
* syllogism: validity by every model of the terms (Venn regions empty or not), with existential
  import (every term names something, as the traditional syllogism assumes);
* family: the relation of the first person to the second, from "A is married to B." and "They have
  a child called C." / "children called C, D and E.", the persons' sexes from the names.

GSM-Symbolic's word problems have no solver here: its keys are the templates' own computation.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re
from fractions import Fraction
from typing import Callable, Final, Mapping

_OPERATORS: Final[Mapping[type, Callable[[Fraction, Fraction], Fraction]]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _evaluate(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError("not an arithmetic expression of integers")


def arithmetic(question: str) -> Fraction | None:
    """The value of "Calculate <expression>."; None for another text or a division by zero."""
    match = re.fullmatch(r"Calculate (.+)\.", question.strip())
    if not match:
        return None
    try:
        return _evaluate(ast.parse(match.group(1), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def singular_counts(question: str) -> str:
    """'1 brothers' read as '1 brother' (the generator writes every count in the plural)."""
    return re.sub(r"\b1 (brother|sister|male friend|female friend)s\b", r"1 \1", question)


_SIBLINGS = re.compile(r"(\w+) has (\d+) brothers? and she also has (\d+) sisters?\. "
                       r"How many sisters does (\w+)'s brother have\?")
_FRIENDS = re.compile(r"(\w+) has (\d+) male friends? and she also has (\d+) female friends?\. They all are friends "
                      r"with each other and have no other friends aside\. How many female friends does (\w+), a "
                      r"male friend of (\w+), have\?")


def aiw(question: str) -> int | None:
    """The answer of a sibling or friend puzzle about the person its story introduces; None otherwise."""
    siblings = _SIBLINGS.fullmatch(question.strip())
    if siblings and siblings.group(4) == siblings.group(1):
        return int(siblings.group(3)) + 1
    friends = _FRIENDS.fullmatch(question.strip())
    if friends and friends.group(5) == friends.group(1):
        return int(friends.group(3)) + 1
    return None


_STATEMENT = re.compile(r"(All|No|Some) (\w+) are (not )?(\w+)")


def _holds(statement: tuple[str, str, bool, str], model: frozenset[frozenset[str]]) -> bool:
    """Whether a categorical statement holds where ``model`` is the set of non-empty Venn regions."""
    quantifier, subject, negated, predicate = statement
    if quantifier == "All":
        return all(predicate in region for region in model if subject in region)
    if quantifier == "No":
        return not any(predicate in region for region in model if subject in region)
    return any((predicate not in region) if negated else (predicate in region) for region in model if subject in region)


def syllogism(question: str) -> bool | None:
    """Whether the question's conclusion follows from its numbered premises; None for another text."""
    premises = re.findall(r"^\d+\. (.+)$", question, flags=re.MULTILINE)
    conclusion = re.search(r"Does it logically follow that:\n(.+)\?", question)
    parsed = [_STATEMENT.fullmatch(s.strip()) for s in [*premises, conclusion.group(1) if conclusion else ""]]
    if not premises or not all(parsed):
        return None
    statements = [(m.group(1), m.group(2), bool(m.group(3)), m.group(4)) for m in parsed if m]
    if any(negated and q != "Some" for q, _, negated, _ in statements):
        return None
    terms = sorted({t for _, s, _, p in statements for t in (s, p)})
    regions = [frozenset(t for t, inside in zip(terms, pattern) if inside)
               for pattern in itertools.product((True, False), repeat=len(terms))]
    for chosen in itertools.product((True, False), repeat=len(regions)):
        model = frozenset(r for r, present in zip(regions, chosen) if present)
        if all(any(t in r for r in model) for t in terms) and all(_holds(s, model) for s in statements[:-1]) \
                and not _holds(statements[-1], model):
            return False
    return True


_QUESTION = re.compile(r"(?:What is|How is|What relation is) (\w+) (?:to|related to) (\w+)\?")
_MARRIED = re.compile(r"(\w+) is married to (\w+)\.")
_CHILDREN = re.compile(r"They have (?:a child|children) called ([\w ,]+)\.")
_RELATIONS: Final = (  # (a test on the two persons, the female word, the male word)
    ("parent", "mother", "father"), ("child", "daughter", "son"), ("spouse", "wife", "husband"),
    ("sibling", "sister", "brother"), ("grandparent", "grandmother", "grandfather"),
    ("grandchild", "granddaughter", "grandson"), ("parent's sibling", "aunt", "uncle"),
    ("sibling's child", "niece", "nephew"), ("spouse's parent", "mother-in-law", "father-in-law"),
    ("child's spouse", "daughter-in-law", "son-in-law"),
)  # fmt: skip


class _Family:
    """The family a story states: who is married to whom, and each couple's children."""

    def __init__(self, story: str):
        self.spouse: dict[str, str] = {}
        self.parents: dict[str, set[str]] = {}
        couple: tuple[str, str] | None = None
        for sentence in re.findall(r"[^.]+\.", story):
            sentence = sentence.strip()
            if married := _MARRIED.fullmatch(sentence):
                couple = (married.group(1), married.group(2))
                self.spouse.update({couple[0]: couple[1], couple[1]: couple[0]})
            elif (children := _CHILDREN.fullmatch(sentence)) and couple:
                for child in re.split(r", | and ", children.group(1)):
                    self.parents.setdefault(child, set()).update(couple)
            else:
                raise ValueError(f"a statement the family reader does not know: {sentence!r}")

    def parents_of(self, person: str) -> set[str]:
        return self.parents.get(person, set())

    def children_of(self, person: str) -> set[str]:
        return {child for child, parents in self.parents.items() if person in parents}

    def siblings_of(self, person: str) -> set[str]:
        return {o for p in self.parents_of(person) for o in self.children_of(p)} - {person}

    def is_(self, relation: str, a: str, b: str) -> bool:
        """Whether ``a`` is ``b``'s ``relation``."""
        tests = {
            "parent": lambda: a in self.parents_of(b),
            "child": lambda: b in self.parents_of(a),
            "spouse": lambda: self.spouse.get(b) == a,
            "sibling": lambda: a in self.siblings_of(b),
            "grandparent": lambda: any(a in self.parents_of(p) for p in self.parents_of(b)),
            "grandchild": lambda: any(b in self.parents_of(p) for p in self.parents_of(a)),
            "parent's sibling": lambda: any(a in self.siblings_of(p) for p in self.parents_of(b)),
            "sibling's child": lambda: any(b in self.siblings_of(p) for p in self.parents_of(a)),
            "spouse's parent": lambda: b in self.spouse and a in self.parents_of(self.spouse[b]),
            "child's spouse": lambda: a in self.spouse and b in self.parents_of(self.spouse[a]),
        }
        return tests[relation]()


def family(question: str, female_names: frozenset[str], male_names: frozenset[str]) -> str | None:
    """What the question's first person is to its second, in one word; None when the story does not say
    or the text is not a family story."""
    story, _, asked = question.rpartition("\n\n")
    persons = _QUESTION.search(asked)
    if not persons:
        return None
    a, b = persons.groups()
    try:
        stated = _Family(story)
    except ValueError:
        return None
    found = [(female, male) for relation, female, male in _RELATIONS if stated.is_(relation, a, b)]
    if len(found) != 1 or (a in female_names) == (a in male_names):
        return None
    female, male = found[0]
    return female if a in female_names else male
