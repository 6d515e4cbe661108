"""``python -m redline`` and the ``redline`` console script: :func:`redline.cli.main.main`."""

from redline.cli.main import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
