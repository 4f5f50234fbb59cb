"""The checks kept beside their scenarios, one module per scenario, named as
the scenario's own module in :mod:`chaos.scenarios` and the module its
processes run (``poison``: :mod:`chaos.scenarios.poison` injects,
:mod:`chaos.poison` is the tasks that die, :mod:`chaos.checks.poison` checks).
Each module's ``CHECKS`` are :class:`~chaos.verdict.Check` objects its
scenario carries beside the core ones of :mod:`chaos.checker`;
:mod:`chaos.checks.reruns` serves clock-skew and partition alike, and
:mod:`chaos.checks.follower` the scenarios that run event followers.
"""
