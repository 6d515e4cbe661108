"""Attacks built on probes: converters that transform any probe's prompts
(:mod:`.converters`), attacker strategies that use a second model (:mod:`.strategies`), the
probe wrapper both are built on (:mod:`.wrapper`), the scan's auxiliary models (:mod:`.pool`) and
the wiring from scan options to wrapped probes (:mod:`.wiring`)."""
