"""``python -m nodehost`` runs the command-line interface."""

from nodehost.entry import main

if __name__ == "__main__":
    main()
