# expect: allow
from __future__ import annotations
from typing import Literal, Optional
import pandas as pd

def load(path: "str", kind: Literal["csv", "json"] = "csv") -> "pd.DataFrame":
    return pd.read_csv(path)

def pick(df: "Optional[pd.DataFrame]", cols: "list[str] | None" = None) -> "dict[str, float]":
    return {}
