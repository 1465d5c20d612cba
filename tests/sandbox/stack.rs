//! The analyst's instruments in the real sandbox image under the default
//! hardened container (runc in CI: the generated seccomp allowlist, read-only root,
//! uid 10001, no network, the default limits but a longer deadline): SciPy,
//! statsmodels, scikit-learn and seaborn give the answers a reviewer expects;
//! what they load themselves (joblib, threadpoolctl → ctypes) loads while the
//! code's own import of it is refused at run time; `n_jobs=-1` and joblib's
//! process backends run in the one process; and the default memory leaves
//! room for a 14 MiB CSV beside pandas, scipy.stats and scikit-learn.
//!
//! `COMPUTE_BOT_SANDBOX_IMAGE` names another image to try (a candidate
//! build); the default is the bot's default image.

use compute_bot::policy::{Decision, Policy, check_code};
use compute_bot::sandbox::{InputFile, Limits, Outcome, RunStatus};
use serde_json::Value;

/// [`crate::run_allowed`], and nothing refused or started a process.
async fn run_allowed(code: &str, inputs: Vec<InputFile>, cpus: f64) -> Outcome {
    let o = crate::run_allowed(code, inputs, cpus).await;
    assert!(o.audit.refused.is_empty(), "{:?}", o.audit.refused);
    assert!(
        o.audit.subprocess_attempts.is_empty(),
        "{:?}",
        o.audit.subprocess_attempts
    );
    o
}

fn last_json(o: &Outcome) -> Value {
    let line = o.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {}", o.stdout))
}

fn close(v: &Value, want: f64, tol: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() <= tol)
}

/// Data with known answers: `y = 3 + 2·x` exactly for the regression, two
/// groups whose means differ by 10 standard deviations for the test, a
/// label that is `x > 50` for the classifier.
const ANALYSIS: &str = r#"import json
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import statsmodels.formula.api as smf
from scipy import optimize, stats
from scipy.sparse import diags
from scipy.sparse.linalg import spsolve
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score, train_test_split
x = np.arange(100, dtype=float)
df = pd.DataFrame({"x": x, "y": 3 + 2 * x, "label": (x > 50).astype(int),
                   "group": np.where(x % 2 == 0, "a", "b")})
df["z"] = np.where(df.group == "a", 0.0, 10.0) + np.sin(x) * 0.5
t = stats.ttest_ind(df[df.group == "a"].z, df[df.group == "b"].z)
fit = smf.ols("y ~ x", data=df).fit()
root = optimize.brentq(lambda v: v**2 - 2, 0, 2)
u = spsolve(diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(50, 50), format="csc"), np.ones(50))
Xtr, Xte, ytr, yte = train_test_split(df[["x"]], df.label, test_size=0.3, random_state=42)
clf = LogisticRegression(random_state=42).fit(Xtr, ytr)
cv = cross_val_score(LogisticRegression(random_state=42), df[["x"]], df.label, cv=5)
ax = sns.histplot(df, x="z", hue="group")
ax.figure.savefig("/out/z_by_group.png", dpi=60)
print(json.dumps({"t_p": float(t.pvalue), "slope": float(fit.params["x"]),
                  "intercept": float(fit.params["Intercept"]), "r2": float(fit.rsquared),
                  "root": root, "u_finite": bool(np.isfinite(u).all()),
                  "acc": float(clf.score(Xte, yte)), "cv": len(cv), "cv_min": float(cv.min())}))
"#;

#[tokio::test]
async fn scipy_statsmodels_sklearn_and_seaborn_answer_under_the_default_policy_and_container() {
    let o = run_allowed(ANALYSIS, vec![], 1.0).await;
    let v = last_json(&o);
    assert!(v["t_p"].as_f64().unwrap() < 1e-30, "{v}");
    assert!(close(&v["slope"], 2.0, 1e-9), "{v}");
    assert!(close(&v["intercept"], 3.0, 1e-7), "{v}");
    assert!(close(&v["r2"], 1.0, 1e-12), "{v}");
    assert!(close(&v["root"], std::f64::consts::SQRT_2, 1e-9), "{v}");
    assert_eq!(v["u_finite"], true);
    assert!(v["acc"].as_f64().unwrap() >= 0.9, "{v}");
    assert_eq!(v["cv"], 5);
    let chart = o
        .artifacts
        .iter()
        .find(|a| a.name == "z_by_group.png")
        .expect("the seaborn chart was saved");
    assert!(chart.bytes.starts_with(b"\x89PNG"), "not a PNG");
    for lib in ["scipy", "statsmodels", "sklearn", "seaborn"] {
        assert!(
            o.audit.imports.iter().any(|i| i == lib),
            "{lib} not in {:?}",
            o.audit.imports
        );
    }
}

/// scikit-learn's `n_jobs=-1`, `n_jobs=4` and an explicit loky backend all
/// run in the code's own process (JOBLIB_MULTIPROCESSING=0 in every
/// container): the same scores as `n_jobs=1`, no process started, no
/// refusal — on one CPU and on two (where loky would otherwise start
/// workers that each load the stack again under the one memory limit).
/// Asking for the loky backend by name gets joblib's own warning that it
/// falls back.
#[tokio::test]
async fn n_jobs_and_joblib_process_backends_run_in_the_one_process() {
    let code = r#"import json, os, warnings
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import cross_val_score
from sklearn.utils.parallel import Parallel, delayed
X, y = make_classification(n_samples=300, random_state=0)
scores = {}
for n_jobs in (1, -1, 4):
    rf = RandomForestClassifier(n_estimators=20, random_state=0, n_jobs=n_jobs)
    scores[str(n_jobs)] = cross_val_score(rf, X, y, cv=3, n_jobs=n_jobs).tolist()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    pids = Parallel(n_jobs=2, backend="loky")(delayed(os.getpid)() for _ in range(4))
print(json.dumps({"scores": scores, "pids": sorted(set(pids)), "me": os.getpid(),
                  "warnings": [str(w.message) for w in caught]}))
"#;
    for cpus in [1.0, 2.0] {
        let o = run_allowed(code, vec![], cpus).await;
        let v = last_json(&o);
        let s = &v["scores"];
        assert_eq!(s["1"].as_array().unwrap().len(), 3, "{v}");
        assert_eq!(s["-1"], s["1"], "cpus {cpus}: {v}");
        assert_eq!(s["4"], s["1"], "cpus {cpus}: {v}");
        assert_eq!(v["pids"], serde_json::json!([v["me"]]), "cpus {cpus}: {v}");
        let warned = v["warnings"].as_array().unwrap();
        assert!(
            warned.iter().any(|w| w.as_str().is_some_and(|w| w
                .contains("'loky' is not available")
                && w.contains("falling back"))),
            "{v}"
        );
    }
}

/// What the libraries load for themselves (threadpoolctl → ctypes, scikit-
/// learn → joblib) is in `sys.modules`, yet the code's own import of it —
/// and of multiprocessing — is refused at run time (the static check refuses
/// it before: `deny_ctypes_beside_threadpoolctl`,
/// `deny_multiprocessing_beside_sklearn`, `deny_joblib_load_model` in the
/// policy corpus; this code goes around it).
#[tokio::test]
async fn the_code_may_not_import_what_the_libraries_load_for_themselves() {
    let code = r#"import json, sys
import sklearn.linear_model
from sklearn import show_versions
loaded = sorted(m for m in ("ctypes", "joblib", "threadpoolctl") if m in sys.modules)
refused = {}
try:
    import ctypes
    refused["ctypes"] = False
except PermissionError as e:
    refused["ctypes"] = str(e)
try:
    import joblib
    refused["joblib"] = False
except PermissionError as e:
    refused["joblib"] = str(e)
try:
    from multiprocessing import Pool
    refused["multiprocessing"] = False
except PermissionError as e:
    refused["multiprocessing"] = str(e)
print(json.dumps({"loaded": loaded, "refused": refused}))
"#;
    assert_eq!(
        check_code(&Policy::default(), code).decision,
        Decision::Deny,
        "the static check refuses these imports first"
    );
    let o = crate::run_with_default_rules(code, vec![], 1.0).await;
    assert_eq!(o.status, RunStatus::Ok, "{}", o.stderr);
    let v = last_json(&o);
    assert_eq!(
        v["loaded"],
        serde_json::json!(["ctypes", "joblib", "threadpoolctl"]),
        "{v}"
    );
    for m in ["ctypes", "joblib", "multiprocessing"] {
        let why = v["refused"][m]
            .as_str()
            .unwrap_or_else(|| panic!("{m}: {v}"));
        assert!(why.contains(&format!("import of {m}")), "{why}");
        assert!(
            o.audit.refused.iter().any(|r| r.contains(m)),
            "{:?}",
            o.audit.refused
        );
    }
}

/// A 14 MiB CSV (in the `/data` tmpfs, charged to the container's memory)
/// read by pandas, a t-test and a fitted logistic regression under the
/// default limits: it fits in the default memory (it does not in 192 MiB,
/// and peaked at 226 MiB of the 256 MiB default before issue 23).
#[tokio::test]
async fn a_14_mib_csv_with_scipy_and_sklearn_fits_the_default_memory() {
    let mut csv = String::from("id,group,age,income,score,hours,churned\n");
    let mut i: u64 = 0;
    while csv.len() < 14 << 20 {
        let g = ["a", "b", "c", "d"][(i % 4) as usize];
        let (age, income) = (18 + i % 62, 30_000 + (i * 7_919) % 40_000);
        let (score, hours, churned) = ((i * 37) % 1000, 20 + (i * 13) % 40, (i % 10 < 3) as u8);
        csv.push_str(&format!(
            "{i},{g},{age},{income}.25,{score}.5,{hours}.75,{churned}\n"
        ));
        i += 1;
    }
    let code = r#"import json
import pandas as pd
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
df = pd.read_csv("/data/big.csv")
t = stats.ttest_ind(df[df.group == "a"].income, df[df.group == "b"].income)
X, y = df[["age", "income", "score", "hours"]], df.churned
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=42)
m = LogisticRegression(max_iter=200).fit(Xtr, ytr)
print(json.dumps({"rows": len(df), "p": float(t.pvalue), "acc": float(m.score(Xte, yte))}))
"#;
    let o = run_allowed(code, vec![InputFile::new("big.csv", csv.into_bytes())], 1.0).await;
    let v = last_json(&o);
    assert_eq!(v["rows"].as_u64(), Some(i), "{v}");
    assert!(v["p"].as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)));
    assert!(
        o.resources.peak_memory_bytes.unwrap_or(0) < Limits::default().memory.bytes(),
        "{:?}",
        o.resources
    );
}
