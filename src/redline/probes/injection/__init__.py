"""Prompt-injection probes: an instruction hidden in data the model processes
(``injection.HiddenInData``, :mod:`~redline.probes.injection.hidden`), direct injection and
system-prompt extraction (``injection.Direct``, ``injection.SystemPromptExtraction``,
:mod:`~redline.probes.injection.direct`), and indirect injection in e-mails, web pages and
retrieved context (``injection.Email``, ``injection.WebPage``, ``injection.RetrievedContext``,
:mod:`~redline.probes.injection.indirect`)."""
