"""``python -m nodehost`` runs the command-line interface."""

from nodehost.cli import main

if __name__ == "__main__":
    main()
