//! What an attribute path of a library really is: a module reached through
//! attributes is the import it is (`sklearn.utils.parallel.joblib` is
//! `joblib`), and a re-export is resolved to its origin
//! (`sklearn.utils.parallel.ThreadpoolController` is threadpoolctl's).
//!
//! The rule with reach is [`suffixes`]: every tail of a resolved dotted name
//! that starts at one of its segments is matched against the denied names as
//! if the code had imported it, so `pandas.io.common.mmap`,
//! `statsmodels.tools.web.webbrowser` or `matplotlib.cbook.subprocess.run`
//! are refused as `mmap`, `webbrowser` and `subprocess.run` are, whichever
//! library imported them. The libraries' own names that merely look like a
//! denied module ([`OWN_NAMES`]: `numpy.select`, `numpy.trace`,
//! `scipy.signal`) are theirs, not the module's.
//!
//! Both tables were read from the sandbox image's libraries (every public
//! module imported, each attribute's value compared with what its name
//! suggests): `scripts/policy-library-names` prints the candidates again
//! for a new image. Of its `OWN` lines only the names whose tail a pattern
//! covers are kept (`trace`, `select`, `signal`, `builtins`; `ndarray.ctypes`
//! and `BitGenerator.cffi` are native handles and stay refused, `types` or
//! `typing` tails cover no pattern); of its `REEXPORT` lines those of
//! threadpoolctl, joblib, importlib and pickle (the rest — pathlib, logging,
//! PIL, dateutil, ... — hand out nothing the policy denies).

/// Public names of the allowed libraries whose last segment is the name of a
/// denied module or pattern root but which are the library's own (a
/// function, a method, its own submodule, or another allowed library's
/// module such as `scipy.signal` re-exported by statsmodels).
const OWN_NAMES: &[&str] = &[
    "duckdb.DuckDBPyRelation.select",
    "duckdb.experimental.spark.DataFrame.select",
    "duckdb.experimental.spark.sql.DataFrame.select",
    "duckdb.experimental.spark.sql.dataframe.DataFrame.select",
    "duckdb.experimental.spark.sql.group.DataFrame.select",
    "duckdb.experimental.spark.sql.session.DataFrame.select",
    "matplotlib.pylab.generic.trace",
    "matplotlib.pylab.ndarray.trace",
    "matplotlib.pylab.select",
    "matplotlib.pylab.trace",
    "numpy.generic.trace",
    "numpy.linalg.trace",
    "numpy.ma.MaskedArray.trace",
    "numpy.ma.core.MaskedArray.trace",
    "numpy.ma.core.masked_array.trace",
    "numpy.ma.core.ndarray.trace",
    "numpy.ma.core.trace",
    "numpy.ma.extras.MaskedArray.trace",
    "numpy.ma.extras.masked_array.trace",
    "numpy.ma.extras.ndarray.trace",
    "numpy.ma.masked_array.trace",
    "numpy.ma.testutils.masked_array.trace",
    "numpy.ma.testutils.ndarray.trace",
    "numpy.ma.trace",
    "numpy.matlib.generic.trace",
    "numpy.matlib.ndarray.trace",
    "numpy.matlib.select",
    "numpy.matlib.trace",
    "numpy.ndarray.trace",
    "numpy.select",
    "numpy.trace",
    "openpyxl.styles.builtins",
    "pandas.HDFStore.select",
    "pandas.compat.numpy.function.ndarray.trace",
    "pandas.io.api.HDFStore.select",
    "pandas.io.pytables.HDFStore.select",
    "pandas.io.pytables.Selection.select",
    "scipy.signal",
    "sklearn.externals.array_api_compat.numpy.generic.trace",
    "sklearn.externals.array_api_compat.numpy.linalg.Array.trace",
    "sklearn.externals.array_api_compat.numpy.linalg.trace",
    "sklearn.externals.array_api_compat.numpy.ndarray.trace",
    "sklearn.externals.array_api_compat.numpy.select",
    "sklearn.externals.array_api_compat.numpy.trace",
    "statsmodels.sandbox.tsa.fftarma.signal",
    "statsmodels.sandbox.tsa.movstat.signal",
    "statsmodels.tsa.arima_process.signal",
    "statsmodels.tsa.filters.filtertools.signal",
    "statsmodels.tsa.varma_process.signal",
];

/// Public re-exports of functions and classes whose origin the policy does
/// not let code import (a re-exported *module* needs no entry: its name is
/// its origin, see [`suffixes`]): `(name in the library, origin)`.
const REEXPORTS: &[(&str, &str)] = &[
    (
        "sklearn.utils.parallel.ThreadpoolController",
        "threadpoolctl.ThreadpoolController",
    ),
    (
        "sklearn.metrics.pairwise.effective_n_jobs",
        "joblib.effective_n_jobs",
    ),
    (
        "sklearn.utils.discovery.import_module",
        "importlib.import_module",
    ),
    (
        "pandas.compat.compressors.PickleBuffer",
        "pickle.PickleBuffer",
    ),
];

/// The origin of `q` when `q` is, or is below, a re-export of
/// [`REEXPORTS`]: `sklearn.utils.parallel.ThreadpoolController.info` →
/// `threadpoolctl.ThreadpoolController.info`.
pub(super) fn origin(q: &str) -> Option<String> {
    REEXPORTS.iter().find_map(|(name, origin)| {
        let rest = q.strip_prefix(name)?;
        (rest.is_empty() || rest.starts_with('.')).then(|| format!("{origin}{rest}"))
    })
}

/// Every tail of the resolved dotted name `q` that starts after its first
/// segment (`a.b.c` → `b.c`, `c`), stopping at a library's own name
/// ([`OWN_NAMES`]): what `q` reaches if a segment is a module the library
/// imported. Names of builtins (`builtins.x`, what an unbound name resolves
/// to) have none.
pub(super) fn suffixes(q: &str) -> impl Iterator<Item = &str> {
    let builtin = q.starts_with("builtins.");
    q.match_indices('.')
        .filter(move |_| !builtin)
        .map_while(move |(i, _)| {
            let next = q[i + 1..].find('.').map_or(q.len(), |j| i + 1 + j);
            (!OWN_NAMES.contains(&&q[..next])).then_some(&q[i + 1..])
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_stop_at_a_librarys_own_name_and_reexports_resolve() {
        assert_eq!(
            suffixes("sklearn.utils.parallel.joblib.load").collect::<Vec<_>>(),
            [
                "utils.parallel.joblib.load",
                "parallel.joblib.load",
                "joblib.load",
                "load"
            ]
        );
        assert_eq!(suffixes("numpy.select").count(), 0);
        assert_eq!(
            suffixes("statsmodels.tsa.arima_process.signal.lfilter").collect::<Vec<_>>(),
            [
                "tsa.arima_process.signal.lfilter",
                "arima_process.signal.lfilter"
            ]
        );
        assert_eq!(suffixes("builtins.signal").count(), 0);
        assert_eq!(suffixes("os").count(), 0);
        assert_eq!(
            origin("sklearn.utils.parallel.ThreadpoolController.info").as_deref(),
            Some("threadpoolctl.ThreadpoolController.info")
        );
        assert_eq!(origin("sklearn.utils.parallel.ThreadpoolControllerX"), None);
    }
}
