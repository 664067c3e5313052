"""The quality lane's items: short questions with one checkable answer, the same on every backend.

Five suites come from the seeded generators of the pinned ``reasoning-gym`` package (Apache-2.0):
arithmetic, GSM-Symbolic word problems, "Alice in Wonderland" sibling puzzles (numbers),
syllogisms (yes or no) and family relationships (one word of sixteen). The sixth applies the
published IFEval instruction types to seeded prompts (:mod:`.instructions`). Every item is made
from ``(seed, its number)`` alone, so the first N items of a seed are the same whatever the larger N
(:func:`.lane.select`). Nothing is downloaded: the generators ship in the wheel.
"""
