"""The lint gates, one module each; :mod:`pv.lint.runner` runs them in order."""
