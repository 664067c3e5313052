"""Options as models: every option of a command declared once, as a field of the command's options model.

An :class:`Option` is one declaration (its flags, help, default, parser, group), written as a class attribute of
a subclass of :class:`Options`; the attribute's name is the option's name (its ``dest``, its key where it is
recorded). From that one declaration come the parser (:meth:`Options.add_arguments`), the typed options a
command reads (:meth:`Options.of`: an instance whose attributes are the values, every default in) and any table
of options (the declarations in order, :meth:`Options.options`). Read on the class, the attribute is the
declaration (``Up.max_hours.flag``); on an instance, the value.

An option shared by several commands is declared once and put on each command's model, either as the same
:class:`Option` object or through a base class (a group of options, :class:`Options` subclasses inherit each
other's options, a base's first). Standard library only: a command's ``--help`` loads nothing else.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Mapping, TypeVar, overload

O = TypeVar("O", bound="Options")


@dataclass(frozen=True, eq=False)
class Together:
    """Options of which at most one may be given (``required``: exactly one), a mutually exclusive group."""

    required: bool = False


@dataclass(frozen=True, eq=False)
class Option:
    """One option: what the parser, the typed options, the docs and a recorded run know of it."""

    flags: tuple[str, ...]
    """Its flags, the long one last (``("-v", "--verbose")``); none for a positional argument."""
    help: str
    """What it does, plain text (a ``%`` is written as is); the help adds ``shown`` as its default."""
    default: Any = None
    shown: str = ""
    """The default as ``--help`` and the docs state it (empty: none stated)."""
    type: Callable[[str], Any] | None = None
    """The parser of one value: a bad value raises ``argparse.ArgumentTypeError`` with one line."""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    nargs: str | None = None
    switch: bool = False
    """A flag without a value (``store_true``)."""
    repeated: bool = False
    """Given once per value (``append``): its value is the list of them."""
    required: bool = False
    group: str | None = None
    """The key of the argument group ``--help`` lists it under (None: the parser's own options)."""
    together: Together | None = None
    """The mutually exclusive group it is one of."""
    more: str = ""
    """Markdown a docs' table adds to the help (a link, a detail too long for ``--help``)."""
    name: str = ""
    """The attribute it is declared as (set by the class; its ``dest``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        if self.name and self.name != name:
            raise TypeError(f"{owner.__name__}.{name}: the option {self.flag} is already declared as {self.name!r}")
        object.__setattr__(self, "name", name)

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Option: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Any: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        """On the class: the declaration; on an instance that was given no value: the default."""
        return self if obj is None else self.default

    @property
    def flag(self) -> str:
        """Its long flag (a positional argument: its metavar or name)."""
        return self.flags[-1] if self.flags else self.metavar or self.name

    @property
    def usage(self) -> str:
        """The flag as a table of options shows it: ``--bfcl-n N``, ``--tools engine|rows``."""
        flags = ", ".join(self.flags) or self.flag
        if self.switch or not self.flags:
            return flags
        return f"{flags} {self.metavar or '|'.join(self.choices or ()) or self.name.upper()}"

    def full_help(self) -> str:
        return f"{self.help} (default: {self.shown})" if self.shown else self.help

    def parser_default(self) -> Any:
        """What the parser puts in when the option is not given."""
        return self.default

    def but(self, **changes: Any) -> Option:
        """The same option with another help, default or shown default (another command's sentence for it)."""
        return dataclasses.replace(self, **changes)

    def add_to(self, parser: Any, help: str | None = None) -> None:
        """Add it to a parser, an argument group or a mutually exclusive group; ``help``: another sentence for it
        (another command's)."""
        kwargs: dict[str, Any] = {"help": (help or self.full_help()).replace("%", "%%"),
                                  "default": self.parser_default()}
        if self.switch:
            kwargs["action"] = "store_true"
        else:
            kwargs.update({k: v for k, v in (("type", self.type), ("metavar", self.metavar),
                                             ("choices", self.choices), ("nargs", self.nargs)) if v is not None})
        if self.repeated:  # the parser starts a list of its own; left out, the declared default is the value
            kwargs.update(action="append", default=None)
        if not self.flags:
            parser.add_argument(self.name, **kwargs)
            return
        if self.required:
            kwargs["required"] = True
        parser.add_argument(*self.flags, dest=self.name, **kwargs)


class Options:
    """A command's options, as a model: each class attribute that is an :class:`Option` is one, in the order
    declared (a base class's first). An instance holds their values (frozen: :meth:`replace` makes another)."""

    __options__: ClassVar[Mapping[str, Option]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, Option] = {}
        for base in reversed(cls.__mro__[1:]):
            found.update(vars(base).get("__options__", {}))
        found.update({name: value for name, value in vars(cls).items() if isinstance(value, Option)})
        cls.__options__ = found

    def __init__(self, **values: Any) -> None:
        unknown = sorted(set(values) - set(self.__options__))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no option {', '.join(unknown)}")
        for name, option in self.__options__.items():
            object.__setattr__(self, name, values.get(name, option.default))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: use replace({name}=...)")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.as_dict() == other.as_dict()  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.as_dict().items())})"

    @classmethod
    def options(cls, groups: Iterable[str | None] | None = None) -> tuple[Option, ...]:
        """Its declarations, in order; ``groups``: only those of these groups, group by group."""
        if groups is None:
            return tuple(cls.__options__.values())
        return tuple(o for key in groups for o in cls.__options__.values() if o.group == key)

    @classmethod
    def of(cls: type[O], namespace: argparse.Namespace | object) -> O:
        """The options as parsed: each one given (not None), else its declared default."""
        values = {name: getattr(namespace, name, None) for name in cls.__options__}
        return cls(**{name: value for name, value in values.items() if value is not None})

    @classmethod
    def given(cls, namespace: argparse.Namespace | object, options: Iterable[Option]) -> list[Option]:
        """Those of ``options`` that were given (a parser default of None tells them from those left out)."""
        return [o for o in options if getattr(namespace, o.name, None) is not None]

    def replace(self: O, **changes: Any) -> O:
        return type(self)(**{**self.as_dict(), **changes})

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__options__}

    @classmethod
    def add_arguments(cls, parser: Any, groups: Mapping[str, str] | None = None,
                      beside: type[Options] | None = None) -> None:
        """Add its options to ``parser``: those of each group of ``groups`` (key: title) under its title, in
        that order (None: every option, groups by their key as title); ``beside``: leave out the options of that
        model (another parser holds them, e.g. the options every subcommand shares)."""
        left_out = set(beside.__options__) if beside is not None else set()
        chosen = [o for o in cls.options(groups) if o.name not in left_out]
        targets: dict[Any, Any] = {}
        for option in chosen:
            key = option.group if groups is not None else None
            if key not in targets:
                targets[key] = parser.add_argument_group(groups[key]) if groups is not None and key else parser
            target = targets[key]
            if option.together is not None:
                if option.together not in targets:
                    targets[option.together] = target.add_mutually_exclusive_group(
                        required=option.together.required)
                target = targets[option.together]
            option.add_to(target)


def add_command(sub: Any, name: str, model: type[Options], help: str, beside: type[Options] | None = None) -> Any:
    """A subcommand ``name`` whose options are ``model``'s (less ``beside``'s, the main parser's); the parsed
    namespace names the model, so :func:`parsed` can make its options."""
    parser = sub.add_parser(name, help=help)
    model.add_arguments(parser, beside=beside)
    parser.set_defaults(options_model=model)
    return parser


def parsed(namespace: argparse.Namespace) -> Options:
    """The typed options of the subcommand parsed into ``namespace`` (:func:`add_command`)."""
    model: type[Options] = namespace.options_model
    return model.of(namespace)
