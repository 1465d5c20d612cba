//! What a prepared container's child interpreter imports before the code
//! arrives. While the code is unknown (the model is still writing) that is
//! the policy's fixed list (`sandbox.preload`, default [`DEFAULT_PRELOAD`]);
//! once the code is known, it is exactly the heavy modules the code imports
//! ([`preload_for`]), so code that imports nothing heavy never waits for a
//! preload it does not use.
//!
//! [`DEFAULT_PRELOAD`]: super::DEFAULT_PRELOAD

/// The image's packages whose import takes noticeable time (tenths of a
/// second to seconds: pandas, numpy, matplotlib, the data-file stack and the
/// analyst's instruments: scipy.stats, statsmodels and scikit-learn take
/// 0.5–1.5 s each to import).
/// Only these are preloaded for known code; the standard library loads in
/// milliseconds and is left to the code.
pub const HEAVY_PACKAGES: &[&str] = &[
    "pandas",
    "numpy",
    "matplotlib",
    "duckdb",
    "fastparquet",
    "openpyxl",
    "PIL",
    "scipy",
    "statsmodels",
    "sklearn",
    "seaborn",
];

/// The preload for code whose imports are known (as the static check
/// resolved them: the verdict's `imports()`): those of the heavy
/// packages, in the code's order, each once. `policy`: the policy's fixed
/// preload; empty means the policy turned preloading off, and nothing is
/// preloaded for known code either.
pub fn preload_for(imports: &[String], policy: &[String]) -> Vec<String> {
    if policy.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for m in imports {
        let top = m.split('.').next().unwrap_or_default();
        if HEAVY_PACKAGES.contains(&top) && !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

/// Heavy packages that load others of them: importing the first loads the
/// rest anyway.
const LOADS: &[(&str, &[&str])] = &[
    ("pandas", &["numpy"]),
    ("matplotlib", &["numpy", "PIL"]),
    ("fastparquet", &["pandas", "numpy"]),
    ("scipy", &["numpy"]),
    ("sklearn", &["numpy", "scipy"]),
    ("statsmodels", &["pandas", "numpy", "scipy"]),
    ("seaborn", &["pandas", "numpy", "matplotlib", "PIL"]),
];

/// The preloaded modules the code did not need (by top-level package,
/// neither imported by the code nor loaded by a package it imported): time
/// the code waited for these was spent on something it does not use.
/// `imports`: the top-level modules the code imported (`audit.imports`).
pub(crate) fn unused<'a>(preloaded: &'a [String], imports: &[String]) -> Vec<&'a str> {
    let needed = |top: &str| {
        imports.iter().any(|i| {
            i == top
                || LOADS
                    .iter()
                    .any(|(p, loads)| p == i && loads.contains(&top))
        })
    };
    preloaded
        .iter()
        .filter(|m| !needed(m.split('.').next().unwrap_or_default()))
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn known_code_preloads_only_its_heavy_imports() {
        let fixed = strs(&["pandas", "numpy", "matplotlib.pyplot"]);
        assert!(preload_for(&strs(&["json", "math"]), &fixed).is_empty());
        assert_eq!(
            preload_for(
                &strs(&["json", "pandas", "matplotlib.pyplot", "pandas", "duckdb"]),
                &fixed
            ),
            strs(&["pandas", "matplotlib.pyplot", "duckdb"])
        );
        // The analyst's instruments are heavy too, submodule and all.
        assert_eq!(
            preload_for(
                &strs(&[
                    "scipy.stats",
                    "sklearn.ensemble",
                    "statsmodels.formula.api",
                    "seaborn"
                ]),
                &fixed
            ),
            strs(&[
                "scipy.stats",
                "sklearn.ensemble",
                "statsmodels.formula.api",
                "seaborn"
            ])
        );
        // A policy that preloads nothing preloads nothing for known code.
        assert!(preload_for(&strs(&["pandas"]), &[]).is_empty());
    }

    #[test]
    fn unused_preloads_are_those_the_code_did_not_import() {
        let pre = strs(&["pandas", "numpy", "matplotlib.pyplot"]);
        assert_eq!(
            unused(&pre, &strs(&["json", "pandas"])),
            vec!["matplotlib.pyplot"]
        );
        assert_eq!(
            unused(&pre, &strs(&["json"])),
            vec!["pandas", "numpy", "matplotlib.pyplot"]
        );
        assert!(unused(&pre, &strs(&["pandas", "numpy", "matplotlib"])).is_empty());
        // numpy comes with pandas: no wait for it is wasted.
        assert!(unused(&pre, &strs(&["json", "pandas", "matplotlib"])).is_empty());
        assert_eq!(
            unused(&pre, &strs(&["numpy"])),
            vec!["pandas", "matplotlib.pyplot"]
        );
        // seaborn loads pandas and matplotlib; statsmodels loads pandas.
        assert!(unused(&pre, &strs(&["seaborn"])).is_empty());
        assert_eq!(
            unused(&pre, &strs(&["statsmodels"])),
            vec!["matplotlib.pyplot"]
        );
    }
}
