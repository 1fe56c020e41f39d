"""``python -m gui``: the same as the ``gboost-gui`` command."""
import sys

from gui.app import main

sys.exit(main())
