"""``python -m l4sim`` is the ``l4sim`` command."""

from l4sim.cli import main

if __name__ == "__main__":
    main()
