"""``python -m gboost.cli``: the ``gboost`` command."""
import sys

from gboost.cli import main

sys.exit(main())
