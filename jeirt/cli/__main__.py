"""`python -m jeirt.cli`: `jeirt.cli.main` without the console entry's Ctrl-C handling (`python -m jeirt`
and the `jeirt` script have it, see jeirt/__main__.py)."""

import sys

from jeirt.cli import main

sys.exit(main())
