"""`python -m gateway.cli`: the `hindsight` command."""

import sys

from gateway.cli.main import main

sys.exit(main())
