"""Fixtures shared by pv's tests: the toy project the plugin runs (:mod:`tests.pv.toy`, and with
launched checkers :mod:`tests.pv.launch_toy`) and the fixture trees, CLI and git repository the
everyday commands run on (:mod:`tests.pv.cli_trees`)."""

from tests.pv.cli_trees import cli, repo, tree
from tests.pv.launch_toy import launch_toy
from tests.pv.toy import toy

__all__ = ["cli", "launch_toy", "repo", "toy", "tree"]
