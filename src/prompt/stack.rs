//! What the system prompt says about the sandbox image's libraries: their
//! versions (from the image's labels, libraries only), and when to use the
//! file tools (DuckDB, Parquet, Excel) and the analyst's instruments (SciPy,
//! statsmodels, scikit-learn, seaborn). A library is offered only when the
//! image has it and the policy allows importing it, and only when the
//! request calls for it: the file tools by the inputs' kinds and sizes, the
//! analysis libraries by the words of the goal, an earlier program or a
//! repair (the preload table's words, [`crate::sandbox::preload_while_writing`]).

use std::collections::BTreeMap;

use super::PromptContext;
use crate::model::excerpt;
use crate::policy::allows;
use crate::sandbox::{DataStack, Limits, STACK_LIBRARIES, preload_while_writing};
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

/// An input at least this big brings the DuckDB paragraph ("more than a
/// few MB": pandas holds such a file several times over in memory).
pub(super) const DUCKDB_FROM_BYTES: u64 = 8 << 20;

/// The lowercase words of `text` (letters and digits).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// True when an input's name ends with one of `exts` (lowercase, no dot).
fn has_input(ctx: &PromptContext, exts: &[&str]) -> bool {
    ctx.input_names.iter().any(|n| {
        let lower = n.to_ascii_lowercase();
        exts.iter().any(|e| lower.ends_with(&format!(".{e}")))
    })
}

/// True when the request calls for DuckDB: a big input, a Parquet input,
/// SQL or DuckDB named in the hints, or a repair of a run out of memory.
fn calls_for_duckdb(ctx: &PromptContext, hints: &str) -> bool {
    let named = words(hints)
        .iter()
        .any(|w| matches!(w.as_str(), "duckdb" | "sql"));
    ctx.input_sizes.iter().any(|s| *s >= DUCKDB_FROM_BYTES)
        || has_input(ctx, &["parquet"])
        || named
        // The repair problem of an OOM-killed run (`problems::outcome_problem`).
        || hints.contains("the code ran out of memory")
}

/// When the image has them, the policy allows them and the request calls
/// for them: DuckDB for big files and SQL aggregations (with settings that
/// keep it inside the container), Parquet and Excel through pandas (by the
/// inputs' kinds, or the hints naming the format). Nothing otherwise.
pub(super) fn file_tools_lines(ctx: &PromptContext, hints: &str) -> String {
    let mut out = String::new();
    let said = words(hints);
    let says = |ws: &[&str]| said.iter().any(|w| ws.contains(&w.as_str()));
    if let Some(v) = offered(ctx, "duckdb").filter(|_| calls_for_duckdb(ctx, hints)) {
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
        if let Some(v) = offered(ctx, "fastparquet")
            .filter(|_| has_input(ctx, &["parquet"]) || says(&["parquet", "fastparquet"]))
        {
            out.push_str(&format!(
                "- Parquet: pandas.read_parquet(path, columns=[...]) reads it with fastparquet {v} (pyarrow \
is not installed); read only the columns you need.\n"
            ));
        }
        if let Some(v) = offered(ctx, "openpyxl").filter(|_| {
            has_input(ctx, &["xlsx", "xlsm", "xls"]) || says(&["excel", "xlsx", "openpyxl"])
        }) {
            out.push_str(&format!(
                "- Excel: pandas.read_excel(path, sheet_name=...) reads .xlsx with openpyxl {v} \
(sheet_name=None gives every sheet as a dict of DataFrames); old binary .xls files cannot be read.\n"
            ));
        }
    }
    out
}

/// Words beyond the preload table's that call for a library's paragraph
/// (each matched at the start of a word, hyphens read as spaces): methods a
/// question names whose library call the paragraph gives — `zscore`,
/// `skew`, `linregress` in scipy.stats, scalers and encoders in
/// scikit-learn. Measured on the analysis benchmark's questions
/// (`benches/prompt_size.rs`): without them, 4 of the 41 programs that
/// import an analysis library would have had no paragraph for it.
const MORE_WORDS: &[(&[&str], &str)] = &[
    (
        &[
            "z score",
            "zscore",
            "skew",
            "kurtosis",
            "linear regression",
            "linregress",
            "normally distributed",
            "normal distribution",
        ],
        "scipy",
    ),
    (
        &[
            "scaling",
            "scaler",
            "normaliz",
            "standardiz",
            "label encod",
            "one hot",
            "min max",
        ],
        "sklearn",
    ),
];

/// The top-level packages the words of `hints` call for: by the preload
/// table (which words call for SciPy, statsmodels, scikit-learn or
/// seaborn; a program's `import sklearn` is such a word), then by
/// [`MORE_WORDS`].
fn called_for(hints: &str) -> Vec<String> {
    // The preload rule lists the words' modules before the policy's fixed
    // list; the one-entry list "" marks where they end.
    let mut out: Vec<String> = preload_while_writing(hints, &[], &[String::new()], |_| true)
        .into_iter()
        .take_while(|m| !m.is_empty())
        .map(|m| m.split('.').next().unwrap_or_default().to_string())
        .collect();
    let text = format!(" {} ", words(hints).join(" "));
    for (patterns, lib) in MORE_WORDS {
        if patterns.iter().any(|p| text.contains(&format!(" {p}"))) {
            out.push(lib.to_string());
        }
    }
    out
}

/// What a question asks of the data beyond a figure, read from its
/// phrasing (words near each other, not one keyword): each need brings the
/// notes of the libraries that answer it, whatever library words it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// An effect, an association or a difference with its significance
    /// ("each factor's effect with its p-value"): a regression's
    /// coefficients with their p-values (statsmodels).
    Effect,
    /// What drives an outcome ("what drove survival", "which factors
    /// matter most"): a model of the outcome on the candidate factors
    /// (statsmodels for effects, scikit-learn for predictive importance).
    Drivers,
    /// Values ahead in time ("forecast", "next quarter"): statsmodels' time
    /// series models.
    Forecast,
}

/// Words (each matched at the start of a word) that name an effect or an
/// association of one variable with another.
const EFFECT_WORDS: &[&str] = &[
    "effect",
    "impact",
    "influenc",
    "associat",
    "relationship",
    "coefficient",
    "factor",
    "predictor",
    "affect",
    "contribut",
    "depend on",
    "odds",
];
/// Words that ask for the significance of what is found.
const SIGNIFICANCE_WORDS: &[&str] = &[
    "p value",
    "pvalue",
    "significan",
    "confidence interval",
    "standard error",
    "by chance",
];
/// Phrases that ask what drives an outcome.
const DRIVER_WORDS: &[&str] = &[
    "what drove",
    "what drives",
    "what drive",
    "driver",
    "driving",
    "which factor",
    "what factor",
    "factors that",
    "factors behind",
    "what explains",
    "what explained",
    "explains the",
    "determinant",
    "what predicts",
    "what predicted",
    "why some",
    "key factor",
    "most important factor",
    "what made",
    "what makes",
];
/// Phrases that ask for values ahead in time.
const FORECAST_WORDS: &[&str] = &[
    "forecast",
    "projection",
    "projected",
    "extrapolat",
    "next month",
    "next quarter",
    "next year",
    "next week",
    "coming month",
    "coming week",
    "coming quarter",
    "months ahead",
    "weeks ahead",
    "predict next",
    "predict the next",
    "future value",
];

/// The needs the phrasing of `hints` states ([`Need`]).
fn needs(hints: &str) -> Vec<Need> {
    let text = format!(" {} ", words(hints).join(" "));
    let has = |ws: &[&str]| ws.iter().any(|p| text.contains(&format!(" {p}")));
    let mut out = Vec::new();
    if has(EFFECT_WORDS) && has(SIGNIFICANCE_WORDS) {
        out.push(Need::Effect);
    }
    if has(DRIVER_WORDS) {
        out.push(Need::Drivers);
    }
    if has(FORECAST_WORDS) {
        out.push(Need::Forecast);
    }
    out
}

/// The libraries the needs of `hints` call for, beside those its words name.
fn needed_libraries(needs: &[Need]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for n in needs {
        let libs: &[&str] = match n {
            Need::Effect | Need::Forecast => &["statsmodels"],
            Need::Drivers => &["statsmodels", "sklearn"],
        };
        out.extend(
            libs.iter()
                .filter(|l| !out.contains(*l))
                .collect::<Vec<_>>(),
        );
    }
    out
}

/// The notes of a need beyond the libraries' own paragraphs, when its
/// library is offered.
fn need_lines(ctx: &PromptContext, needs: &[Need]) -> String {
    let mut out = String::new();
    let statsmodels = offered(ctx, "statsmodels").is_some();
    if needs.contains(&Need::Drivers) && statsmodels {
        let importance = if offered(ctx, "sklearn").is_some() {
            " A scikit-learn model's permutation_importance (sklearn.inspection) can rank the factors by predictive power; say that it is not an effect size."
        } else {
            ""
        };
        out.push_str(&format!(
            "- What drives an outcome: fit one model of the outcome on the candidate factors together (smf.logit for a 0/1 outcome such as survival, smf.ols for a quantity; C(col) for a category), and report each factor's effect (coefficient, or odds ratio np.exp(fit.params) for logit) with its p-value and confidence interval, largest first; drop rows with missing values in the model's columns and say how many.{importance}\n"
        ));
    }
    if needs.contains(&Need::Forecast) && statsmodels {
        out.push_str(
            "- A forecast: put the series on a regular DatetimeIndex (df.set_index(date).asfreq(\"MS\") or resample), fit statsmodels.tsa.holtwinters.ExponentialSmoothing(series, trend=\"add\", seasonal=\"add\", seasonal_periods=12) (seasonal=None with fewer than two full seasons) and take fit.forecast(steps); report the horizon, the method and the last observed value beside the forecast.\n",
        );
    }
    out
}

/// When the image has them, the policy allows them and the hints call for
/// them (by their words, or by what the question needs, [`Need`]): which
/// library a reviewer expects for tests and p-values (SciPy),
/// regression summaries (statsmodels), models and splits (scikit-learn) and
/// statistical charts (seaborn), so the model calls them instead of
/// re-implementing numerical algorithms from memory.
pub(super) fn analysis_lines(ctx: &PromptContext, hints: &str) -> String {
    let needs = needs(hints);
    let mut called = called_for(hints);
    called.extend(needed_libraries(&needs).into_iter().map(str::to_string));
    let offered = |lib: &str| offered(ctx, lib).filter(|_| called.iter().any(|c| c == lib));
    let mut out = String::new();
    if let Some(v) = offered("scipy") {
        out.push_str(&format!(
            "- SciPy {v}: use scipy.stats for statistical tests and p-values (ttest_ind, ttest_rel, \
mannwhitneyu, pearsonr, spearmanr, shapiro, chi2_contingency, f_oneway, linregress) and \
scipy.optimize for fitting; never re-implement a distribution or a test by hand.\n"
        ));
    }
    if let Some(v) = offered("statsmodels") {
        out.push_str(&format!(
            "- statsmodels {v}: use it for regressions whose coefficients, p-values or R² are asked \
for (`import statsmodels.formula.api as smf; fit = smf.ols(\"y ~ x1 + C(group)\", data=df).fit()`, \
smf.logit for a 0/1 outcome) and take the numbers from fit.params, fit.pvalues, fit.rsquared and \
fit.conf_int() instead of printing fit.summary().\n"
        ));
    }
    if let Some(v) = offered("sklearn") {
        out.push_str(&format!(
            "- scikit-learn {v} (import sklearn): use it for models, preprocessing, metrics and splits; \
pass random_state (e.g. random_state=42) to train_test_split, KFold and every estimator that takes one, \
so the answer is the same on every run. n_jobs changes nothing here: everything runs in one process.\n"
        ));
    }
    if let Some(v) = offered("seaborn") {
        out.push_str(&format!(
            "- seaborn {v}: use it for statistical charts (histplot, boxplot, violinplot, regplot, \
heatmap of a correlation matrix); it draws on matplotlib, so save the figure as above \
(plt.savefig(\"/out/<short_name>.png\", dpi=100)).\n"
        ));
    }
    out.push_str(&need_lines(ctx, &needs));
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
            schema: json!({"type": "object"}),
            data: DataLevel::Preview,
            library_versions: libs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..PromptContext::default()
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
        let every = "a t-test p-value, an OLS regression, a random forest classifier and a seaborn violin plot";
        let s = analysis_lines(&ctx(STACK, &all), every);
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
        let s = analysis_lines(&ctx(STACK, &["pandas.*", "scipy.*"]), every);
        assert!(s.contains("SciPy 1.17.1") && !s.contains("statsmodels") && !s.contains("seaborn"));
        // An image without them (an older lock) gets none, whatever the policy.
        let old = &STACK[..2];
        assert_eq!(analysis_lines(&ctx(old, &all), every), "");
        // The standard-library-only policy gets none.
        assert_eq!(analysis_lines(&ctx(STACK, &[]), every), "");
    }

    #[test]
    fn each_analysis_paragraph_comes_only_with_the_words_that_call_for_it() {
        let all = [
            "pandas.*",
            "scipy.*",
            "statsmodels.*",
            "sklearn.*",
            "seaborn.*",
        ];
        let c = ctx(STACK, &all);
        let paragraphs = |hints: &str| {
            let s = analysis_lines(&c, hints);
            ["SciPy", "statsmodels", "scikit-learn", "seaborn"]
                .into_iter()
                .filter(|lib| s.contains(&format!("- {lib} ")))
                .collect::<Vec<_>>()
        };
        assert!(paragraphs("What is the mean fare per class?").is_empty());
        assert_eq!(
            paragraphs("Is the difference significant (t-test)?"),
            ["SciPy"]
        );
        assert_eq!(
            paragraphs("R squared of an OLS regression"),
            ["statsmodels"]
        );
        assert_eq!(
            paragraphs("train a random forest and report the accuracy"),
            ["scikit-learn"]
        );
        assert_eq!(paragraphs("a heatmap of the correlations"), ["seaborn"]);
        assert_eq!(paragraphs("outliers by their Z-score"), ["SciPy"]);
        assert_eq!(paragraphs("Min-Max scaling of the fare"), ["scikit-learn"]);
        // A repair keeps the paragraph of what the failed program used.
        assert_eq!(
            paragraphs("mean fare\nfrom sklearn.linear_model import LinearRegression\nValueError"),
            ["scikit-learn"]
        );
    }

    /// The examples and paraphrases of them: what the question
    /// needs brings the notes, whether or not it names a library or a method.
    #[test]
    fn the_notes_follow_what_the_question_needs() {
        let all = [
            "pandas.*",
            "scipy.*",
            "statsmodels.*",
            "sklearn.*",
            "seaborn.*",
        ];
        let c = ctx(STACK, &all);
        let notes = |hints: &str| {
            let s = analysis_lines(&c, hints);
            [
                "SciPy",
                "statsmodels",
                "scikit-learn",
                "seaborn",
                "What drives an outcome",
                "A forecast",
            ]
            .into_iter()
            .filter(|lib| s.contains(&format!("- {lib}")))
            .collect::<Vec<_>>()
        };
        // An effect with its significance: statsmodels' regression note.
        for effect in [
            "Report each factor's effect with its p-value.",
            "Does the discount affect revenue, and is that significant?",
            "How strongly is age associated with the fare? Give a confidence interval.",
            "the impact of each channel on conversions, with p values",
        ] {
            assert!(
                notes(effect).contains(&"statsmodels"),
                "{effect}: {:?}",
                notes(effect)
            );
        }
        // A driver analysis: the modelling note (statsmodels and scikit-learn).
        for drivers in [
            "What drove survival?",
            "Which factors matter most for churn?",
            "What explains the differences in salary between teams?",
            "the key factors behind late deliveries",
        ] {
            let n = notes(drivers);
            assert!(
                n.contains(&"What drives an outcome") && n.contains(&"statsmodels"),
                "{drivers}: {n:?}"
            );
        }
        assert!(analysis_lines(&c, "What drove survival?").contains("smf.logit for a 0/1 outcome"));
        // A forecast: statsmodels' time series note.
        for forecast in [
            "Forecast revenue for the next three months.",
            "What will sales be next quarter?",
            "extrapolate the monthly signups",
        ] {
            assert_eq!(notes(forecast), ["statsmodels", "A forecast"], "{forecast}");
        }
        // A plain figure needs none; an effect without significance is a figure too.
        assert!(notes("What is the mean fare per class?").is_empty());
        assert!(notes("total revenue by region, and its effect on the chart colours").is_empty());
        assert!(notes("the project's budget per month").is_empty());
        // A policy without statsmodels gets neither its paragraph nor its notes.
        let s = analysis_lines(
            &ctx(STACK, &["pandas.*", "sklearn.*"]),
            "What drove survival?",
        );
        assert!(
            !s.contains("statsmodels") && !s.contains("What drives"),
            "{s}"
        );
    }

    #[test]
    fn the_file_tools_come_with_the_inputs_kinds_and_sizes() {
        let libs = [
            ("pandas", "2.3.3"),
            ("duckdb", "2.0.1"),
            ("fastparquet", "2026.9.0"),
            ("openpyxl", "3.1.5"),
        ];
        let mut c = ctx(
            &libs,
            &["pandas.*", "duckdb.*", "fastparquet.*", "openpyxl.*"],
        );
        let tools = |c: &PromptContext, hints: &str| {
            let s = file_tools_lines(c, hints);
            ["DuckDB", "Parquet", "Excel"]
                .into_iter()
                .filter(|t| s.contains(&format!("- {t}")))
                .collect::<Vec<_>>()
        };
        c.input_names = vec!["small.csv".into()];
        c.input_sizes = vec![DUCKDB_FROM_BYTES - 1];
        assert!(tools(&c, "mean").is_empty());
        assert_eq!(tools(&c, "the mean, in SQL"), ["DuckDB"]);
        assert_eq!(
            tools(&c, "mean\nthe code ran out of memory (limit 512MiB)"),
            ["DuckDB"]
        );
        c.input_sizes = vec![DUCKDB_FROM_BYTES];
        assert_eq!(tools(&c, "mean"), ["DuckDB"]);
        c.input_names = vec!["a.parquet".into(), "B.XLSX".into()];
        c.input_sizes = vec![10, 10];
        assert_eq!(tools(&c, "mean"), ["DuckDB", "Parquet", "Excel"]);
    }
}
