//! What the system prompt says about the sandbox image's libraries: their
//! versions (from the image's labels, libraries only), and when to use the
//! file tools (DuckDB, Parquet, Excel) and the analyst's instruments (SciPy,
//! statsmodels, scikit-learn, seaborn). A library is offered only when the
//! image has it and the policy allows importing it.

use std::collections::BTreeMap;

use super::PromptContext;
use crate::model::excerpt;
use crate::policy::allows;
use crate::sandbox::{DataStack, Limits, STACK_LIBRARIES};
use crate::units::ByteSize;

/// The library versions in an image's labels: `org.compute-bot.python=3.11.2`
/// becomes `python → 3.11.2`. Only the libraries of [`STACK_LIBRARIES`]: the
/// image's bookkeeping labels (`lock-sha256`, `recipe-sha256`, `recipe`, ...)
/// are no libraries.
pub(crate) fn library_versions(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    DataStack::from_labels(labels).versions().clone()
}

/// `- Installed in the sandbox: Python 3.11.2, pandas 2.3.3, ....` (the known
/// libraries, in [`STACK_LIBRARIES`] order, by the names people know them
/// by), or nothing when none is known.
pub(super) fn versions_line(v: &BTreeMap<String, String>) -> String {
    let list: Vec<String> = STACK_LIBRARIES
        .iter()
        .filter_map(|(key, name)| {
            v.get(*key)
                .map(|ver| format!("{name} {}", excerpt(ver, 40)))
        })
        .collect();
    if list.is_empty() {
        return String::new();
    }
    format!(
        "- Installed in the sandbox: {}. Write code for exactly these versions (no newer APIs).\n",
        list.join(", ")
    )
}

/// Python and the data stack need about this much of the container's memory
/// beside DuckDB's own: `import duckdb, pandas` peaks at 106 MiB in the
/// sandbox image (109 MiB with matplotlib.pyplot), plus the runner and headroom.
const DUCKDB_OVERHEAD: ByteSize = ByteSize::mib(160);

/// The `memory_limit` the prompt gives DuckDB: what is left of the container's
/// memory after Python and after `/tmp` (a tmpfs, so DuckDB's spill files
/// there count against the same limit), at least an eighth of the memory.
/// DuckDB's own default (80% of the container's limit) leaves the container
/// at its limit and stalling instead of spilling.
pub(super) fn duckdb_memory_limit(l: &Limits) -> ByteSize {
    let left = l
        .memory
        .bytes()
        .saturating_sub(l.tmpfs.bytes())
        .saturating_sub(DUCKDB_OVERHEAD.bytes());
    let mib = left.max(l.memory.bytes() / 8) >> 20;
    ByteSize::mib(mib.max(16))
}

/// The version of `lib` (a label key: the import name) when the image has it
/// and the policy allows importing it.
fn offered<'a>(ctx: &'a PromptContext, lib: &str) -> Option<&'a String> {
    let allowed = ctx.allowed_modules.iter().any(|p| allows(p, lib));
    ctx.library_versions.get(lib).filter(|_| allowed)
}

/// When the image has them and the policy allows them: DuckDB for big files
/// and SQL aggregations (with settings that keep it inside the container),
/// Parquet and Excel through pandas. Nothing for an image or a policy
/// without them.
pub(super) fn file_tools_lines(ctx: &PromptContext) -> String {
    let mut out = String::new();
    if let Some(v) = offered(ctx, "duckdb") {
        let l = &ctx.limits;
        out.push_str(&format!(
            "- DuckDB {v} is installed. For CSV, Parquet or JSON files of more than a few MB, or \
GROUP BY aggregations and joins over them, prefer it to pandas: it streams the files and keeps only the \
result in memory. Connect with `con = duckdb.connect(config={{\"memory_limit\": \"{mem}\", \"threads\": {threads}, \
\"temp_directory\": \"/tmp/duckdb\"}})` and `con.execute(\"SET enable_progress_bar = false\")` (spill files \
only under /tmp, which is small and counts against the memory limit; the progress bar would garble stdout), query the files in SQL (`con.sql(\"SELECT day, sum(amount) FROM read_csv('/data/x.csv') \
GROUP BY day\")`, read_parquet(...), read_json(...)) and fetch only the small result with `.df()` or \
`.fetchall()` (DuckDB 2 relations have no fetchone()). CSV, Parquet and JSON are built in; no extension \
can be installed and no remote file read. Use pandas for small files, reshaping and plots.\n",
            mem = duckdb_memory_limit(l),
            threads = (l.cpus.ceil() as u64).max(1),
        ));
    }
    if ctx.allowed_modules.iter().any(|p| allows(p, "pandas")) {
        if let Some(v) = offered(ctx, "fastparquet") {
            out.push_str(&format!(
                "- Parquet: pandas.read_parquet(path, columns=[...]) reads it with fastparquet {v} (pyarrow \
is not installed); read only the columns you need.\n"
            ));
        }
        if let Some(v) = offered(ctx, "openpyxl") {
            out.push_str(&format!(
                "- Excel: pandas.read_excel(path, sheet_name=...) reads .xlsx with openpyxl {v} \
(sheet_name=None gives every sheet as a dict of DataFrames); old binary .xls files cannot be read.\n"
            ));
        }
    }
    out
}

/// When the image has them and the policy allows them: which library a
/// reviewer expects for tests and p-values (SciPy), regression summaries
/// (statsmodels), models and splits (scikit-learn) and statistical charts
/// (seaborn), so the model calls them instead of re-implementing numerical
/// algorithms from memory.
pub(super) fn analysis_lines(ctx: &PromptContext) -> String {
    let mut out = String::new();
    if let Some(v) = offered(ctx, "scipy") {
        out.push_str(&format!(
            "- SciPy {v}: use scipy.stats for statistical tests and p-values (ttest_ind, ttest_rel, \
mannwhitneyu, pearsonr, spearmanr, shapiro, chi2_contingency, f_oneway, linregress) and \
scipy.optimize for fitting; never re-implement a distribution or a test by hand.\n"
        ));
    }
    if let Some(v) = offered(ctx, "statsmodels") {
        out.push_str(&format!(
            "- statsmodels {v}: use it for regressions whose coefficients, p-values or R² are asked \
for (`import statsmodels.formula.api as smf; fit = smf.ols(\"y ~ x1 + C(group)\", data=df).fit()`, \
smf.logit for a 0/1 outcome) and take the numbers from fit.params, fit.pvalues, fit.rsquared and \
fit.conf_int() instead of printing fit.summary().\n"
        ));
    }
    if let Some(v) = offered(ctx, "sklearn") {
        out.push_str(&format!(
            "- scikit-learn {v} (import sklearn): use it for models, preprocessing, metrics and splits; \
pass random_state (e.g. random_state=42) to train_test_split, KFold and every estimator that takes one, \
so the answer is the same on every run. n_jobs changes nothing here: everything runs in one process.\n"
        ));
    }
    if let Some(v) = offered(ctx, "seaborn") {
        out.push_str(&format!(
            "- seaborn {v}: use it for statistical charts (histplot, boxplot, violinplot, regplot, \
heatmap of a correlation matrix); it draws on matplotlib, so save the figure as above \
(plt.savefig(\"/out/<short_name>.png\", dpi=100)).\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::DataLevel;
    use serde_json::json;

    fn ctx(libs: &[(&str, &str)], allowed: &[&str]) -> PromptContext {
        PromptContext {
            goal: "Is the mean of a different between groups?".into(),
            allowed_modules: allowed.iter().map(|s| s.to_string()).collect(),
            limits: Limits::default(),
            inputs: vec![],
            schema: json!({"type": "object"}),
            extra_context: None,
            data: DataLevel::Preview,
            input_names: vec![],
            library_versions: libs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            earlier: None,
        }
    }

    const STACK: &[(&str, &str)] = &[
        ("python", "3.11.2"),
        ("pandas", "2.3.3"),
        ("scipy", "1.17.1"),
        ("statsmodels", "0.15.0"),
        ("sklearn", "1.9.1"),
        ("seaborn", "0.13.2"),
    ];

    #[test]
    fn the_versions_line_lists_libraries_only() {
        let labels: BTreeMap<String, String> = [
            ("org.compute-bot.sandbox", "python"),
            ("org.compute-bot.recipe", "debian-bookworm"),
            ("org.compute-bot.python", "3.11.2"),
            ("org.compute-bot.pandas", "2.3.3"),
            ("org.compute-bot.sklearn", "1.9.1"),
            ("org.compute-bot.lock-sha256", "0f3a9c"),
            ("org.compute-bot.recipe-sha256", "77be01"),
            ("org.compute-bot.managed", "true"),
            ("maintainer", "x"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let v = library_versions(&labels);
        assert_eq!(
            v.keys().collect::<Vec<_>>(),
            ["pandas", "python", "sklearn"],
            "{v:?}"
        );
        let line = versions_line(&v);
        assert_eq!(
            line,
            "- Installed in the sandbox: Python 3.11.2, pandas 2.3.3, scikit-learn 1.9.1. Write code \
             for exactly these versions (no newer APIs).\n"
        );
        assert!(!line.contains("sha256") && !line.contains("recipe"));
        assert_eq!(versions_line(&BTreeMap::new()), "");
    }

    #[test]
    fn the_instruments_are_offered_with_their_versions_when_image_and_policy_have_them() {
        let all = [
            "pandas.*",
            "scipy.*",
            "statsmodels.*",
            "sklearn.*",
            "seaborn.*",
        ];
        let s = analysis_lines(&ctx(STACK, &all));
        for needle in [
            "SciPy 1.17.1: use scipy.stats for statistical tests and p-values",
            "statsmodels 0.15.0: use it for regressions",
            "fit.pvalues",
            "scikit-learn 1.9.1 (import sklearn)",
            "random_state",
            "n_jobs changes nothing",
            "seaborn 0.13.2: use it for statistical charts",
        ] {
            assert!(s.contains(needle), "{needle:?} missing:\n{s}");
        }
        // A policy that allows only some of them gets advice for those only.
        let s = analysis_lines(&ctx(STACK, &["pandas.*", "scipy.*"]));
        assert!(s.contains("SciPy 1.17.1") && !s.contains("statsmodels") && !s.contains("seaborn"));
        // An image without them (an older lock) gets none, whatever the policy.
        let old = &STACK[..2];
        assert_eq!(analysis_lines(&ctx(old, &all)), "");
        // The standard-library-only policy gets none.
        assert_eq!(analysis_lines(&ctx(STACK, &[])), "");
    }
}
