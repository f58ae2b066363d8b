"""A checker's reply with several problems lists each one: a key that is not a string does not
hide the observations after it, and every missing declared observation is named."""

from __future__ import annotations

from pv.run_checker import normalise_observations


def test_a_key_that_is_not_a_string_hides_nothing_after_it() -> None:
    observations, problems, _ = normalise_observations({1: 0.5, "loss": 2.0, "ratio": object()}, ["loss"])
    assert observations == {"loss": 2.0}
    assert problems == [
        "observation key 1 is not a string",
        "observation 'ratio': a builtins.object is not a JSON scalar or list",
    ]


def test_every_missing_declared_observation_is_named() -> None:
    _, problems, _ = normalise_observations({"loss": 2.0}, ["loss", "accuracy", "steps"])
    assert problems == ["missing declared observation(s): accuracy, steps"]
