"""Harmful-request probes: ``harmful.Requests``, the mixed set across eight harm categories
(:mod:`~redline.probes.harmful.requests`), and one probe per topic, ``harmful.Malware``,
``harmful.WeaponsDualUse``, ``harmful.SelfHarm``, ``harmful.HarassmentHate``
(:mod:`~redline.probes.harmful.topics`)."""
