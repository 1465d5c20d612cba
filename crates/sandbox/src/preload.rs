//! What a prepared container's child interpreter imports before the code
//! arrives. While the code is unknown (the model is still writing) that is
//! what the question calls for, then the policy's fixed list
//! (`sandbox.preload`, default [`DEFAULT_PRELOAD`]; [`preload_while_writing`]);
//! once the code is known, it is exactly the heavy modules the code imports
//! ([`preload_for`]), so code that imports nothing heavy never waits for a
//! preload it does not use. The child stops at the next module once the code
//! has arrived (`runner.py`), so a guess the code does not use costs at most
//! the module being imported when it came.
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

/// Words of a question that call for heavy modules: (words, modules). A
/// word is matched case-insensitively at the start of a word of the text,
/// with punctuation and hyphens read as spaces (`t-test` is `t test`); a
/// trailing `*` matches any ending (`classif*`: classifier,
/// classification), otherwise the word must end there. Every module is
/// under [`HEAVY_PACKAGES`] (a test holds that).
const CALLED_FOR: &[(&[&str], &[&str])] = &[
    // Tests, p-values and significance: SciPy's statistics.
    (
        &[
            "p value*",
            "pvalue*",
            "t test*",
            "ttest*",
            "significan*",
            "hypothes*",
            "chi square*",
            "chi2",
            "anova",
            "mann whitney",
            "wilcoxon",
            "kruskal",
            "pearson*",
            "spearman*",
            "kendall*",
            "normality",
            "shapiro",
            "confidence interval*",
            "statistical test*",
            "scipy*",
        ],
        &["scipy.stats"],
    ),
    // Regression summaries, time-series models: statsmodels.
    (
        &[
            "regress*",
            "ols",
            "least squares",
            "r squared",
            "r2",
            "arima*",
            "sarima*",
            "forecast*",
            "seasonal*",
            "autocorrelation*",
            "glm",
            "logit",
            "mixed model*",
            "statsmodels*",
        ],
        &["statsmodels.api"],
    ),
    // Models, splits and their scores: scikit-learn, by the part asked for.
    (
        &[
            "classif*",
            "random forest*",
            "decision tree*",
            "gradient boost*",
            "feature importance*",
            "ensemble*",
        ],
        &["sklearn.ensemble", "sklearn.model_selection"],
    ),
    (
        &[
            "predict*",
            "machine learning",
            "cross valid*",
            "train test",
            "test split*",
            "train and test",
            "holdout",
            "hyperparameter*",
            "grid search*",
            "scikit*",
            "sklearn*",
        ],
        &["sklearn.model_selection"],
    ),
    (
        &["logistic regression*", "linear model*", "ridge", "lasso"],
        &["sklearn.linear_model"],
    ),
    (
        &["cluster*", "k means", "kmeans", "dbscan"],
        &["sklearn.cluster"],
    ),
    (
        &["pca", "principal component*", "dimensionality reduction"],
        &["sklearn.decomposition"],
    ),
    (
        &[
            "accuracy",
            "precision",
            "recall",
            "f1*",
            "roc",
            "auc",
            "confusion matri*",
        ],
        &["sklearn.metrics"],
    ),
    // Statistical charts: seaborn.
    (
        &[
            "seaborn",
            "heatmap*",
            "heat map*",
            "pairplot*",
            "pair plot*",
            "violin*",
            "box plot*",
            "boxplot*",
            "kde",
            "density plot*",
            "regplot",
            "swarm plot*",
            "swarmplot*",
            "joint plot*",
            "statistical chart*",
            "statistical plot*",
        ],
        &["seaborn"],
    ),
];

/// The text as words: lowercase ASCII letters and digits, everything else a
/// single space, with a space at either end.
fn words(text: &str) -> String {
    let mut out = String::from(" ");
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

/// Where `text` (as [`words`]) first has the word `pattern` (see
/// [`CALLED_FOR`]).
fn find_word(text: &str, pattern: &str) -> Option<usize> {
    let (stem, open) = match pattern.strip_suffix('*') {
        Some(stem) => (stem, true),
        None => (pattern, false),
    };
    let needle = words(stem);
    text.find(if open { needle.trim_end() } else { &needle })
}

/// The heavy modules a question's words call for ([`CALLED_FOR`]), each
/// once, in the order the question first mentions them.
pub(crate) fn called_for(text: &str) -> Vec<String> {
    let text = words(text);
    let mut found: Vec<(usize, &str)> = Vec::new();
    for (patterns, modules) in CALLED_FOR {
        if let Some(at) = patterns.iter().filter_map(|p| find_word(&text, p)).min() {
            found.extend(modules.iter().map(|m| (at, *m)));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    let mut out: Vec<String> = Vec::new();
    for (_, m) in found {
        if !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    out
}

/// The preload for code the model is still writing — the one rule for it:
/// the heavy modules of `earlier` (the last attempt's imports, for a
/// repair) and those the question's words call for (`hints`: the goal, and
/// the plan when there is one; [`called_for`]) first, then the policy's
/// fixed list; each once. A module goes in by a hint only when the policy
/// would let the code import it (`may_import`: the static check's verdict
/// on `import <module>`), so a guess never loads what the code could not
/// use. `policy`: the policy's fixed list; empty turns preloading off, and
/// nothing is guessed either.
pub fn preload_while_writing(
    hints: &str,
    earlier: &[String],
    policy: &[String],
    may_import: impl Fn(&str) -> bool,
) -> Vec<String> {
    if policy.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    let guessed = preload_for(earlier, policy)
        .into_iter()
        .chain(called_for(hints))
        .filter(|m| may_import(m));
    for m in guessed.chain(policy.iter().cloned()) {
        if !out.contains(&m) {
            out.push(m);
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
    fn a_questions_words_call_for_the_analysis_stack() {
        // Tests and p-values: scipy.stats; punctuation and case do not matter.
        assert_eq!(
            called_for("Is the difference SIGNIFICANT? Give the p-value of a t-test."),
            strs(&["scipy.stats"])
        );
        // A classifier: scikit-learn's ensembles and splits; a regression
        // summary: statsmodels; in the order the question names them.
        assert_eq!(
            called_for("Fit an OLS regression, then train a random forest classifier"),
            strs(&[
                "statsmodels.api",
                "sklearn.ensemble",
                "sklearn.model_selection"
            ])
        );
        assert_eq!(
            called_for("cross-validation accuracy of a k-means clustering"),
            strs(&[
                "sklearn.model_selection",
                "sklearn.metrics",
                "sklearn.cluster"
            ])
        );
        assert_eq!(
            called_for("a heatmap of the correlations (seaborn)"),
            strs(&["seaborn"])
        );
        // Whole words: "ols" is not in "tools", "roc" not in "rock"; plain
        // questions call for nothing.
        assert!(called_for("which tools rock the most downloads per day?").is_empty());
        assert!(called_for("sum the sales per region and chart them").is_empty());
        assert!(called_for("").is_empty());
        // Every module a word calls for is a heavy one.
        for (_, modules) in CALLED_FOR {
            for m in *modules {
                let top = m.split('.').next().unwrap();
                assert!(HEAVY_PACKAGES.contains(&top), "{m}");
            }
        }
    }

    #[test]
    fn the_preload_while_the_model_writes_puts_what_is_called_for_first() {
        let fixed = strs(&["pandas", "numpy", "matplotlib.pyplot"]);
        let any = |_: &str| true;
        // Nothing called for: the policy's list as it is.
        assert_eq!(
            preload_while_writing("sum the sales per region", &[], &fixed, any),
            fixed
        );
        // A classifier: scikit-learn first, the fixed list after it.
        assert_eq!(
            preload_while_writing("train a random forest classifier", &[], &fixed, any),
            strs(&[
                "sklearn.ensemble",
                "sklearn.model_selection",
                "pandas",
                "numpy",
                "matplotlib.pyplot"
            ])
        );
        // A repair: the earlier code's heavy imports first, then the words.
        assert_eq!(
            preload_while_writing(
                "p-value of the difference",
                &strs(&["json", "pandas", "statsmodels.formula.api"]),
                &fixed,
                any
            ),
            strs(&[
                "pandas",
                "statsmodels.formula.api",
                "scipy.stats",
                "numpy",
                "matplotlib.pyplot"
            ])
        );
        // Never beyond what the policy lets the code import.
        let no_sklearn = |m: &str| !m.starts_with("sklearn");
        assert_eq!(
            preload_while_writing(
                "random forest and a t-test",
                &strs(&["sklearn.svm"]),
                &fixed,
                no_sklearn
            ),
            strs(&["scipy.stats", "pandas", "numpy", "matplotlib.pyplot"])
        );
        // A policy that preloads nothing guesses nothing either.
        assert!(preload_while_writing("random forest", &[], &[], any).is_empty());
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
