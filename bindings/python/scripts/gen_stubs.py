#!/usr/bin/env python3
"""Writes python/agentnorm/__init__.pyi: the API's signatures and every event type as a
TypedDict, generated from the JSON Schema of the events (``agentnorm.schema()``, the same one
``agentnorm schema`` prints), so that the stubs cannot drift from the contract.

    python scripts/gen_stubs.py          # rewrite the stubs
    python scripts/gen_stubs.py --check  # exit 1 when they are not current (the tests run this)

Fields the writer omits when they have no value (SPEC: null appears only inside tool input)
are ``NotRequired`` and not ``None``-able.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
STUB = HERE / "python" / "agentnorm" / "__init__.pyi"

API = '''
class Normalizer:
    """An incremental normalizer: feed bytes in any chunks, get the events they completed."""

    def __init__(
        self,
        dialect: Optional[DialectName] = None,
        redact: bool = False,
        raw: bool = False,
        source: Optional[str] = None,
        observed_at: bool = True,
        max_line_bytes: Optional[int] = None,
    ) -> None: ...
    def feed(self, data: Union[bytes, bytearray, memoryview]) -> List[Event]: ...
    def finish(self) -> List[Event]: ...

class Events(Iterator[Event]):
    """The events of files, folders or a binary file object (see ``read``)."""

    def __iter__(self) -> "Events": ...
    def __next__(self) -> Event: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Events": ...
    def __exit__(self, *args: object) -> bool: ...

def read(
    source: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]], BinaryIO],
    *,
    dialect: Optional[DialectName] = None,
    redact: bool = False,
    raw: bool = False,
    observed_at: bool = True,
    max_line_bytes: Optional[int] = None,
    name: Optional[str] = None,
) -> Events: ...
def usage(
    paths: Union[None, str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]] = None,
    by: Literal["session", "project", "model", "day", "week", "month", "block"] = "session",
    since: Optional[str] = None,
    until: Optional[str] = None,
    dialect: Optional[DialectName] = None,
) -> List[UsageRow]: ...
def detect(path: Union[str, "os.PathLike[str]"]) -> Union[Optional[DialectName], Dict[str, Optional[DialectName]]]: ...
def schema() -> Dict[str, Any]: ...

class UsageRow(TypedDict):
    """One row of ``usage`` (``agentnorm usage --json``); the totals row has ``totals: True``."""

    totals: NotRequired[bool]
    session_id: NotRequired[str]
    model: NotRequired[str]
    day: NotRequired[str]
    dialect: NotRequired[DialectName]
    input: NotRequired[int]
    cache_read: NotRequired[int]
    cache_write: NotRequired[int]
    output: NotRequired[int]
    reasoning: NotRequired[int]
    total: NotRequired[int]
    requests: NotRequired[int]
    cost_usd: NotRequired[float]
    cost_source: NotRequired[Literal["reported", "estimated"]]
    source: NotRequired[str]
'''


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.replace("-", "_").split("_"))


class Gen:
    def __init__(self, schema: dict):
        self.schema = schema
        self.defs = schema.get("$defs", {})
        self.out: list[str] = []
        self.done: set[str] = set()

    def ref_name(self, ref: str) -> str:
        name = ref.rsplit("/", 1)[-1]
        return {"Dialect": "DialectName", "AnyJson": "Any", "Text": "str"}.get(name, name)

    def ty(self, s, drop_null: bool = False) -> str:
        if s is True or s == {}:
            return "Any"
        if "$ref" in s:
            return self.ref_name(s["$ref"])
        if "const" in s:
            return f"Literal[{json.dumps(s['const'])}]"
        if "enum" in s:
            return "Literal[" + ", ".join(json.dumps(v) for v in s["enum"]) + "]"
        for key in ("anyOf", "oneOf"):
            if key in s:
                return self.union([self.ty(x) for x in s[key]], drop_null)
        t = s.get("type")
        if isinstance(t, list):
            return self.union([self.ty({**s, "type": x}) for x in t], drop_null)
        if t == "string":
            return "str"
        if t == "integer":
            return "int"
        if t == "number":
            return "float"
        if t == "boolean":
            return "bool"
        if t == "null":
            return "None"
        if t == "array":
            return f"List[{self.ty(s.get('items', True))}]"
        if t == "object":
            if "additionalProperties" in s:
                return f"Dict[str, {self.ty(s['additionalProperties'])}]"
            return "Dict[str, Any]"
        return "Any"

    def union(self, parts: list, drop_null: bool) -> str:
        seen = []
        for p in parts:
            if p == "None" and drop_null:
                continue
            if p not in seen:
                seen.append(p)
        if len(seen) == 1:
            return seen[0]
        if all(p.startswith("Literal[") for p in seen):
            return "Literal[" + ", ".join(p[len("Literal[") : -1] for p in seen) + "]"
        return "Union[" + ", ".join(seen) + "]"

    def doc(self, text, indent: str) -> list:
        if not text:
            return []
        text = text.strip().replace('"""', "'''").replace("\\", "\\\\")
        lines = text.splitlines()
        if len(lines) == 1:
            return [f'{indent}"""{lines[0]}"""', ""]
        return [f'{indent}"""{lines[0]}'] + [f"{indent}{l}".rstrip() for l in lines[1:]] + [f'{indent}"""', ""]

    def typed_dict(self, name: str, s: dict) -> None:
        lines = [f"class {name}(TypedDict):"]
        lines += self.doc(s.get("description"), "    ")
        required = set(s.get("required", []))
        props = s.get("properties", {})
        for key in sorted(props, key=lambda k: (k != "type", k)):
            t = self.ty(props[key], drop_null=key not in required)
            if key not in required:
                t = f"NotRequired[{t}]"
            lines.append(f"    {key}: {t}")
        if not props:
            lines.append("    pass")
        self.out += lines + ["", ""]

    def run(self) -> str:
        for name, d in sorted(self.defs.items()):
            pyname = self.ref_name(f"#/$defs/{name}")
            if pyname in ("Any", "str"):
                continue
            if d.get("type") == "object" and "properties" in d:
                self.typed_dict(pyname, d)
            else:
                self.out += [f"{pyname} = {self.ty(d)}"] + self.doc(d.get("description"), "") + [""]
        names = []
        for v in self.schema["oneOf"]:
            name = camel(v["properties"]["type"]["const"]) + "Event"
            names.append(name)
            self.typed_dict(name, v)
        self.out += ["Event = Union[", *[f"    {n}," for n in names], "]", '"""Any event of the contract."""', ""]
        head = [
            "# Generated by scripts/gen_stubs.py from agentnorm.schema(); do not edit.",
            "import os",
            "from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Sequence, Union",
            "",
            "from typing_extensions import Literal, NotRequired, TypedDict",
            "",
            "__version__: str",
            "",
        ]
        return "\n".join(head + self.out) + API


def main() -> int:
    import agentnorm

    text = Gen(agentnorm.schema()).run()
    if "--check" in sys.argv:
        if not STUB.exists() or STUB.read_text() != text:
            print(f"{STUB} is not current: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    STUB.write_text(text)
    print(f"wrote {STUB}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
