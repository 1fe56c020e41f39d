"""``python -m gboost``: the ``gboost`` command."""
import sys

from gboost.cli import main

sys.exit(main())
