//! Exact code in steps: the code cells of `# %%` percent-format text (the
//! cell markers of Jupytext, VS Code and Spyder) or of an `.ipynb`
//! notebook, in order, and the one program they make when joined.
//!
//! Parsing only: what runs them decides whether they run one by one or
//! joined ([`joined`]).

use serde::Deserialize;

/// The largest `.ipynb` read: beyond it the notebook is refused (its outputs
/// make most of a big notebook; clearing them shrinks it).
pub(crate) const NOTEBOOK_MAX_BYTES: usize = 32 << 20;

/// Where a code cell begins in what it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Percent text: the 1-based line of its `# %%` marker (1 for the code
    /// before the first marker).
    Line(usize),
    /// A notebook: the cell's 1-based position among all its cells.
    Cell(usize),
}

/// One code cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeCell {
    /// The title after its `# %%` marker, if any.
    pub title: Option<String>,
    /// Its code, as written.
    pub code: String,
    /// Where it begins.
    pub origin: Origin,
}

/// What kind of cell a percent marker line opens; `None` when the line is
/// no marker. A marker is `# %%` (or `#%%`) at the start of a line, then
/// the end of the line or a space; `[markdown]`, `[md]` or `[raw]` after it
/// opens a cell that is not code. The rest is the title.
fn marker(line: &str) -> Option<(bool, Option<String>)> {
    let line = line.trim_end_matches(['\n', '\r']);
    let rest = line
        .strip_prefix("# %%")
        .or_else(|| line.strip_prefix("#%%"))?;
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let mut code = true;
    let mut title = Vec::new();
    for word in rest.split_whitespace() {
        match word {
            "[markdown]" | "[md]" | "[raw]" => code = false,
            w => title.push(w),
        }
    }
    let title = (!title.is_empty()).then(|| title.join(" "));
    Some((code, title))
}

/// True when `code` runs nothing: only blank lines and `#` comments.
fn runs_nothing(code: &str) -> bool {
    code.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    })
}

/// The code cells of percent-format text, in order: the text before the
/// first marker is a cell too; markdown and raw cells are left out, and so
/// are cells that run nothing (blank and comment lines only, such as
/// Jupytext's header). A cell's code runs from the line after its marker
/// to the next marker, without the blank lines at its end.
pub fn percent_cells(text: &str) -> Vec<CodeCell> {
    let mut cells = Vec::new();
    let mut current: (bool, Option<String>, usize) = (true, None, 1);
    let mut body = String::new();
    let mut flush = |open: &(bool, Option<String>, usize), body: &mut String| {
        let code = body.trim_end_matches(['\n', '\r', ' ', '\t']);
        if open.0 && !runs_nothing(code) {
            cells.push(CodeCell {
                title: open.1.clone(),
                code: format!("{code}\n"),
                origin: Origin::Line(open.2),
            });
        }
        body.clear();
    };
    for (i, line) in text.split_inclusive('\n').enumerate() {
        match marker(line) {
            Some((code, title)) => {
                flush(&current, &mut body);
                current = (code, title, i + 1);
            }
            None => body.push_str(line),
        }
    }
    flush(&current, &mut body);
    cells
}

/// A notebook as far as its code is concerned.
#[derive(Deserialize)]
struct RawNotebook {
    nbformat: Option<u64>,
    cells: Option<Vec<RawCell>>,
}

/// A cell as far as its code is concerned; its outputs are skipped unread.
#[derive(Deserialize)]
struct RawCell {
    cell_type: Option<String>,
    source: Option<serde_json::Value>,
}

/// A cell's `source`, nbformat's multiline string: one string, or a list of
/// strings joined as they are; `None` for anything else.
fn source_text(source: &serde_json::Value) -> Option<String> {
    match source {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(parts) => parts
            .iter()
            .map(|p| p.as_str())
            .collect::<Option<Vec<&str>>>()
            .map(|l| l.concat()),
        _ => None,
    }
}

/// The code cells of an `.ipynb` notebook's bytes, in order (markdown and
/// raw cells left out, and code cells that run nothing); `file` names the
/// notebook in the errors, which say what to do.
pub fn notebook_cells(bytes: &[u8], file: &str) -> Result<Vec<CodeCell>, String> {
    if bytes.len() > NOTEBOOK_MAX_BYTES {
        return Err(format!(
            "notebook `{file}` is {} MiB, more than the {} MiB read; clear its outputs (`jupyter nbconvert --clear-output --inplace {file}`) and pass it again",
            bytes.len() >> 20,
            NOTEBOOK_MAX_BYTES >> 20
        ));
    }
    let nb: RawNotebook = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "notebook `{file}` is not readable as JSON ({e}); pass an `.ipynb` file saved by Jupyter (nbformat 4), or the code as a `.py` file"
        )
    })?;
    match nb.nbformat {
        Some(4) => {}
        Some(v) => {
            return Err(format!(
                "notebook `{file}` is nbformat {v}; only nbformat 4 is read: convert it with `jupyter nbconvert --to notebook --nbformat 4 {file}`"
            ));
        }
        None => {
            return Err(format!(
                "notebook `{file}` has no `nbformat` version; pass an `.ipynb` file saved by Jupyter (nbformat 4)"
            ));
        }
    }
    let raw = nb.cells.ok_or_else(|| {
        format!("notebook `{file}` has no `cells` list; pass an `.ipynb` file saved by Jupyter (nbformat 4)")
    })?;
    let mut cells = Vec::new();
    for (i, cell) in raw.into_iter().enumerate() {
        let n = i + 1;
        let kind = cell.cell_type.ok_or_else(|| {
            format!("notebook `{file}`: cell {n} has no `cell_type`; open and save it in Jupyter to repair it")
        })?;
        if kind != "code" {
            continue;
        }
        let code = cell.source.as_ref().and_then(source_text).ok_or_else(|| {
            format!(
                "notebook `{file}`: code cell {n} has no `source` text (a string or a list of strings); open and save it in Jupyter to repair it"
            )
        })?;
        if !runs_nothing(&code) {
            cells.push(CodeCell {
                title: None,
                code,
                origin: Origin::Cell(n),
            });
        }
    }
    Ok(cells)
}

/// True when `path` names a Jupyter notebook (`.ipynb`, any case): the one
/// rule the command line's `--code` and a comment's named code follow.
pub(crate) fn is_notebook(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"))
}

/// A program read from a file: its text as it runs, and what the answer's
/// notes say about how the file became it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program {
    /// The program: a Python file as written, or a notebook's code cells
    /// joined in order ([`joined`]).
    pub(crate) code: String,
    /// How the file became the program (a notebook's cells, and any
    /// IPython syntax in them); `None` for a Python file.
    pub(crate) note: Option<String>,
}

/// The program of the `.ipynb` notebook `bytes` (named `file` in the note
/// and the errors): its code cells joined in order ([`joined`]); `steps`:
/// the cells run as the steps of one session, else as one program (the note
/// says which). A notebook without a code cell to run is refused; the
/// errors say what to do.
pub(crate) fn program(bytes: &[u8], file: &str, steps: bool) -> Result<Program, String> {
    let cells = notebook_cells(bytes, file)?;
    if cells.is_empty() {
        return Err(format!(
            "notebook `{file}` has no code cell with code to run; add one"
        ));
    }
    Ok(Program {
        code: joined(&cells),
        note: Some(notebook_note(file, &cells, steps)),
    })
}

/// The note of a notebook's run; it names the first line of IPython syntax
/// (`%matplotlib inline`, `!pip install`), which is no Python.
fn notebook_note(file: &str, cells: &[CodeCell], steps: bool) -> String {
    let count = match cells.len() {
        1 => "its 1 code cell ran as one program".to_string(),
        n if steps => format!("its {n} code cells ran in order as {n} steps of one session"),
        n => format!("its {n} code cells, joined in order, ran as one program"),
    };
    let file = file.replace('`', "'");
    let mut note = format!(
        "`{file}` is a notebook: {count} in one interpreter; each cell begins at its `# %% cell N` line (N: its place in the notebook)"
    );
    let magic = cells.iter().find_map(|c| {
        let line = c.code.lines().find(|l| l.starts_with(['%', '!']))?;
        Some((c.origin, line.chars().take(80).collect::<String>()))
    });
    if let Some((Origin::Cell(n), line)) = magic {
        note.push_str(&format!(
            "; cell {n} has IPython syntax, which plain Python does not run: remove `{}`",
            line.replace('`', "'")
        ));
    }
    note
}

/// The one program of `cells`, joined in order: each begins with a
/// `# %%` marker line naming where it came from (`# %% cell 3`, `# %% line
/// 12`), and ends with a line break. A comment to Python, so the program is
/// the cells' code as written; [`percent_cells`] reads the same cells back.
pub fn joined(cells: &[CodeCell]) -> String {
    let mut program = String::new();
    for c in cells {
        let from = match c.origin {
            Origin::Cell(n) => format!("cell {n}"),
            Origin::Line(n) => format!("line {n}"),
        };
        program.push_str(&format!("# %% {from}\n"));
        program.push_str(&c.code);
        if !c.code.ends_with('\n') {
            program.push('\n');
        }
    }
    program
}

#[cfg(test)]
mod tests;
