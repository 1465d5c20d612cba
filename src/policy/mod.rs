//! Stage: policy check. The YAML policy and the static check of code against it.
//!
//! # What this is, honestly
//!
//! The static check is a **first gate that explains itself**: it parses the
//! code with ruff's Python parser (a real AST, Python 3.12+ syntax incl.
//! PEP 695 and PEP 701), resolves imports and aliases, and denies or
//! escalates before any container starts. It errs towards denying: what it
//! cannot resolve statically (computed attribute names, dynamic imports,
//! `getattr` passed around as a value) is denied. It is not the security
//! boundary. The container is (no network, read-only root, dropped
//! capabilities, cgroup limits), and the in-sandbox runner's audit hooks are
//! a second line that refuses [`Policy::runtime_rules`] imports and file
//! opens outside `/data`, `/tmp` and `/out` while the code runs.
//!
//! # The policy file
//!
//! See [`Policy`] and `policies/default.yml` (every field commented). Read
//! with serde-saphyr: pure Rust, `forbid(unsafe_code)`, maintained, rejects
//! duplicate keys and reports line and column (`serde_yaml` is deprecated
//! and archived). Unknown keys are errors; omitted fields take safe
//! defaults; errors read `file:line:column: message` and say what to write.
//!
//! # Rule ids
//!
//! Stable ids used in findings, in `code.escalate` and in reports. The
//! built-in families cannot be switched off by a policy; a policy can only
//! add to them (`deny_modules`, `deny_calls`) or turn findings into
//! escalations (`code.escalate`; the rules marked "never" cannot escalate).
//!
//! | rule | severity | escalate? | what it catches |
//! |------|----------|-----------|-----------------|
//! | `syntax-error` | deny | never | the code does not parse (position of the error) |
//! | `code-too-large` | deny | never | more bytes than `code.max_bytes` (checked before parsing) |
//! | `too-complex` | deny | never | more than 200 nested brackets (CPython's own limit) or 300 nested statements/expressions |
//! | `source-encoding` | deny | never | a `# coding:` declaration other than UTF-8/ASCII (Python would decode differently than checked), NUL bytes |
//! | `import-denied` | deny | yes | a module in `code.deny_modules` (and its submodules), imported or reached |
//! | `import-not-allowed` | deny | yes (`escalate_unknown_imports`) | an import outside `code.allow_imports` |
//! | `relative-import` | deny | yes | `from . import x` (the code runs as one script) |
//! | `star-import` | deny | yes | `from m import *` of a module with denied members (`os`) |
//! | `dynamic-import` | deny | yes | `__import__`, `importlib.*`, `imp`, `runpy`, `pkgutil`, `zipimport`; a literal module name is also checked as an import |
//! | `eval-exec` | deny | yes | `eval`, `exec`, `compile`, `code`, `types.FunctionType/CodeType`, `timeit`, `cProfile`, `doctest`, `pandas.eval`, `.query()/.eval()` strings with `@name` or not literal |
//! | `reflection` | deny | yes | `globals()`, `locals()`, `vars()`, `breakpoint()`, `help()`, `gc`, `inspect`, `pdb` |
//! | `dunder-escape` | deny | yes | dunder attributes outside a safe list (`__subclasses__`, `__globals__`, `__builtins__`, `__code__`, `__mro__`, `__bases__`, `__dict__`, `__self__`, ...), dunder names such as `__builtins__`/`__loader__`, and strings that mention them (`str.format` escapes, `getattr` names), also in `case C(attr=...)` patterns |
//! | `dangerous-attribute` | deny | yes | attributes named like process/import/frame/module handles on any object (`.system`, `.popen`, `.fork`, `.modules`, `.f_globals`, `.gi_frame`, `.os`, `.subprocess`, `.to_clipboard`, ...), because the receiver cannot always be resolved (`[os][0].system`) |
//! | `dynamic-attribute` | deny | yes | `getattr`/`setattr`/`delattr`/`attrgetter`/`methodcaller` with a name that does not fold to a constant, or these functions used as values |
//! | `interpreter-state` | deny | yes | `sys.modules`, `sys.path`, `sys.meta_path`, `sys._getframe`, `sys.settrace`/`setprofile`, `sys.addaudithook` |
//! | `process` | deny | yes | `subprocess`, `os.system/popen/exec*/spawn*/fork*/posix_spawn*/kill*`, `pty`, `multiprocessing`, `signal`, `platform.popen`, `pandas.read_clipboard` |
//! | `network` | deny | yes | `socket`, `ssl`, `urllib.request`, `http.client`, `requests`, `httpx`, `aiohttp`, `ftplib`, `smtplib`, ... |
//! | `native-code` | deny | yes | `ctypes`, `cffi`, `numpy.ctypeslib`, `numpy.f2py`, `distutils`, `setuptools` |
//! | `unsafe-deserialization` | deny | yes | `pickle.load(s)`, `marshal.load(s)`, `shelve`, `dill`, `joblib.load`, `pandas.read_pickle`, any call with `allow_pickle=True` |
//! | `call-denied` | deny | yes | a resolved name matching `code.deny_calls` (`os.remove`, `os.exec*`) |
//! | `open-write-outside-output` | deny | yes | `open()`/`io.open` for writing, or `to_csv`/`savefig`/`np.save`-style writers, to a known path outside `/out` and `/tmp` (relative paths and `..` included) |
//! | `open-write-unknown-path` | info | never | `open()` for writing to a path the checker cannot determine (the sandbox still confines writes) |
//! | `open-read-outside` | deny | yes | `open()`, `pathlib.Path(...)`, `pandas.read_*`, `numpy.load*`, `imread` of a known path outside `/data`, `/tmp` and `/out` (`/etc/shadow`, `/root/.bashrc`, `../etc/passwd` from `/tmp`) |
//! | `code-file-write` | deny | yes | writing `.py`, `.pyc`, `.pth`, `.so` files (code the check never saw) |
//! | `internal-error` | deny | never | the checker itself failed; never expected |
//!
//! # How names are resolved
//!
//! A flow-insensitive pass binds every name to the dotted names it may
//! hold: `import a.b as c`, `from a import b`, assignments and tuple
//! unpacking, walrus, `for x in [..]`, comprehension targets, parameter
//! defaults, `getattr(x, <constant>)`, `__import__('<constant>')`,
//! `sys.modules['<constant>']`. Constants fold through `+`, implicit
//! concatenation, f-strings of constants, `''.join([...])`, `[::-1]`,
//! `chr(n)`, `.lower()/.upper()/.strip()` and names assigned one constant.
//! Identifiers are NFKC-normalized by the parser, as Python does
//! (`ｅｖａｌ` is `eval`). Builtins that matter (`eval`, `getattr`, `open`,
//! ...) are checked even when the code also binds the name.
//!
//! # Robustness
//!
//! [`check_code`] never panics or hangs: size is checked first, bracket and
//! AST nesting are bounded, resolution and folding have fixed depth and
//! width limits, and parsing and walking run on a dedicated thread whose
//! stack is sized for the input (ruff's parser grows its own stack with
//! `stacker`; dropping a very deep tree is recursive). A panic on that
//! thread becomes an `internal-error` deny.

mod check;
pub mod cli;
mod config;
mod rules;
mod verdict;

pub use check::check_code;
pub use config::{DataLevel, Permission, Policy, PolicyError, Who};
pub(crate) use config::{Inputs, OnCheckFailure, Refusal, Repeat, VerifyMode};
pub use rules::RuleId;
pub(crate) use rules::allows;
pub use verdict::{Decision, Finding, Severity, Verdict};
