"""The pull-request review: each falsifier's base against its head, its history, and where to show it.

- :mod:`pv.review.runs` reads every run a contract's evidence holds, in the folder and in its git
  history, and finds the runs that measured a given commit's code (the base);
- :mod:`pv.review.changed` says which falsifiers a change touches (contract, checker, code under test);
- :mod:`pv.review.compare` turns base, head and history into rows: values, Δ, bound usage, noise,
  mutant, verdict, and a class (regressed, improved, unchanged, new, missing);
- :mod:`pv.review.markdown`, :mod:`pv.review.html` and :mod:`pv.review.mte` write it for a comment,
  a self-contained page and mutation dashboards; :mod:`pv.review.github` publishes it on GitHub.
"""
