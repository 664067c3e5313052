"""Progress output: a spinner with elapsed time on a terminal, plain lines otherwise.

When stdout is not a terminal (CI, a pipe) only notes and errors are printed, no
spinners or colour, so logs stay readable.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


class Ui:
    """What the command tells the user while it works."""

    def __init__(self, console: Console | None = None, errors: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.errors = errors or Console(stderr=True, highlight=False)

    @property
    def interactive(self) -> bool:
        return self.console.is_terminal

    @contextmanager
    def step(self, message: str) -> Iterator[None]:
        """Show ``message`` with a spinner and elapsed time while the block runs (terminal only)."""
        if not self.interactive:
            yield
            return
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=True) as progress:
            progress.add_task(message, total=None)
            yield
        self.console.print(f"[green]done[/] {message}", highlight=False)

    def note(self, message: str) -> None:
        if self.interactive:
            self.console.print(message, markup=False)
        else:
            print(message, flush=True)

    def error(self, message: str) -> None:
        if self.errors.is_terminal:
            self.errors.print(f"[bold red]error:[/] {message}", soft_wrap=True)
        else:
            print(f"error: {message}", file=sys.stderr, flush=True)
