"""Reports on stored runs: the run summary (:mod:`.summary`), flat rows (:mod:`.rows`), exports
(:mod:`.exports`, :mod:`.garak`), the self-contained HTML report (:mod:`.html`) and the
comparison of two runs (:mod:`.compare`). Importing this package imports none of them."""
