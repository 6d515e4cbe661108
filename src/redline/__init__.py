"""redline: probe large language models for vulnerabilities, unsafe behaviour and bias.

The pipeline reads top-down: :mod:`redline.attempt` (the data model), :mod:`redline.generators`
(models), :mod:`redline.probes` (what to ask), :mod:`redline.detectors` (scores of outputs) and
:mod:`redline.lve` (LVE checkers), :mod:`redline.evaluation` (evaluators, metrics, marks),
:mod:`redline.store`, :mod:`redline.engine.pipeline` (running it all) and :mod:`redline.report`.
"""

__version__ = "0.1.0"
