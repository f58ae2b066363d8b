"""Running one checker and judging it: timeout, observation checks, ``expect``, mutant re-run.

Nothing here knows about pytest; the plugin supplies the keyword arguments (params and fixture
values) and turns the :class:`Evaluation` into a pytest outcome.

Timeouts.  A checker runs in a daemon thread and the harness waits ``timeout_s`` for it.  A
thread cannot be killed, so a hung checker is *abandoned*, not stopped: it keeps its CPU and
memory until it returns or the process exits, and anything it mutates afterwards (global RNGs,
module state) is not undone.  The falsifier still ends with verdict ``error`` at the deadline (its
message shows where the checker was then, so a deadlock can be found without a debugger), a
fault switched on for a mutant run is switched off when the harness gives up, and ``daemon=True``
keeps the thread from blocking interpreter exit.  A subprocess would be killable but could not
receive pytest fixtures or share an already-loaded model; checkers that need a hard kill can start
their own subprocess (``PV_FAULTS`` carries a mutant's fault into it).

Isolation ``process`` (:func:`call_in_process`) forks the pytest process for the call instead:
the child has every fixture value and loaded module the parent has, runs the checker in its own
process group, and sends its return value back through a pipe.  At the deadline the whole group
is killed, so a late result never arrives and nothing the checker started outlives the run; a
checker that exits, aborts or segfaults ends as ``error`` with its exit status or signal, and the
session goes on.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import pickle
import random
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pv import expr
from pv.checkers import unaccepted_params
from pv.faults import ENV_VAR as FAULTS_ENV_VAR
from pv.faults import resolve_mutant
from pv.mutation import record_child_hits
from pv.noise import Measured, decides, is_measured_json
from pv.results import MutantResult, Verdict

DEFAULT_SEED = 0
BROKEN_REFERENCE = "broken reference"  # a mutant that names no existing fault: not a vacuous check


class BindingError(TypeError):
    """The checker's signature does not fit the falsifier's params."""


@dataclass
class CallOutcome:
    """What came back from one call of a checker."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    stack: str = ""  # where a timed-out checker was when the harness gave up on it
    error_text: str = ""  # a failure already formatted (from a child process)
    skip_reason: str | None = None  # the checker called pytest.skip (in a child process)
    killed: bool = False  # the deadline passed and the checker's process group was killed


ISOLATIONS = ("thread", "process")


def _child_states(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """State of fixture values that record what happened during the call (a PropertyRunner's
    records), to be copied back into the parent's objects."""
    return {k: v.pv_child_state() for k, v in kwargs.items() if callable(getattr(v, "pv_child_state", None))}


def _start_reaper(life: int, reply: int) -> None:
    """Fork a reaper into the checker's process group: it blocks on ``life``, a pipe whose write end
    only pytest holds, and kills the whole group when that read ends, whether pytest closed it
    (the call is over) or died (``kill -9``: the kernel closes a dead process's descriptors).  So
    no checker, nor anything it started, outlives the call or pytest."""
    if os.getpgid(0) != os.getpid():
        return  # no group of its own (setpgid refused): killing "the group" would kill pytest's
    if os.fork() == 0:
        try:
            with contextlib.suppress(Exception):
                record_child_hits()  # now: the reaper ends by SIGKILL, its own
            os.close(reply)  # pytest reads the reply pipe to its end: only the checker may hold it
            with contextlib.suppress(OSError):
                os.read(life, 1)
            # the checker, its children and this reaper.  Not mutated: a mutant's killpg(1, ...)
            # kills process group 1, whatever else runs on the machine (the mutation run's own shell)
            os.killpg(0, signal.SIGKILL)  # pragma: no mutate
        finally:
            os._exit(0)
    os.close(life)


class NotAChildError(RuntimeError):
    """The child's side of a forked call reached in the process that forked it."""


def _child_main(func: Callable[..., Any], kwargs: Mapping[str, Any], out: int, life: int, parent: int) -> None:
    if os.getpid() == parent:
        # it ends with os._exit: in pytest's own process that is a silent, green exit of the session
        raise NotAChildError("the checker's child process code ran in the process that forked it")
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # a group of its own: the deadline kills whatever it started too
    try:
        _start_reaper(life, out)
        _single_threaded_torch()
        try:
            value = func(**kwargs)
            reply: tuple[Any, ...] = ("value", value, _child_states(kwargs))
        except BaseException as exc:
            if _is_skip(exc):
                reply = ("skip", str(getattr(exc, "msg", exc)), _child_states(kwargs))
            else:
                reply = ("error", _format_exception(exc), _child_states(kwargs))
        try:
            data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # a return value that cannot leave the process
            text = f"the checker's return value cannot be sent back from its process: {type(exc).__name__}: {exc}"
            data = pickle.dumps(("error", text, {}))
        view = memoryview(data)
        while view:
            written = os.write(out, view)
            view = view[written:]
    finally:
        with contextlib.suppress(Exception):
            record_child_hits()  # under a mutation run's stats: what the checker's call reached
        os._exit(0)  # never run pytest's exit handlers or flush its buffers a second time


def _single_threaded_torch() -> None:
    """GNU OpenMP's thread pool does not survive fork: a forked child that enters a parallel
    region the parent already used can wait forever on a lock no thread will release.  One
    intra-op thread keeps torch out of that pool (what torch's own DataLoader workers do)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.set_num_threads(1)


def _exit_text(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return f"the checker's process was killed by {name} ({sig}) before it returned"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
    return f"the checker's process exited with status {code} before it returned"


def call_in_process(func: Callable[..., Any], kwargs: Mapping[str, Any], timeout_s: float | None) -> CallOutcome:
    """Call ``func(**kwargs)`` in a forked child; kill its process group at ``timeout_s``."""
    read_end, write_end = os.pipe()
    life_r, life_w = os.pipe()  # held open by pytest alone: its end (or pytest's death) ends the group
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.perf_counter()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        os.close(life_w)
        _child_main(func, kwargs, write_end, life_r, parent)
    os.close(write_end)
    os.close(life_r)
    chunks: list[bytes] = []
    deadline = None if not timeout_s or timeout_s <= 0 else start + timeout_s
    timed_out = False
    try:
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
            ready, _, _ = select.select([read_end], [], [], wait)
            if not ready:
                timed_out = True
                break
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        if timed_out:
            _kill_group(pid)
        _, status = os.waitpid(pid, 0)
        os.close(life_w)  # the reaper ends whatever the checker left running
    duration = time.perf_counter() - start
    if timed_out:
        return CallOutcome(timed_out=True, killed=True, duration_s=duration)
    if not chunks:
        return CallOutcome(error_text=_exit_text(status), duration_s=duration)
    try:
        kind, payload, states = pickle.loads(b"".join(chunks))
    except Exception as exc:
        return CallOutcome(error_text=f"the checker's reply could not be read: {exc}; {_exit_text(status)}")
    for name, state in states.items():
        target = kwargs.get(name)
        if target is not None and callable(getattr(target, "pv_restore_state", None)):
            target.pv_restore_state(state)
    if kind == "value":
        return CallOutcome(value=payload, duration_s=duration)
    if kind == "skip":
        return CallOutcome(skip_reason=str(payload), duration_s=duration)
    return CallOutcome(error_text=str(payload), duration_s=duration)


def _kill_group(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            continue


class CheckerExitError(RuntimeError):
    """A checker run in the session's own process called ``os._exit``."""


_REAL_EXIT = os._exit


def _refuse_exit(status: int) -> NoReturn:
    raise CheckerExitError(
        f"the checker called os._exit({status}), which would end the whole pytest session at once: no "
        "evidence written and, for status 0, a green exit status; refused under isolation: thread (use "
        "isolation: process for a checker that must end its process)"
    )


@contextlib.contextmanager
def _exit_guard() -> Iterator[None]:
    """``os._exit`` raises instead of ending the session while a checker runs in this process.

    ``sys.exit`` already arrives as an exception; ``os._exit`` skips every handler, so a checker
    calling it under thread isolation ended pytest with its code (0 looks like a pass in CI) and
    no bundle.  A kill by a signal still ends the session, with a non-zero status, and the journal
    is recovered at the next run."""
    if os._exit is not _REAL_EXIT:  # nested (a checker calling the harness): the outer guard holds
        yield
        return
    os._exit = _refuse_exit
    try:
        yield
    finally:
        os._exit = _REAL_EXIT


def call_with_timeout(func: Callable[..., Any], kwargs: Mapping[str, Any], timeout_s: float | None) -> CallOutcome:
    """Call ``func(**kwargs)`` in a daemon thread; give up after ``timeout_s`` seconds.

    ``timeout_s`` of None or <= 0 means no deadline, and then the call runs in the calling thread:
    the escape hatch for checkers that must own the main thread (signal handlers, some GUI or
    distributed back ends), at the price of a hang being a hang.
    """
    with _exit_guard():
        return _call_with_timeout(func, kwargs, timeout_s)


def _call_with_timeout(func: Callable[..., Any], kwargs: Mapping[str, Any], timeout_s: float | None) -> CallOutcome:
    if not timeout_s or timeout_s <= 0:
        start = time.perf_counter()
        try:
            value = func(**kwargs)
        except Exception as exc:
            return CallOutcome(error=exc, duration_s=time.perf_counter() - start)
        except BaseException as exc:
            if _is_skip(exc):
                return CallOutcome(error=exc, duration_s=time.perf_counter() - start)
            raise  # KeyboardInterrupt in the main thread stops the session, as pytest expects
        return CallOutcome(value=value, duration_s=time.perf_counter() - start)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = func(**kwargs)
        except BaseException as exc:  # the harness must see every way a checker can end
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"pv-checker-{getattr(func, '__name__', 'checker')}", daemon=True)
    start = time.perf_counter()
    thread.start()
    thread.join(timeout_s)
    duration = time.perf_counter() - start
    if thread.is_alive():
        return CallOutcome(timed_out=True, duration_s=duration, stack=_stack_of(thread))
    if duration > timeout_s:  # it held the GIL past the deadline: a late result is never a pass
        return CallOutcome(timed_out=True, duration_s=duration, stack="(it returned only after the deadline)")
    return CallOutcome(value=box.get("value"), error=box.get("error"), duration_s=duration)


def _importable(name: str) -> Any:
    """The module if it is loaded or can be imported now, else None (not installed, or broken)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    if importlib.util.find_spec(name) is None:
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (the latter two when importable)."""
    random.seed(seed)
    numpy = _importable("numpy")
    if numpy is not None:
        numpy.random.seed(seed % 2**32)
    torch = _importable("torch")
    if torch is not None:
        torch.manual_seed(seed)


def bind_arguments(
    func: Callable[..., Any],
    params: Mapping[str, Any],
    fixture: Callable[[str], Any],
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``func``: params by name, every other parameter a fixture.

    A parameter with a default that no param names keeps its default; ``overrides`` replaces a
    fixture value (the mutant run gets fresh per-run fixtures).  A param the signature cannot take
    is a binding defect, reported rather than silently dropped, except ``seed``, which the harness
    itself consumes.
    """
    overrides = overrides or {}
    sig = inspect.signature(func)
    kwargs: dict[str, Any] = {}
    takes_var_kw = False
    for name, p in sig.parameters.items():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            takes_var_kw = True
            continue
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            raise BindingError(f"checker parameter {name!r} cannot be passed by keyword")
        if name in params:
            kwargs[name] = params[name]
        elif name in overrides:
            kwargs[name] = overrides[name]
        elif p.default is inspect.Parameter.empty:
            kwargs[name] = fixture(name)
    if not takes_var_kw:
        problems = unaccepted_params(func, params)
        if problems:
            raise BindingError(
                "; ".join(f"param {k!r} is not a parameter of the checker{hint}" for k, hint in problems.items())
            )
        return kwargs
    for k in params:
        kwargs.setdefault(k, params[k])
    return kwargs


def _plain(value: Any) -> Any:
    """A JSON value for an observation, or raise TypeError naming what is wrong."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    # numpy scalars and arrays, tensors: converted the way the expression evaluator reads them
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return _plain(tolist())
    raise TypeError(f"a {type(value).__module__}.{type(value).__name__} is not a JSON scalar or list")


def normalise_observations(
    value: Any, declared: Sequence[str]
) -> tuple[dict[str, Any], list[str], dict[str, dict[str, Any]]]:
    """(observations as plain JSON values, problems, noise); any problem makes the verdict ``error``.

    A :class:`pv.noise.Measured` observation (or its JSON form, from a launched rank) is read as
    its value; its interval and noise figures go into ``noise`` under the observation's name."""
    if not isinstance(value, Mapping):
        return {}, [f"the checker returned a {type(value).__name__}, not a dict of observations"], {}
    obs: dict[str, Any] = {}
    noise: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for key, v in value.items():
        if not isinstance(key, str):
            problems.append(f"observation key {key!r} is not a string")
            continue
        try:
            m = v if isinstance(v, Measured) else (Measured.from_json(v) if is_measured_json(v) else None)
            if m is None:
                obs[key] = _plain(v)
            else:
                noise[key] = {"interval": [m.low, m.high], "figures": {k: _plain(f) for k, f in m.noise.items()}}
                obs[key] = m.value
        except (TypeError, ValueError, KeyError) as exc:
            problems.append(f"observation {key!r}: {exc}")
    missing = [n for n in declared if n not in value]
    if missing:
        problems.append(f"missing declared observation(s): {', '.join(missing)}")
    return obs, problems, noise


@dataclass
class Evaluation:
    """The outcome of one run of a checker, judged against ``expect``."""

    verdict: Verdict
    observations: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    duration_s: float = 0.0
    skip_reason: str | None = None
    noise: dict[str, dict[str, Any]] = field(default_factory=dict)  # observation -> interval and figures


@dataclass(frozen=True)
class FalsifierText:
    """The human side of a falsifier, for failure reports."""

    label: str  # "<contract-id>::<FALSIFY-ID>"
    rule: str | None = None
    prediction: str | None = None
    if_fails: str | None = None


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def falsified_report(text: FalsifierText, expect: str, substituted: str, observations: Mapping[str, Any]) -> str:
    lines = [f"FALSIFIED {text.label}"]
    if text.rule:
        lines.append(f"  rule:         {text.rule}")
    if text.prediction:
        lines.append(f"  prediction:   {text.prediction}")
    lines.append(f"  expect:       {expect}")
    lines.append(f"  with values:  {substituted}")
    lines.append(f"  observations: {_dump(dict(observations))}")
    if text.if_fails:
        lines.append(f"  if it fails:  {text.if_fails}")
    return "\n".join(lines)


def _nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(_nonfinite(v) for v in value)
    return False


def inconclusive_report(
    text: FalsifierText,
    expect: str,
    substituted: str,
    noise: Mapping[str, Mapping[str, Any]],
    observations: Mapping[str, Any],
) -> str:
    lines = [f"INCONCLUSIVE {text.label}: the measurement's noise leaves the bound undecided"]
    lines.append(f"  expect:       {expect}")
    lines.append(f"  with values:  {substituted}")
    for name, entry in sorted(noise.items()):
        low, high = entry["interval"]
        lines.append(
            f"  {name} = {observations.get(name)!r}, within [{low:.6g}, {high:.6g}]: {_dump(entry['figures'])}"
        )
    lines.append("  neither survived nor falsified: rerun on a quieter machine (the figures above say how busy it was)")
    return "\n".join(lines)


def judge(
    expect: str,
    env: Mapping[str, Any],
    text: FalsifierText,
    observations: Mapping[str, Any],
    allow_nonfinite: Sequence[str] = (),
    noise: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Verdict, str]:
    """Evaluate ``expect`` over ``env``: survived, falsified, inconclusive, or error when it cannot
    be evaluated.

    A NaN makes every comparison false, so ``not (loss > 3)`` would *survive* a NaN loss: an
    observation the expression reads that is NaN or infinite is an ``error``, unless the contract
    lists it in ``allow_nonfinite``.  Observations measured with an interval (``noise``) are
    judged at every end of their intervals too (:func:`pv.noise.decides`): when the ends disagree
    the verdict is ``inconclusive``."""
    try:
        parsed = expr.parse(expect)
    except expr.ExprError as exc:
        return Verdict.ERROR, f"ERROR {text.label}: expect {expect!r} could not be evaluated: {exc}"
    bad = sorted(
        n for n in parsed.names if n in observations and n not in allow_nonfinite and _nonfinite(observations[n])
    )
    if bad:
        shown = ", ".join(f"{n} = {observations[n]!r}" for n in bad)
        return Verdict.ERROR, (
            f"ERROR {text.label}: non-finite observation(s) {shown}: a NaN or infinity makes comparisons "
            "meaningless; the measurement failed (list the name in allow_nonfinite if it may be)"
        )
    read = {n: e for n, e in (noise or {}).items() if n in parsed.names}
    try:
        held = decides(parsed.holds, env, {n: e["interval"] for n, e in read.items()})
    except (expr.ExprError, ValueError) as exc:
        return Verdict.ERROR, f"ERROR {text.label}: expect {expect!r} could not be evaluated: {exc}"
    if held is None:
        return Verdict.INCONCLUSIVE, inconclusive_report(text, expect, parsed.substitute(env), read, observations)
    if held:
        return Verdict.SURVIVED, ""
    return Verdict.FALSIFIED, falsified_report(text, expect, parsed.substitute(env), observations)


def _stack_of(thread: threading.Thread, limit: int = 12) -> str:
    """The innermost ``limit`` frames of a running thread, below the harness' own wrapper."""

    frame = sys._current_frames().get(thread.ident) if thread.ident is not None else None
    if frame is None:
        return ""
    frames: list[traceback.FrameSummary] = list(traceback.extract_stack(frame))
    wrapper = [i for i, f in enumerate(frames) if f.filename == __file__ and f.name == "target"]
    if wrapper:  # threading's bootstrap and the wrapper tell the reader nothing
        frames = frames[wrapper[-1] + 1 :]
    return "".join(traceback.format_list(frames[-limit:])).rstrip()


def _format_exception(exc: BaseException) -> str:

    # The first frame is the harness' thread wrapper; the reader needs the checker's frames.
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
    return "".join(traceback.format_exception(type(exc), exc, tb)).rstrip()


def evaluate_call(
    func: Callable[..., Any],
    kwargs: Mapping[str, Any],
    *,
    observes: Sequence[str],
    expect: str,
    params: Mapping[str, Any],
    text: FalsifierText,
    timeout_s: float | None,
    seed: int,
    isolation: str = "thread",
    allow_nonfinite: Sequence[str] = (),
) -> Evaluation:
    """Seed, call the checker with a deadline, check its observations and judge ``expect``."""
    try:
        seed_everything(seed)
    except Exception as exc:  # an unseeded run would not be reproducible: not a measurement
        return Evaluation(Verdict.ERROR, message=f"ERROR {text.label}: seeding failed: {type(exc).__name__}: {exc}")
    if isolation == "process":
        outcome = call_in_process(func, kwargs, timeout_s)
    else:
        outcome = call_with_timeout(func, kwargs, timeout_s)
    d = outcome.duration_s
    if outcome.timed_out:
        how = "its process group was killed" if outcome.killed else "abandoned, still running"
        message = f"ERROR {text.label}: checker timed out after {timeout_s:g} s ({how})"
        if outcome.stack:
            message += "\nwhere it was at the deadline (innermost last):\n" + outcome.stack
        return Evaluation(Verdict.ERROR, message=message, duration_s=d)
    if outcome.skip_reason is not None:
        return Evaluation(Verdict.SKIPPED, message=outcome.skip_reason, duration_s=d, skip_reason=outcome.skip_reason)
    if outcome.error_text:
        return Evaluation(
            Verdict.ERROR,
            message=f"ERROR {text.label}: the checker failed (an error, not a falsification)\n" + outcome.error_text,
            duration_s=d,
        )
    if outcome.error is not None:
        if _is_skip(outcome.error):
            reason = str(getattr(outcome.error, "msg", outcome.error))
            return Evaluation(Verdict.SKIPPED, message=reason, duration_s=d, skip_reason=reason)
        return Evaluation(
            Verdict.ERROR,
            message=f"ERROR {text.label}: the checker raised (an error, not a falsification)\n"
            + _format_exception(outcome.error),
            duration_s=d,
        )
    obs, problems, noise = normalise_observations(outcome.value, observes)
    if problems:
        return Evaluation(
            Verdict.ERROR,
            observations=obs,
            message=f"ERROR {text.label}: malformed observations: " + "; ".join(problems),
            duration_s=d,
        )
    verdict, message = judge(expect, {**params, **obs}, text, obs, allow_nonfinite, noise)
    return Evaluation(verdict, observations=obs, message=message, duration_s=d, noise=noise)


def _is_skip(exc: BaseException) -> bool:
    # A checker may call pytest.skip() when it discovers at run time that it cannot measure.
    mod = sys.modules.get("_pytest.outcomes")
    skipped = getattr(mod, "Skipped", None) if mod is not None else None
    return skipped is not None and isinstance(exc, skipped)


@contextlib.contextmanager
def fault_env(name: str) -> Iterator[None]:
    """Also put the fault in ``PV_FAULTS`` so that subprocesses a checker starts inherit it."""
    old = os.environ.get(FAULTS_ENV_VAR)
    names = [n for n in (old or "").split(",") if n.strip()]
    os.environ[FAULTS_ENV_VAR] = ",".join([*names, name])
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(FAULTS_ENV_VAR, None)
        else:
            os.environ[FAULTS_ENV_VAR] = old


def run_mutant(mutant: str, run: Callable[[], Evaluation], allowed: Sequence[str] | None = None) -> MutantResult:
    """Run ``run`` with the mutant's fault switched on; the mutant is killed iff it is falsified.

    The fault is switched on only for the block and off again however ``run`` ends, including an
    exception escaping it.
    """
    try:
        registry, name = resolve_mutant(mutant, allowed)
    except LookupError as exc:
        message = f"{BROKEN_REFERENCE}: mutant {mutant!r} cannot be resolved: {exc}"
        return MutantResult(mutant=mutant, verdict=Verdict.ERROR, message=message)
    with registry.enabled(name), fault_env(name):
        ev = run()
    if ev.verdict is Verdict.FALSIFIED:
        message = "killed"
    elif ev.verdict is Verdict.INCONCLUSIVE:
        message = f"mutant {mutant} run inconclusive: the noise left the bound undecided\n{ev.message}".rstrip()
    elif ev.verdict is Verdict.SURVIVED:
        message = f"VACUOUS: the prediction survived the mutant {mutant}; this falsifier cannot detect that fault"
    else:
        message = f"mutant {mutant} was not killed: its run ended in {ev.verdict.value}\n{ev.message}".rstrip()
    return MutantResult(mutant=mutant, verdict=ev.verdict, observations=ev.observations, message=message)
