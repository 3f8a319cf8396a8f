"""Commands other than `serve` work without the tuning service's web stack (starlette, uvicorn)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# starlette and uvicorn made unimportable, then the CLI run as `python -m imagecl` would
_WITHOUT_SERVICE = """
import sys
sys.modules["starlette"] = None
sys.modules["uvicorn"] = None
from imagecl.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_commands_run_without_the_service_dependencies():
    result = subprocess.run([sys.executable, "-c", _WITHOUT_SERVICE, "check", str(EXAMPLES / "sobel.icl")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ModuleNotFoundError" not in result.stderr and "starlette" not in result.stderr
