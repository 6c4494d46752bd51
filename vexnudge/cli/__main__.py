import sys

from vexnudge.cli import main

sys.exit(main())
