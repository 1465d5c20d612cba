# expect: allow
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Optional

@dataclass(frozen=True)
class Row:
    name: str
    value: float
    tags: list[str] = field(default_factory=list)
    note: Optional[str] = None

    def __post_init__(self) -> None:
        pass

rows = [Row("a", 1.0), Row("b", 2.0, ["x"])]
print(sum(r.value for r in rows), Row.__name__)
