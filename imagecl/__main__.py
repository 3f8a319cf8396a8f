"""`python -m imagecl ...` behaves exactly like `imagecl ...`."""
import sys

from .cli import main

sys.exit(main())
