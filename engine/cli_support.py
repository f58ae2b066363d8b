"""What every ``python -m engine`` command shares: its consoles, the one way a refusal is reported,
progress on stderr, and the option types several commands take.

Bad input (a missing or corrupt file, an impossible request, an unwritable target) prints
``error: <what is wrong>`` on stderr and exits with code 2 (:data:`EXIT_BAD_INPUT`); a training run
stopped by a NaN/Inf loss exits with code 3 (:data:`EXIT_NONFINITE`); never a traceback.  Each command
module (``cli_core``, ``cli_train``, ``cli_convert``, ``cli_qa``) attaches its commands to
:data:`engine.app.app` and reports through :func:`guarded` and :func:`fail`.

Imports inside functions: rich.markup and rich.text load only when an error or a table is printed,
and the engine's checkpoint module (torch) only when a command loads a checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from engine.errors import EngineError, NonFiniteLossError
from engine.faults import FAULTS

if TYPE_CHECKING:
    from engine.checkpoint import LoadedCheckpoint

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)
T = TypeVar("T")
EXIT_BAD_INPUT = 2
EXIT_NONFINITE = 3


class CheckpointDtype(StrEnum):
    f32 = "f32"
    f16 = "f16"
    bf16 = "bf16"


CHECKPOINT_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}

OtherBaseOption = Annotated[
    bool,
    typer.Option(
        "--allow-other-base",
        help="Apply the adapter to a base whose weights differ from the one it was trained on (recorded).",
    ),
]


def text(value: str) -> Any:
    """``value`` as a table cell or title shows it: text, not markup (a path such as runs/[v1], a token
    such as [INST])."""
    from rich.text import Text

    if FAULTS.active("inspect_names_read_as_markup"):  # pragma: no mutate
        return value  # pragma: no mutate -- the defect: rich reads "[v1]" in a name as a style and drops it
    return Text(value)


def fields_table(title: str) -> Table:
    """Two columns, a field and its value; a long value (a sha256, a path) wraps instead of being cut."""
    table = Table(title=text(title), show_header=False)
    table.add_column()
    table.add_column(overflow="fold")
    return table


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """Print ``error: message`` on stderr and give the exit to raise (2: bad input)."""
    from rich.markup import escape

    # the message is text, not markup: a path such as runs/[v1]/model.safetensors must print as it is
    shown = escape(message)
    if FAULTS.active("cli_error_read_as_markup"):  # the defect: [brackets] in the message read as styles
        shown = message  # pragma: no mutate
    err.print(f"[bold red]error:[/] {shown}", markup=True, highlight=False)
    return typer.Exit(code=code)


def os_error_text(exc: OSError) -> str:
    """An operating-system failure as a command reports it: the path the system named and its
    reason (``runs/x: Not a directory``), or the reason alone where the failing call names no file
    (a write to a full disk), never Python's ``[Errno N]`` rendering."""
    return f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": ")


def guarded(fn: Callable[[], T]) -> T:
    """``fn()``, with a refusal reported as every command reports one: a NaN/Inf training stop exits
    3 with its message; an engine refusal or a rejected value exits 2 with its message, printed
    whole (one may end on a quoted name); an operating-system failure exits 2 naming the path."""
    try:
        return fn()
    except NonFiniteLossError as exc:
        raise fail(str(exc), EXIT_NONFINITE) from None
    except (EngineError, ValueError) as exc:
        if FAULTS.active("cli_refusal_traceback"):
            raise  # pragma: no mutate
        raise fail(str(exc)) from None
    except OSError as exc:
        # the defect: Python's own rendering, "[Errno 28] No space left on device"
        if FAULTS.active("cli_os_error_shown_raw"):  # pragma: no mutate
            raise fail(str(exc)) from None  # pragma: no mutate
        raise fail(os_error_text(exc)) from None


@contextmanager
def progress(description: str) -> Iterator[Callable[[str], None]]:
    """A spinner with elapsed time on stderr; the yielded callable updates its description."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=None)
        yield lambda line: bar.update(task, description=line)


def load(path: Path, device: str = "cpu") -> LoadedCheckpoint:
    """The checkpoint at ``path``, or the command's refusal."""
    from engine.checkpoint import load_checkpoint

    return guarded(lambda: load_checkpoint(path, device=device))
