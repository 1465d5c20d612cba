//! Benchmark: the static check of a realistic ~20 KB data-analysis script.
//! Target: under 5 ms. Run with `cargo bench --bench policy_check`.

use std::time::{Duration, Instant};

use compute_bot::policy::{Decision, Policy, check_code};

const HEADER: &str = r#"
from __future__ import annotations
import json
import math
import os
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

OUT = "/out"
DATA = "/data"


@dataclass
class Summary:
    name: str
    count: int
    mean: float
    stdev: float
    tags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"name": self.name, "count": self.count, "mean": self.mean, "stdev": self.stdev}
"#;

const BLOCK: &str = r#"

def load_{i}(path: str = f"{DATA}/sales_{i}.csv") -> pd.DataFrame:
    df = pd.read_csv(path, parse_dates=["date"])
    df = df.dropna(subset=["amount"]).assign(month=lambda d: d["date"].dt.to_period("M"))
    df["amount"] = df["amount"].clip(lower=0)
    return df


def summarize_{i}(df: pd.DataFrame) -> list[Summary]:
    out = []
    for (region, product), g in df.groupby(["region", "product"]):
        values = g["amount"].to_numpy()
        if len(values) < 2:
            continue
        out.append(Summary(f"{region}/{product}", len(values), float(values.mean()), float(values.std(ddof=1))))
    return sorted(out, key=lambda s: -s.mean)


def trend_{i}(df: pd.DataFrame) -> dict[str, float]:
    monthly = df.pivot_table(index="month", values="amount", aggfunc="sum")
    x = np.arange(len(monthly))
    if len(x) < 2:
        return {"slope": 0.0, "intercept": 0.0}
    slope, intercept = np.polyfit(x, monthly["amount"].to_numpy(), 1)
    return {"slope": float(slope), "intercept": float(intercept)}


def plot_{i}(df: pd.DataFrame) -> str:
    fig, ax = plt.subplots(figsize=(8, 4))
    df.groupby("month")["amount"].sum().plot(ax=ax, marker="o")
    ax.set_title(f"Monthly sales {i}")
    path = f"{OUT}/sales_{i}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def classify_{i}(value: float) -> str:
    match value:
        case v if v < 0:
            return "negative"
        case 0:
            return "zero"
        case v if (half := v / 2) > 100:
            return f"large ({half:.1f})"
        case _:
            return "small"
"#;

const FOOTER: &str = r#"

def main() -> None:
    results = {}
    counts = Counter()
    for i in range(3):
        results[str(i)] = {"ok": True, "when": datetime(2024, 1, 1).isoformat()}
        counts[i % 2] += 1
    with open(os.path.join(OUT, "result.json"), "w") as fh:
        json.dump({"results": results, "counts": dict(counts), "pi": math.pi}, fh)
    print(statistics.mean([1, 2, 3]), timedelta(days=1))


if __name__ == "__main__":
    main()
"#;

fn script() -> String {
    let mut s = String::from(HEADER);
    let mut i = 0;
    while s.len() < 20 * 1024 - FOOTER.len() {
        s.push_str(&BLOCK.replace("{i}", &i.to_string()));
        i += 1;
    }
    s.push_str(FOOTER);
    s
}

fn main() {
    let policy = Policy::default();
    let code = script();
    let warm = check_code(&policy, &code);
    assert_eq!(
        warm.decision,
        Decision::Allow,
        "the benchmark script must be allowed: {:?}",
        warm.findings
    );
    let iterations = 300;
    let mut times: Vec<Duration> = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let t = Instant::now();
        let v = check_code(&policy, std::hint::black_box(&code));
        times.push(t.elapsed());
        std::hint::black_box(v);
    }
    times.sort();
    let mut parse_times: Vec<Duration> = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            let parsed = ruff_python_parser::parse_module(std::hint::black_box(&code));
            std::hint::black_box(parsed.is_ok());
            t.elapsed()
        })
        .collect();
    parse_times.sort();
    println!(
        "  (of which ruff parsing alone: median {:.3} ms)",
        parse_times[iterations / 2].as_secs_f64() * 1e3
    );
    let median = times[iterations / 2];
    let p95 = times[iterations * 95 / 100];
    println!(
        "policy_check: {} bytes, {} lines, {iterations} iterations: median {:.3} ms, p95 {:.3} ms, min {:.3} ms, max {:.3} ms (target < 5 ms)",
        code.len(),
        code.lines().count(),
        median.as_secs_f64() * 1e3,
        p95.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[iterations - 1].as_secs_f64() * 1e3,
    );
}
