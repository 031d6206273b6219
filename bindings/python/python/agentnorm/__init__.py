"""agentnorm: the NDJSON streams of coding-agent CLIs as one event vocabulary, in process.

The parser is the agentnorm Rust library (no subprocess). Events are plain dicts, exactly as
``agentnorm`` writes them as NDJSON (see the contract in the project's SPEC and
``agentnorm.schema()``); the ``.pyi`` stubs type them as TypedDicts.

    import agentnorm
    for ev in agentnorm.read("session.jsonl"):
        if ev["type"] == "output_delta":
            print(ev["text"], end="")

Bad input never raises: it becomes ``unknown`` events, as in the CLI. Unreadable inputs and
invalid arguments raise ``OSError`` subclasses and ``ValueError`` with the CLI's messages.
"""

from ._native import Events, Normalizer, detect, read, schema, usage

__all__ = ["Events", "Normalizer", "detect", "read", "schema", "usage"]
__version__ = "0.1.0"
