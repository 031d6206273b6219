"""The committed .pyi stubs are the ones scripts/gen_stubs.py writes from today's schema."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def test_stubs_are_current():
    out = subprocess.run([sys.executable, str(HERE / "scripts" / "gen_stubs.py"), "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_stubs_name_every_event_type():
    import agentnorm

    stub = (HERE / "python" / "agentnorm" / "__init__.pyi").read_text()
    for variant in agentnorm.schema()["oneOf"]:
        assert f'type: Literal["{variant["properties"]["type"]["const"]}"]' in stub
