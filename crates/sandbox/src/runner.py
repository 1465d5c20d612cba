# compute-bot sandbox runner. Runs inside the container as pid 1:
# `python3 -I -S -c <this>` (no site: it needs only the standard library, and
# starts faster). Started as root with only CAP_SETUID and CAP_SETGID, it
# gives them up at once and runs the code under a uid of its own (see "two
# uids" below); it is non-dumpable and ignores every signal it can, so the
# code can reach none of its memory or descriptors through /proc/1 and
# cannot end it.
#
# It starts a fresh child interpreter (CHILD below) that waits for the code,
# then reads one job from stdin: a JSON header line, the code, the input files.
# It writes the inputs to /data, hands the code to the child, forwards the
# child's stdout/stderr as framed lines, collects /out and finally reports
# rusage and the audit trail. Every line it writes carries a sequence number
# and an HMAC with a key that only the bot and this process know (it never
# appears on the output), so a forged, duplicated, out-of-order or missing
# frame shows.
#
# Just before the code runs, the child installs a second seccomp filter on
# itself (every thread): no new program (execve/execveat), no new process
# (fork/vfork/clone without CLONE_THREAD), no further filters; under runc the
# file opens, sockets, file-system changes and those attempts go to this
# process as seccomp user notifications (SUPERVISOR below): it opens the file
# itself and hands the descriptor over, makes each change itself, so what it
# records is what the code got, for Python and native code alike. The child's audit hook (PEP 578) is the interpreter's own
# word: imports and what it refused; the report says so.
import binascii, json, os, select, sys, threading, time

CHILD = r'''
import os, sys, builtins, select
# Preload what the bot names while the container waits for the code. It
# runs before the audit hook exists; the code gets nothing from it but a
# warm sys.modules (imports are still audited and refused below, cached or
# not). Once the code has arrived (its pipe is readable) the rest of the
# list is narrowed to the modules whose package the code imports (a module
# mid-import finishes first): the code does not wait for a guess it does
# not use, and what it does use still loads before the hook, where imports
# are faster. Only modules of the bot's list are ever preloaded.
_preloaded = []
_skipped = []
rd = os.fdopen(int(sys.argv[1]), "rb")
src = None
def _arrived():
    global src, code_len, flags, denied, _wanted
    code_len, flags, denied = rd.readline().decode().rstrip("\n").split("\t")
    src = rd.read(int(code_len)).decode("utf-8", "replace")
    _wanted = set()
    try:
        import ast
        for n in ast.walk(ast.parse(src)):
            if isinstance(n, ast.Import):
                _wanted.update(a.name.split(".")[0] for a in n.names)
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                _wanted.add(n.module.split(".")[0])
    except BaseException:
        pass
for _m in (sys.argv[3].split(",") if len(sys.argv) > 3 else []):
    if not _m:
        continue
    if src is None and select.select([rd], [], [], 0)[0]:
        _arrived()
    if src is not None and _m.split(".")[0] not in _wanted:
        _skipped.append(_m)
        continue
    try:
        __import__(_m)
        _preloaded.append(_m)
    except BaseException:
        pass
if src is None:
    _arrived()
# Loaded: say so, and start only when the runner lets the code start (for a
# held run, once the bot has lowered the CPU quota to the code's).
os.write(int(sys.argv[2]), b"ready\n")
if rd.read(1) != b"g":
    os._exit(70)
steps = "t" in flags
if not steps:
    rd.close()
try:
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000")
except OSError:
    pass
deny_imports = [d for d in denied.split(",") if d]
restrict = "f" in flags
deny_sub = "s" in flags
deny_net = "n" in flags
AUD = int(sys.argv[2])
SUP = int(sys.argv[4]) if len(sys.argv) > 4 else -1
quiet = ("/usr/lib/python3", "/usr/local/lib/python3", "/usr/share/matplotlib",
         "/usr/share/fonts", "/usr/share/zoneinfo", "/usr/share/fonts-", "/opt/compute-bot",
         "/usr/lib/python3.", "/etc/matplotlibrc", "/usr/share/tcltk")
read_ok = ("/data/", "/tmp/", "/out/", "/usr/", "/opt/compute-bot/", "/etc/localtime",
           "/etc/timezone", "/dev/null", "/dev/urandom", "/proc/self/", "/proc/cpuinfo",
           "/proc/meminfo", "/sys/devices/system/cpu/", "/sys/fs/cgroup/", "/etc/mime.types")
write_ok = ("/tmp/", "/out/", "/dev/null/")
seen = set()
count = [0]
# One record is a line: tab-separated values, each cut at VALUE_CAP characters
# (a path the kernel takes is at most 4096 bytes), with backslash, tab and
# line break escaped; a name's bytes that are not UTF-8 go as they are
# (surrogateescape), so the runner reads the same name the kernel saw. At
# most 400 records (then one "truncated"): the runner holds the channel to
# both bounds.
VALUE_CAP = 4200
def esc(v):
    v = v if isinstance(v, str) else str(v)
    return v[:VALUE_CAP].replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
def send(kind, *values):
    if count[0] >= 400:
        if count[0] == 400:
            os.write(AUD, b"truncated\n")
            count[0] += 1
        return
    count[0] += 1
    line = "\t".join([kind] + [esc(v) for v in values]) + "\n"
    try:
        raw = line.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = line.encode("utf-8", "surrogatepass")  # a lone surrogate no name's bytes make
    try:
        os.write(AUD, raw)
    except OSError:
        pass
def norm(p):
    if isinstance(p, bytes):
        p = p.decode("utf-8", "surrogateescape")
    if isinstance(p, int):
        return None
    p = os.fspath(p) if hasattr(p, "__fspath__") else str(p)
    if not p.startswith("/"):
        try:
            p = os.path.join(os.getcwd(), p)
        except OSError:
            p = os.path.join("/tmp", p)
    return os.path.normpath(p)
def mode_of(mode, flags):
    if isinstance(mode, str) and mode:
        return mode
    if isinstance(flags, int):
        acc = flags & 3
        return {0: "r", 1: "w", 2: "r+"}.get(acc, "r")
    return "r"
def denied_module(name):
    top = name.split(".")[0]
    for pat in deny_imports:
        if pat.endswith(".*"):
            if name == pat[:-2] or name.startswith(pat[:-1]):
                return True
        elif top == pat or name == pat:
            return True
    return False
# The code's own code objects: main.py, and everything it compiles or hands to
# exec/eval (with whatever file name it picks), including nested functions.
user_files = {"main.py"}
user_codes = set()
def mark(co, depth=0):
    if depth > 50 or co in user_codes:
        return
    user_codes.add(co)
    for c in co.co_consts:
        if isinstance(c, type(co)):
            mark(c, depth + 1)
def user_initiated(skip):
    # The nearest frame outside the machinery that raised the event: is it the code?
    f = sys._getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if fn in user_files or f.f_code in user_codes:
            return True
        if fn.startswith("<frozen importlib") or fn.endswith("importlib/__init__.py") or (skip and fn.endswith(skip)):
            f = f.f_back
            continue
        return False
    return False
def called_by_user():
    # The frame that raised the event itself (no skipping): imports compile
    # and exec modules from importlib's frames, which must not count.
    f = sys._getframe(2)
    return f.f_code.co_filename in user_files or f.f_code in user_codes
def refuse(what):
    send("refused", what)
    raise PermissionError("compute-bot sandbox policy: " + what + " is refused")
def hook(event, args):
    if event == "compile":
        name = args[1] if len(args) > 1 else None
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        if name is not None and not isinstance(name, str):
            name = str(name)
        if name and name not in user_files and called_by_user():
            user_files.add(name)
    elif event == "exec":
        co = args[0] if args else None
        if isinstance(co, type(hook.__code__)) and co not in user_codes and called_by_user():
            mark(co)
    elif event == "open":
        path = norm(args[0])
        if path is None:
            return
        # A relative path may be relative to a dir_fd the event does not
        # name: shown against the cwd, not held against the kernel's record.
        rel = "0" if (args[0].startswith(b"/") if isinstance(args[0], bytes) else str(os.fspath(args[0])).startswith("/")) else "1"
        mode = mode_of(args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None)
        writing = any(c in mode for c in "wax+")
        if not writing and path.startswith(quiet):
            return
        key = (path, mode)
        bad = False
        if restrict:
            if writing:
                bad = not (path + "/").startswith(write_ok)
            else:
                bad = not ((path + "/").startswith(read_ok) or path.startswith(read_ok))
        if key not in seen:
            seen.add(key)
            send("open", path, mode, "1" if bad else "0", rel)
        if bad:
            refuse("opening " + path + " (mode " + mode + ")")
    elif event == "import":
        name = args[0]
        if not isinstance(name, str):
            return
        top = name.split(".")[0]
        if not user_initiated(None):
            return
        if denied_module(name):
            refuse("import of " + name)
        if top not in seen:
            seen.add(top)
            send("import", top)
    elif event in ("socket.connect", "socket.sendto", "socket.bind"):
        addr = args[1] if len(args) > 1 else None
        send("net", event.split(".")[1] + " " + repr(addr))
        if deny_net:
            refuse("network " + event.split(".")[1])
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "socket.gethostbyname_ex"):
        send("net", event.split(".")[1] + " " + repr(args[0] if args else None))
        if deny_net:
            refuse("name lookup")
    elif event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn", "os.kill", "os.killpg"):
        if not user_initiated(("subprocess.py", "pty.py", "os.py")):
            return
        detail = ""
        if args:
            a = args[1] if event in ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn") and len(args) > 1 else args[0]
            detail = " " + repr(a)[:200]
        send("sub", event + detail)
        if deny_sub and event not in ("os.kill", "os.killpg"):
            refuse(event)
    elif event in ("os.chmod", "os.remove", "os.rename", "os.rmdir", "os.unlink", "shutil.rmtree"):
        p = norm(args[0]) if args else None
        if restrict and p and p.startswith("/data"):
            refuse(event + " on " + p)
def show_source(name="main.py", text=None):
    import linecache
    text = src if text is None else text
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
def split_last(text, name):
    # A step of a session: its last statement, when an expression, is
    # evaluated apart, so its value is shown as a notebook shows Out[n].
    import ast
    tree = ast.parse(text, name)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), name, "eval")
    return compile(tree, name, "exec"), last
last_expr = None
try:
    if steps:
        code, last_expr = split_last(src, "main.py")
    else:
        code = compile(src, "main.py", "exec")
except SyntaxError:
    import traceback
    show_source()
    traceback.print_exc(limit=0)
    if not steps:
        sys.exit(1)
    code = compile("raise SystemExit(1)", "main.py", "exec")
sys.stdout.reconfigure(line_buffering=True)
g = {"__name__": "__main__", "__builtins__": builtins, "__file__": "main.py"}
# DuckDB, confined like Python: every connection the code makes (the default
# one behind duckdb.sql too) reads and writes only under /data, /tmp and /out,
# installs and autoloads no extension. Not locked (the code sets threads,
# memory_limit, temp_directory), but DuckDB refuses to turn external access
# back on, or to change the allowed directories, while it runs.
# This is the library's own setting, in the code's process: under runc the
# kernel's record and the runner's file rules apply to DuckDB's opens as well.
DUCK_SETS = ("SET allowed_directories=['/data/', '/tmp/', '/out/']",
             "SET extension_directory='/nonexistent/compute-bot'",
             "SET autoload_known_extensions=false", "SET autoinstall_known_extensions=false",
             "SET allow_community_extensions=false", "SET enable_external_access=false")
duck_done = []
def confine_duckdb():
    m = sys.modules.get("duckdb")
    if m is None or duck_done:
        return
    duck_done.append(m)
    def confine(con):
        for q in DUCK_SETS:
            con.execute(q)
        return con
    try:
        d = m.default_connection
        confine(d() if callable(d) else d)
    except Exception as e:
        send("refused", "DuckDB could not be confined (" + str(e)[:100] + "): its connections are refused")
        def refused(*a, **k):
            raise PermissionError("compute-bot sandbox policy: DuckDB could not be confined")
        m.connect = m.sql = m.query = m.execute = refused
        return
    for mod in (m, sys.modules.get("_duckdb"), sys.modules.get("duckdb.duckdb")):
        orig = getattr(mod, "connect", None) if mod is not None else None
        if orig is not None:
            def connect(*a, _orig=orig, **k):
                return confine(_orig(*a, **k))
            mod.connect = connect
if "duckdb" in src and not denied_module("duckdb"):
    # Code that names DuckDB gets it loaded and confined before it starts,
    # however it imports it.
    try:
        import duckdb
    except BaseException:
        pass
confine_duckdb()
orig_import = builtins.__import__
def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    # Every `import` statement of the code, even of a module already loaded
    # (preloaded, or loaded by a library), which raises no "import" event.
    f = sys._getframe(1)
    user = level == 0 and isinstance(name, str) and (f.f_code.co_filename in user_files or f.f_code in user_codes)
    if user:
        if denied_module(name):
            refuse("import of " + name)
        for sub in fromlist or ():
            if isinstance(sub, str) and sub != "*" and denied_module(name + "." + sub) and not denied_module(name):
                refuse("import of " + name + "." + sub)
        top = name.split(".")[0]
        if top not in seen:
            seen.add(top)
            send("import", top)
    m = orig_import(name, globals, locals, fromlist, level)
    if user and not duck_done and "duckdb" in sys.modules:
        confine_duckdb()
    return m
builtins.__import__ = guarded_import
for _m in _preloaded:
    send("preloaded", _m)
for _m in _skipped:
    send("preload_skipped", _m)
sys.addaudithook(hook)
# The second seccomp stage, on every thread of this process, from here on
# for good: see the runner's header. "notify": under runc, the runner (pid 1)
# supervises; "errno": no user notification (gVisor): the same system calls
# are refused outright and opens are not supervised. Without either the code
# does not run.
def _stage2():
    import ctypes, socket
    nrs = {
        "x86_64": (0xC000003E, dict(open=2, creat=85, openat=257, openat2=437, execve=59, execveat=322,
                   fork=57, vfork=58, clone=56, clone3=435, socket=41, connect=42, bind=49,
                   seccomp=317, prctl=157, close=3, dup2=33, dup3=292, close_range=436)),
        "aarch64": (0xC00000B7, dict(openat=56, openat2=437, execve=221, execveat=281, clone=220,
                    clone3=435, socket=198, connect=203, bind=200, seccomp=277, prctl=167,
                    close=57, dup3=24, close_range=436)),
    }.get(os.uname().machine)
    if nrs is None:
        return "none", "no filter for the machine " + os.uname().machine
    arch, nr = nrs
    # No namespace, no mount: runc's profile refuses them before this
    # filter, gVisor's Sentry would grant them (a user namespace, then its
    # mounts). The new mount API numbers are the same on both machines.
    ns = {"x86_64": dict(unshare=272, setns=308, mount=165, umount2=166, pivot_root=155),
          "aarch64": dict(unshare=97, setns=268, mount=40, umount2=39, pivot_root=41)}[os.uname().machine]
    ns.update(open_tree=428, move_mount=429, fsopen=430, fsconfig=431, fsmount=432, fspick=433, mount_setattr=442)
    LD, JEQ, JGE, JGT, JSET, RET = 0x20, 0x15, 0x35, 0x25, 0x45, 0x06
    ALLOW, NOTIFY, KILL = 0x7FFF0000, 0x7FC00000, 0x80000000
    def err(e):
        return 0x00050000 | e
    def program(notify):
        p = [(LD, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, KILL), (LD, 0, 0, 0),
             (JGE, 0, 1, 0x40000000), (RET, 0, 0, err(38))]
        deny = NOTIFY if notify else err(1)
        def one(name, action):
            if name in nr:
                p.extend([(JEQ, 0, 1, nr[name]), (RET, 0, 0, action)])
        def on_arg(name, index, op, value, action):
            # name(args[index] op value) -> action, else allow
            if name in nr:
                p.extend([(JEQ, 0, 4, nr[name]), (LD, 0, 0, 16 + 8 * index), (op, 0, 1, value),
                          (RET, 0, 0, action), (RET, 0, 0, ALLOW)])
        for name in ("execve", "execveat", "fork", "vfork"):
            one(name, deny)
        p.extend([(JEQ, 0, 4, nr["clone"]), (LD, 0, 0, 16), (JSET, 0, 1, 0x10000),
                  (RET, 0, 0, ALLOW), (RET, 0, 0, deny)])
        one("clone3", err(38))
        one("openat2", err(38))
        one("seccomp", err(1))
        on_arg("prctl", 0, JEQ, 22, err(1))  # PR_SET_SECCOMP
        for n in ns.values():
            p.extend([(JEQ, 0, 1, n), (RET, 0, 0, err(1))])
        # The interpreter's audit channel stays open and in place.
        on_arg("close", 0, JEQ, AUD, deny)
        on_arg("dup2", 1, JEQ, AUD, deny)
        on_arg("dup3", 1, JEQ, AUD, deny)
        if "close_range" in nr:
            p.extend([(JEQ, 0, 6, nr["close_range"]), (LD, 0, 0, 16), (JGT, 2, 0, AUD),
                      (LD, 0, 0, 24), (JGE, 1, 0, AUD), (RET, 0, 0, ALLOW), (RET, 0, 0, deny)])
        if notify:
            for name in ("open", "creat", "openat", "socket", "connect", "bind"):
                one(name, NOTIFY)
            # Changes without an open, carried out by the runner: rename,
            # mkdir, rmdir, link, unlink, symlink, truncate, utime(s) and
            # their *at forms (mknod and futimesat: the engine's profile
            # refuses them).
            for n in {"x86_64": (76, 82, 83, 84, 86, 87, 88, 132, 235, 258, 263, 264, 265, 266, 280, 316),
                      "aarch64": (34, 35, 36, 37, 38, 45, 88, 276)}[os.uname().machine]:
                p.extend([(JEQ, 0, 1, n), (RET, 0, 0, NOTIFY)])
        p.append((RET, 0, 0, ALLOW))
        return p
    class Insn(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    def install(p, flags):
        insns = (Insn * len(p))(*[Insn(*i) for i in p])
        prog = Prog(len(p), insns)
        r = libc.syscall(ctypes.c_long(nr["seccomp"]), ctypes.c_long(1), ctypes.c_long(flags), ctypes.byref(prog))
        return r, ctypes.get_errno()
    sup = socket.socket(fileno=SUP) if SUP >= 0 else None
    try:
        if sup is not None:
            # TSYNC | NEW_LISTENER | TSYNC_ESRCH
            fd, e = install(program(True), 1 | 8 | 16)
            if fd >= 0:
                socket.send_fds(sup, [b"notify"], [fd])
                os.close(fd)
                return "notify", ""
            first = os.strerror(e)
        else:
            first = "no supervisor"
        r, e = install(program(False), 1)
        if r == 0:
            if sup is not None:
                sup.send(b"errno")
            return "errno", first
        return "none", first + "; " + os.strerror(e)
    finally:
        if sup is not None:
            sup.close()
try:
    _mode, _why = _stage2()
except BaseException as e:
    _mode, _why = "none", repr(e)
if _mode == "none":
    os.write(2, ("compute-bot sandbox: the process filter could not be installed (" + _why + "); the code was not run\n").encode())
    os._exit(70)
try:
    os.write(AUD, b"start\n")
except OSError:
    pass
def run_step(code, last, name, text):
    # One program, or one step of a session: its exit code and, for a
    # step, the repr of its last expression (None: there was none).
    rc, shown = 0, None
    try:
        exec(code, g)
        if last is not None:
            v = eval(last, g)
            if v is not None:
                g["_"] = v
                shown = repr(v)
    except SystemExit as e:
        c = e.code
        rc = c if isinstance(c, int) else (0 if c is None else 1)
        if not isinstance(c, int) and c is not None:
            print(c, file=sys.stderr)
    except BaseException as e:
        import traceback
        show_source(name, text)
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != name:
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
        rc = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    return rc, shown
rc, shown = run_step(code, last_expr, "main.py", src)
# A session: after each step, say it ended (its exit code and value) on the
# audit channel, then wait for the next step's code from the runner
# ("<length>\n<code>"); the pipe's end closes the session. The globals stay.
# The code runs in this process, so a step's end is the interpreter's word:
# the runner holds it to its order (one end per step handed over).
n = 1
while steps:
    try:
        v = "" if shown is None else shown[:4096]
        os.write(AUD, ("stepend\t%d\t%d\t%s\n" % (rc, shown is not None, esc(v))).encode("utf-8", "surrogatepass"))
    except BaseException:
        os._exit(70)
    count[0] = 0
    head = rd.readline()
    if not head:
        break
    try:
        text = rd.read(int(head)).decode("utf-8", "replace")
    except BaseException:
        os._exit(70)
    n += 1
    name = "step%d.py" % n
    user_files.add(name)
    try:
        os.write(AUD, b"step\n")
    except OSError:
        pass
    try:
        code, last_expr = split_last(text, name)
    except SyntaxError:
        import traceback
        show_source(name, text)
        traceback.print_exc(limit=0)
        try:
            sys.stderr.flush()
        except BaseException:
            pass
        rc, shown = 1, None
        continue
    rc, shown = run_step(code, last_expr, name, text)
os._exit(rc)
'''

out = sys.stdout.buffer
out_lock = threading.Lock()


seq = [0]
try:
    from _sha256 import sha256 as _sha  # built in: no OpenSSL to load
except ImportError:
    from hashlib import sha256 as _sha
pads = []


def set_key(key):
    block = key.ljust(64, b"\0")
    pads[:] = [_sha(bytes(b ^ 0x36 for b in block)), _sha(bytes(b ^ 0x5C for b in block))]


def tag(body):
    inner = pads[0].copy()
    inner.update(body)
    outer = pads[1].copy()
    outer.update(inner.digest())
    return outer.hexdigest()[:32].encode()


def frame(kind, payload):
    # <seq>:<kind>:<base64>:<tag>, tag = HMAC-SHA256(key, the rest)[:16]:
    # the key never leaves this process, so whoever reads the frames cannot
    # make one; the bot takes them in order, each once.
    with out_lock:
        body = str(seq[0]).encode() + b":" + kind + b":" + binascii.b2a_base64(payload, newline=False)
        inner = pads[0].copy()
        inner.update(body)
        outer = pads[1].copy()
        outer.update(inner.digest())
        seq[0] += 1
        out.write(body + b":" + outer.hexdigest()[:32].encode() + b"\n")
        out.flush()


# ---------------------------------------------------------------- supervisor
# The runner's side of the second seccomp stage (see the header). Each
# notification is one system call of the code's process, stopped in the
# kernel until it is answered here. Opens are carried out here and the
# descriptor handed over (SECCOMP_IOCTL_NOTIF_ADDFD), so the path checked and
# recorded is the one opened, not one a racing thread could change after the
# check. Changes to the file system without an open (rename, link, symlink,
# unlink, rmdir, mkdir, truncate, utime) are carried out here too, on the
# folder this process resolved, and only under /tmp and /out. Program and
# process starts, connect and bind (the network is `none`) are refused;
# sockets recorded. What the code is served is checked on the file actually
# opened: never one of this process's own descriptors or /proc entries.
NOTIF_RECV, NOTIF_SEND, NOTIF_ADDFD = 0xC0502100, 0xC0182101, 0x40182103
AT_FDCWD = -100
OPENAT2 = 437  # the same number on x86_64 and aarch64
RESOLVE_NO_MAGICLINKS = 0x02
# The image's own libraries (the bot's list, LIBRARY_PATHS, in the job's
# header): their plain reads are counted, not listed.
QUIET = ()
READ_OK = ("/data/", "/tmp/", "/out/", "/usr/", "/opt/compute-bot/", "/etc/localtime", "/etc/timezone",
           "/etc/ld.so.cache", "/etc/matplotlibrc", "/etc/mime.types", "/dev/null", "/dev/urandom",
           "/dev/random", "/dev/zero", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/sys/devices/system/cpu/",
           "/sys/devices/system/node/", "/sys/fs/cgroup/", "/lib/", "/lib64/")
WRITE_OK = ("/tmp/", "/out/", "/dev/null")
NAMES = {2: "open", 85: "creat", 257: "openat", 59: "execve", 322: "execveat", 57: "fork", 58: "vfork",
         56: "clone", 41: "socket", 42: "connect", 49: "bind", 3: "close", 33: "dup2", 292: "dup3", 436: "close_range"}
if os.uname().machine == "aarch64":
    NAMES = {56: "openat", 221: "execve", 281: "execveat", 220: "clone", 198: "socket", 203: "connect",
             200: "bind", 57: "close", 24: "dup3", 436: "close_range"}
# The changes without an open (the filter's CHANGES), by number.
NAMES.update({76: "truncate", 82: "rename", 83: "mkdir", 84: "rmdir", 86: "link", 87: "unlink", 88: "symlink",
              132: "utime", 235: "utimes", 258: "mkdirat", 263: "unlinkat", 264: "renameat", 265: "linkat",
              266: "symlinkat", 280: "utimensat", 316: "renameat2"} if os.uname().machine != "aarch64" else
             {34: "mkdirat", 35: "unlinkat", 36: "symlinkat", 37: "linkat", 38: "renameat", 45: "truncate",
              88: "utimensat", 276: "renameat2"})
RENAMEAT2 = 276 if os.uname().machine == "aarch64" else 316
UTIMENSAT = 88 if os.uname().machine == "aarch64" else 280
CHANGES = {"truncate", "rename", "mkdir", "rmdir", "link", "unlink", "symlink", "utime", "utimes", "mkdirat",
           "unlinkat", "renameat", "linkat", "symlinkat", "utimensat", "renameat2"}
CHANGE_OK = ("/tmp/", "/out/")
# The record lists each file once (per mode and result), up to a cap per
# kind (its top folder and how it ended), so a flood of one kind (thousands
# of files made in /tmp, missing paths, routes to one file) cannot push a
# later open of another (/etc/passwd) out.
KIND_CAP, KIND_CAP_IO = 200, 1000
FAMILIES = {1: "AF_UNIX", 2: "AF_INET", 10: "AF_INET6", 16: "AF_NETLINK", 17: "AF_PACKET"}


class Supervisor:
    def __init__(self, child, rules, aud_fd):
        import errno as _errno
        self.errno = _errno
        self.child = child
        self.aud_fd = aud_fd
        self.restrict = bool(rules.get("restrict_files"))
        self.deny_net = bool(rules.get("deny_network"))
        self.mode = "none"
        self.files = []
        self.seen = set()
        self.paths = set()
        self.library_reads = 0
        self.execs = []
        self.sockets = []
        self.changes = []
        self.kinds = {}
        self.guarded = {}
        self.tampered = []
        self.events = 0
        self.truncated = False
        self.mems = {}
        self.libc = None
        self.busy = threading.Lock()

    # -- the record, kept within bounds
    def keep(self, lst, item):
        self.events += 1
        if len(lst) < 200:
            lst.append(item)
        else:
            self.truncated = True

    def record(self):
        return {"mode": self.mode, "files": self.files, "library_reads": self.library_reads,
                "execs": self.execs, "sockets": self.sockets, "changes": self.changes, "truncated": self.truncated}

    def take_step(self):
        # A session's step ended: its record, and a fresh one for the next.
        # A call still being handled is finished and recorded first.
        with self.busy:
            return self._take_step()

    def _take_step(self):
        rec = self.record()
        self.files, self.execs, self.sockets, self.changes = [], [], [], []
        self.seen, self.kinds, self.paths = set(), {}, set()
        self.library_reads, self.truncated = 0, False
        return rec

    # -- what only this process holds
    def guard(self):
        # Every descriptor this process holds, by device and inode: none is
        # ever handed to the code. The pipes the code already writes (its
        # stdout, stderr and audit channel) may be opened again for writing
        # only, as /dev/stdout is. Anonymous inodes (eventfd, epoll, the
        # listener) share one inode and cannot be opened again through /proc;
        # character devices (/dev/null) are the same file for everyone.
        own = set()
        for n in (1, 2, self.aud_fd):
            try:
                st = os.stat("/proc/%d/fd/%d" % (self.child, n))
                own.add((st.st_dev, st.st_ino))
            except OSError:
                pass
        for name in os.listdir("/proc/self/fd"):
            try:
                if os.readlink("/proc/self/fd/" + name).startswith("anon_inode:"):
                    continue
                st = os.fstat(int(name))
            except (OSError, ValueError):
                continue
            if (st.st_mode & 0o170000) == 0o020000:
                continue  # a character device (/dev/null) is no one's own
            key = (st.st_dev, st.st_ino)
            self.guarded[key] = "write" if key in own else "none"
        # Files the supervisor creates for the code take the code's umask
        # (read at each call), not this process's.
        os.umask(0)

    def umask(self, tid):
        try:
            with open("/proc/%d/status" % tid) as f:
                for line in f:
                    if line.startswith("Umask:"):
                        return int(line.split()[1], 8)
        except (OSError, ValueError):
            pass
        return 0o022

    def code_pid(self, n):
        # The code's process or one of its threads (never this runner's).
        return n == self.child or os.path.exists("/proc/%d/task/%d" % (self.child, n))

    # -- reading the stopped thread's memory (it is ours to read: our child, same uid, dumpable)
    def mem(self, tid):
        fd = self.mems.get(tid)
        if fd is None:
            if len(self.mems) > 64:
                for f in self.mems.values():
                    os.close(f)
                self.mems.clear()
            fd = os.open("/proc/%d/mem" % tid, os.O_RDONLY | os.O_CLOEXEC)
            self.mems[tid] = fd
        return fd

    def read_bytes(self, tid, addr, n):
        try:
            return os.pread(self.mem(tid), n, addr)
        except (OSError, OverflowError, ValueError):
            return None

    def read_str(self, tid, addr, limit=4096):
        out = b""
        while len(out) < limit:
            step = 4096 - ((addr + len(out)) % 4096)
            chunk = self.read_bytes(tid, addr + len(out), step)
            if not chunk:
                return None
            i = chunk.find(b"\0")
            if i >= 0:
                return (out + chunk[:i]).decode("utf-8", "surrogateescape")
            out += chunk
        return None

    # -- answers
    def send(self, fd, nid, val=0, err=0, cont=False):
        import fcntl, struct
        resp = bytearray(struct.pack("=QqiI", nid, val, -err if err else 0, 1 if cont else 0))
        try:
            fcntl.ioctl(fd, NOTIF_SEND, resp, True)
        except OSError:
            pass  # the thread is gone (killed while stopped)

    def run(self, sock):
        import fcntl, socket, struct
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 1)
        except OSError:
            msg, fds = b"", []
        sock.close()
        self.mode = msg.decode("ascii", "replace") if msg else "none"
        if not fds:
            return
        lfd = fds[0]
        self.guard()
        poller = select.poll()
        poller.register(lfd, select.POLLIN)
        while True:
            ev = poller.poll()
            if not ev or ev[0][1] & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                if not ev or not ev[0][1] & select.POLLIN:
                    break
            buf = bytearray(80)
            try:
                fcntl.ioctl(lfd, NOTIF_RECV, buf, True)
            except OSError as e:
                if e.errno in (self.errno.EINTR, self.errno.ENOENT):
                    continue
                break
            nid, tid, _, nr = struct.unpack_from("=QIIi", buf, 0)
            args = struct.unpack_from("=6Q", buf, 32)
            # Held from the call's arrival until it is recorded: the code's
            # call returns only once it is answered (inside), so a session's
            # step end, which takes this lock first, finds every call of the
            # step recorded (see take_step).
            with self.busy:
                try:
                    self.handle(lfd, nid, tid, NAMES.get(nr, str(nr)), args)
                except Exception as e:  # a bug here must not stop the code for ever
                    self.send(lfd, nid, err=self.errno.EPERM)
                    self.keep(self.tampered, "supervisor error on " + NAMES.get(nr, str(nr)) + ": " + repr(e)[:200])
        for f in self.mems.values():
            os.close(f)
        os.close(lfd)

    def handle(self, lfd, nid, tid, name, args):
        E = self.errno
        if name in ("open", "creat", "openat"):
            return self.open(lfd, nid, tid, name, args)
        if name in ("execve", "execveat"):
            path = self.read_str(tid, args[1] if name == "execveat" else args[0]) or "?"
            argv = []
            vec = args[2] if name == "execveat" else args[1]
            import struct
            for i in range(6):
                raw = self.read_bytes(tid, vec + 8 * i, 8) if vec else None
                if not raw or len(raw) < 8:
                    break
                p = struct.unpack("=Q", raw)[0]
                if not p:
                    break
                argv.append(self.read_str(tid, p, 256) or "?")
            self.keep(self.execs, {"call": name, "path": path, "argv": argv})
            return self.send(lfd, nid, err=E.EPERM)
        if name in ("fork", "vfork", "clone"):
            self.keep(self.execs, {"call": name, "flags": "0x%x" % (args[0] & 0xFFFFFFFF)} if name == "clone" else {"call": name})
            return self.send(lfd, nid, err=E.EPERM)
        if name in ("close", "dup2", "dup3", "close_range"):
            self.keep(self.tampered, "the code tried to close or replace the interpreter's audit channel (%s on descriptor %d)" % (name, self.aud_fd))
            return self.send(lfd, nid, err=E.EPERM)
        if name == "socket":
            dom = args[0] & 0xFFFFFFFF
            self.keep(self.sockets, {"call": "socket", "target": FAMILIES.get(dom, str(dom)), "denied": False})
            return self.send(lfd, nid, cont=True)
        if name in ("connect", "bind"):
            # Refused, whatever the rules: the network is `none`, so there is
            # no target, and an address read here could differ from the one
            # the kernel would read if the call went on. The target is shown
            # as the code gave it; the call never happened.
            raw = self.read_bytes(tid, args[1], min(args[2] & 0xFFFFFFFF, 110)) or b""
            fam = int.from_bytes(raw[:2], "little") if len(raw) >= 2 else -1
            target = FAMILIES.get(fam, str(fam))
            if fam == 1:
                p = raw[2:]
                target += " " + (("@" + p[1:].split(b"\0")[0].decode("utf-8", "replace")) if p[:1] == b"\0" else p.split(b"\0")[0].decode("utf-8", "replace"))
            self.keep(self.sockets, {"call": name, "target": target, "denied": True, "result": "EACCES"})
            return self.send(lfd, nid, err=E.EACCES)
        if name in CHANGES:
            return self.change(lfd, nid, tid, name, args)
        return self.send(lfd, nid, err=E.ENOSYS)

    def open(self, lfd, nid, tid, name, args):
        import fcntl, struct
        E = self.errno
        if name == "openat":
            dirfd = args[0] & 0xFFFFFFFF
            dirfd = dirfd - (1 << 32) if dirfd >= 1 << 31 else dirfd
            addr, flags, mode = args[1], args[2] & 0xFFFFFFFF, args[3] & 0o7777
        elif name == "open":
            dirfd, addr, flags, mode = AT_FDCWD, args[0], args[1] & 0xFFFFFFFF, args[2] & 0o7777
        else:
            dirfd, addr, flags, mode = AT_FDCWD, args[0], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, args[1] & 0o7777
        path = self.read_str(tid, addr)
        if path is None:
            return self.send(lfd, nid, err=E.EFAULT)
        acc = flags & 3
        how = {0: "r", 1: "w", 2: "rw"}.get(acc, "r") + ("+create" if flags & os.O_CREAT else "")
        writing = acc != 0 or bool(flags & (os.O_CREAT | os.O_TRUNC))
        if flags & (os.O_CREAT | getattr(os, "O_TMPFILE", 0)):
            mode &= ~self.umask(tid)
        opened = self.own_view(path, tid)
        dfd = None
        try:
            if not opened.startswith("/"):
                base = "/proc/%d/cwd" % tid if dirfd == AT_FDCWD else "/proc/%d/fd/%d" % (tid, dirfd)
                try:
                    dfd = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                except OSError as e:
                    return self.send(lfd, nid, err=E.EBADF if e.errno == E.ENOENT else e.errno)
                try:
                    joined = os.readlink(base) + "/" + path
                except OSError:
                    joined = path
                if joined.startswith("/proc/"):
                    # Relative to a folder in /proc: `self` there is the
                    # code's, as for an absolute path.
                    opened = self.own_view(joined, tid)
                    os.close(dfd)
                    dfd = None
            else:
                joined = opened
            asked = os.path.normpath(joined if not path.startswith("/") else path)
            if joined.startswith("/proc/") and ".." in joined.split("/"):
                # `..` through /proc leads from the code's entry to another
                # process's (this runner's): refused, never resolved.
                self.note_open(path, asked, how, "EACCES", True)
                return self.send(lfd, nid, err=E.EACCES)
            # This process may open its own /proc/1/fd/1 (the frames) and
            # other magic links the code may not: only a path that names the
            # code's own /proc entry, with no `..`, follows them, and what it
            # leads to is checked below like any file.
            head = joined.split("/")[2] if joined.startswith("/proc/") else ""
            own = head.isdigit() and self.code_pid(int(head)) and dfd is None
            try:
                fd = self.openat2(AT_FDCWD if dfd is None else dfd, opened, flags | os.O_CLOEXEC, mode, 0 if own else RESOLVE_NO_MAGICLINKS)
            except OSError as e:
                self.note_open(asked, asked, how, E.errorcode.get(e.errno, str(e.errno)), False)
                return self.send(lfd, nid, err=e.errno)
        finally:
            if dfd is not None:
                os.close(dfd)
        try:
            try:
                real = os.readlink("/proc/self/fd/%d" % fd)
            except OSError:
                real = asked
            import stat
            try:
                st = os.fstat(fd)
                listing = not writing and stat.S_ISDIR(st.st_mode)
                held = self.guarded.get((st.st_dev, st.st_ino))
            except OSError:
                listing, held = False, "none"
            if held is not None and not (held == "write" and acc == os.O_WRONLY):
                # One of this process's own descriptors (its stdin, frames,
                # stderr, pipes), reached through a magic link: never served.
                self.note_open(asked, real + " (the runner's own)", how, "EACCES", True)
                return self.send(lfd, nid, err=E.EACCES)
            if self.refuses(real, writing, listing):
                self.note_open(asked, real, how, "EACCES", True)
                return self.send(lfd, nid, err=E.EACCES)
            # SECCOMP_ADDFD_FLAG_SEND: the descriptor is the call's answer.
            # The hand-over itself can fail (EMFILE: the code's own limit),
            # and then the open is recorded with that error.
            req = bytearray(struct.pack("=QIIII", nid, 2, fd, 0, os.O_CLOEXEC if flags & os.O_CLOEXEC else 0))
            result = "ok"
            try:
                fcntl.ioctl(lfd, NOTIF_ADDFD, req, True)
            except OSError as e:
                if e.errno == E.ENOENT:
                    result = "ENOENT (the thread was gone before the hand-over)"
                else:
                    result = E.errorcode.get(e.errno, str(e.errno)) + " (handing the descriptor over)"
                    self.send(lfd, nid, err=e.errno)
            self.note_open(asked, real, how, result, False)
        finally:
            os.close(fd)

    def own_view(self, path, tid):
        # /proc/self here would be this runner's: name the code's own.
        for own, mine in (("/proc/self", "/proc/%d" % self.child), ("/proc/thread-self", "/proc/%d/task/%d" % (self.child, tid)),
                          ("/dev/fd", "/proc/%d/fd" % tid), ("/dev/stdin", "/proc/%d/fd/0" % tid),
                          ("/dev/stdout", "/proc/%d/fd/1" % tid), ("/dev/stderr", "/proc/%d/fd/2" % tid)):
            if path == own or path.startswith(own + "/"):
                return mine + path[len(own):]
        return path

    def openat2(self, dirfd, path, flags, mode, resolve):
        import ctypes
        if self.libc is None:
            self.libc = ctypes.CDLL(None, use_errno=True)
            self.libc.syscall.restype = ctypes.c_long
        how = (ctypes.c_uint64 * 3)(flags, mode if flags & (os.O_CREAT | getattr(os, "O_TMPFILE", 0)) else 0, resolve)
        fd = self.libc.syscall(ctypes.c_long(OPENAT2), ctypes.c_long(dirfd), ctypes.c_char_p(os.fsencode(path)),
                               ctypes.byref(how), ctypes.c_size_t(24))
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        return fd

    def refuses(self, real, writing, listing=False):
        # Always: another process's /proc (this runner's, through /proc/self
        # indirections such as a symlink to it), and writing an input.
        if real.startswith("/proc/"):
            head = real.split("/")[2]
            if head.isdigit() and not self.code_pid(int(head)):
                return True
        if writing and (real + "/").startswith("/data/"):
            return True
        if not self.restrict or listing:
            return False
        if not real.startswith("/"):
            return False  # pipe:[..], socket:[..], anon_inode: the code's own descriptors
        if writing:
            return not (real + "/").startswith(WRITE_OK) and real not in WRITE_OK
        if real.startswith("/proc/%d/" % self.child) or real == "/proc/%d" % self.child:
            rest = real.split("/", 3)[3] if real.count("/") >= 3 else ""
            return rest.split("/")[0] in ("environ", "mem", "root", "cwd", "exe", "map_files")
        return not ((real + "/").startswith(READ_OK) or real.startswith(READ_OK) or real in READ_OK)

    def unseen(self, reported):
        # The interpreter's record against the kernel's: an open the hook
        # reports (and let through) that no system call made is a forgery.
        if self.mode != "notify":
            return []
        out = []
        for f in reported:
            p = f.get("path", "")
            if f.get("denied") or p in self.paths or len(self.paths) >= 20000:
                continue
            # Only the inputs and the results: a library may pass io.open a
            # directory and an opener that opens a file in it (tempfile).
            if not p.startswith(("/data/", "/out/")):
                continue
            out.append("the interpreter's record names an open of " + p[:200] + " that the kernel never saw")
            if len(out) >= 5:
                break
        return out

    def note_open(self, asked, real, how, result, denied):
        if len(self.paths) < 20000:
            self.paths.update((asked, real))
        quiet = not denied and how == "r" and real.startswith(QUIET)
        if quiet:
            self.library_reads += 1
            return
        # Each file once per mode and result, with the first route to it: a
        # thousand symlinks to /etc are one kind's 69 files, not a flood.
        key = (real, how, result)
        if key in self.seen:
            return
        if len(self.seen) < 100000:
            self.seen.add(key)
        self.events += 1
        top = real.split("/")[1] if real.startswith("/") else ""
        if top and not os.path.isdir("/" + top):
            top = "?"  # a missing top folder: one kind for all of them
        kind = (top, "denied" if denied else "ok" if result == "ok" else "failed")
        held = self.kinds.get(kind, 0)
        if held >= (KIND_CAP_IO if top in ("data", "out") else KIND_CAP):
            self.truncated = True
            return
        self.kinds[kind] = held + 1
        item = {"path": real, "mode": how, "result": result, "denied": denied}
        if asked != real:
            item["asked"] = asked
        self.files.append(item)

    # -- changes without an open, carried out here
    def change(self, lfd, nid, tid, name, args):
        # The call's paths are read once; the folder of each is opened here
        # (no magic links), checked, and the change made on it by this
        # process, so the record names what was changed. Only under /tmp and
        # /out; an input under /data never.
        E = self.errno
        def sfd(v):
            v &= 0xFFFFFFFF
            return v - (1 << 32) if v >= 1 << 31 else v
        a = list(args)
        # Each call as its *at form: (dirfd, path) pairs and the rest.
        if name in ("rename", "link"):
            a = [AT_FDCWD, a[0], AT_FDCWD, a[1], 0]
        elif name == "symlink":
            a = [a[0], AT_FDCWD, a[1]]
        elif name in ("unlink", "rmdir"):
            a = [AT_FDCWD, a[0], 0x200 if name == "rmdir" else 0]
        elif name == "mkdir":
            a = [AT_FDCWD, a[0], a[1]]
        elif name in ("utime", "utimes", "truncate"):
            a = [AT_FDCWD, a[0], a[1], 0]
        at = {"rename": "renameat2", "renameat": "renameat2", "link": "linkat", "symlink": "symlinkat",
              "unlink": "unlinkat", "rmdir": "unlinkat", "mkdir": "mkdirat", "utime": "utimensat",
              "utimes": "utimensat"}.get(name, name)
        item = {"call": name, "path": "?", "result": "ok", "denied": False}
        opened = []
        try:
            if at == "symlinkat":
                target = self.read_str(tid, a[0])
                if target is None:
                    raise OSError(E.EFAULT, "")
                item["to"] = target
                d, leaf = self.folder(tid, sfd(a[1]), a[2], item, opened)
                os.symlink(target, leaf, dir_fd=d)
            elif at in ("renameat2", "linkat"):
                d1, leaf1 = self.folder(tid, sfd(a[0]), a[1], item, opened)
                seen = {}
                d2, leaf2 = self.folder(tid, sfd(a[2]), a[3], seen, opened)
                item["to"] = seen["path"]
                flags = (a[4] & 0xFFFFFFFF) if name in ("renameat2", "linkat") else 0
                if at == "renameat2":
                    self.syscall(RENAMEAT2, d1, os.fsencode(leaf1), d2, os.fsencode(leaf2), flags)
                elif flags & ~0x400:  # only AT_SYMLINK_FOLLOW
                    raise OSError(E.EINVAL, "")
                elif flags:
                    # Follow the old name's symlink here (no magic link), and
                    # link the file it led to, checked like the folders.
                    f = self.openat2(d1, leaf1, os.O_PATH | os.O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS)
                    opened.append(f)
                    item["path"] = os.readlink("/proc/self/fd/%d" % f)
                    if not self.changeable(item["path"]):
                        raise PermissionError(E.EACCES, "")
                    os.link("/proc/self/fd/%d" % f, leaf2, dst_dir_fd=d2, follow_symlinks=True)
                else:
                    os.link(leaf1, leaf2, src_dir_fd=d1, dst_dir_fd=d2, follow_symlinks=False)
            elif at == "unlinkat":
                d, leaf = self.folder(tid, sfd(a[0]), a[1], item, opened)
                flags = a[2] & 0xFFFFFFFF
                if flags & ~0x200:
                    raise OSError(E.EINVAL, "")
                (os.rmdir if flags else os.unlink)(leaf, dir_fd=d)
            elif at == "mkdirat":
                d, leaf = self.folder(tid, sfd(a[0]), a[1], item, opened)
                os.mkdir(leaf, (a[2] & 0o7777) & ~self.umask(tid), dir_fd=d)
            elif at == "truncate":
                # Where the path leads first (no permission asked), checked,
                # and only then opened for writing through that same file,
                # as truncate(2) requires.
                where = self.resolve(tid, AT_FDCWD, a[1], item, opened)
                f = os.open("/proc/self/fd/%d" % where, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
                opened.append(f)
                length = a[2] - (1 << 64) if a[2] >= 1 << 63 else a[2]
                os.ftruncate(f, length)
            elif at == "utimensat":
                self.utime(tid, name, a, item, opened)
        except PermissionError as e:
            # Refused here (outside /tmp and /out), or by the file system.
            mine = e.errno == E.EACCES and not e.strerror
            item["result"] = "EACCES" if mine else E.errorcode.get(e.errno, str(e.errno))
            item["denied"] = mine
        except OSError as e:
            item["result"] = E.errorcode.get(e.errno, str(e.errno))
        finally:
            for f in opened:
                os.close(f)
        self.keep(self.changes, item)
        if item["result"] == "ok":
            return self.send(lfd, nid)
        return self.send(lfd, nid, err=getattr(E, item["result"], E.EPERM))

    def changeable(self, real):
        return (real + "/").startswith(CHANGE_OK) and real not in ("/tmp", "/out")

    def base(self, tid, dirfd, path, opened):
        # The folder a path is relative to: the code's working directory or
        # its dirfd (its own descriptor, followed here), or / for an
        # absolute path.
        if path.startswith("/"):
            return AT_FDCWD
        where = "/proc/%d/cwd" % tid if dirfd == AT_FDCWD else "/proc/%d/fd/%d" % (tid, dirfd)
        try:
            f = os.open(where, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as e:
            raise OSError(self.errno.EBADF if e.errno == self.errno.ENOENT else e.errno, "")
        opened.append(f)
        return f

    def folder(self, tid, dirfd, addr, item, opened):
        # The folder holding the path's last name, opened here without magic
        # links, and the last name: the change happens on exactly that.
        E = self.errno
        path = self.read_str(tid, addr)
        if path is None:
            raise OSError(E.EFAULT, "")
        item["path"] = path
        if not path:
            raise OSError(E.ENOENT, "")
        head, _, leaf = path.rstrip("/").rpartition("/")
        if leaf in ("", ".", ".."):
            raise PermissionError(E.EACCES, "") if not path.strip("/") else OSError(E.EINVAL, "")
        d = self.base(tid, dirfd, path, opened)
        if head or path.startswith("/"):
            d = self.openat2(d, head or "/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS)
            opened.append(d)
        real = os.readlink("/proc/self/fd/%d" % d).rstrip("/") + "/" + leaf
        item["path"] = real
        if not self.changeable(real):
            raise PermissionError(E.EACCES, "")
        return d, leaf

    def resolve(self, tid, dirfd, addr, item, opened):
        # The file a path leads to (symlinks followed, no magic link),
        # opened here with O_PATH (no permission asked) and checked: the
        # change is made through that descriptor, on exactly that file.
        E = self.errno
        path = self.read_str(tid, addr)
        if path is None:
            raise OSError(E.EFAULT, "")
        item["path"] = path
        d = self.base(tid, dirfd, path, opened)
        f = self.openat2(d, path, os.O_PATH | os.O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS)
        opened.append(f)
        item["path"] = os.readlink("/proc/self/fd/%d" % f)
        if not self.changeable(item["path"]):
            raise PermissionError(E.EACCES, "")
        return f

    def utime(self, tid, name, a, item, opened):
        # The times are read once into this process; the file is opened here
        # (O_PATH, no magic link) and its times set through that descriptor.
        import ctypes, struct
        E = self.errno
        dirfd, addr, times, flags = a[0] & 0xFFFFFFFF, a[1], a[2], a[3] & 0xFFFFFFFF
        dirfd = dirfd - (1 << 32) if dirfd >= 1 << 31 else dirfd
        if flags & ~0x100:  # only AT_SYMLINK_NOFOLLOW
            raise OSError(E.EINVAL, "")
        ts = None
        if times:
            size = {"utime": 16, "utimes": 32}.get(name, 32)
            raw = self.read_bytes(tid, times, size)
            if raw is None or len(raw) < size:
                raise OSError(E.EFAULT, "")
            v = struct.unpack("=%dq" % (size // 8), raw)
            if name == "utime":
                v = (v[0], 0, v[1], 0)
            elif name == "utimes":
                v = (v[0], v[1] * 1000, v[2], v[3] * 1000)
            ts = (ctypes.c_int64 * 4)(*v)
        if addr and flags & 0x100:
            # The link itself, not what it leads to: on its folder.
            d, leaf = self.folder(tid, dirfd, addr, item, opened)
            return self.syscall(UTIMENSAT, d, os.fsencode(leaf), ts, 0x100)
        if addr:
            f = self.resolve(tid, dirfd, addr, item, opened)
        elif name == "utimensat":
            # futimens: the code's own descriptor.
            try:
                f = os.open("/proc/%d/fd/%d" % (tid, dirfd), os.O_PATH | os.O_CLOEXEC)
            except OSError:
                raise OSError(E.EBADF, "")
            opened.append(f)
            item["path"] = os.readlink("/proc/self/fd/%d" % f)
            if not self.changeable(item["path"]):
                raise PermissionError(E.EACCES, "")
        else:
            raise OSError(E.EFAULT, "")
        self.syscall(UTIMENSAT, AT_FDCWD, os.fsencode("/proc/self/fd/%d" % f), ts, 0)

    def syscall(self, nr, *args):
        import ctypes
        if self.libc is None:
            self.libc = ctypes.CDLL(None, use_errno=True)
            self.libc.syscall.restype = ctypes.c_long
        conv = [ctypes.c_long(v) if isinstance(v, int) else v for v in args]
        if self.libc.syscall(ctypes.c_long(nr), *conv) < 0:
            e = ctypes.get_errno()
            raise (PermissionError if e in (self.errno.EPERM, self.errno.EACCES) else OSError)(e, os.strerror(e))


def nondumpable():
    # Keep the code out of this process's memory and fds via /proc (Linux
    # honours it; gVisor does not, hence also the uids below). Again after
    # every change of uid: the kernel resets it then.
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
        pass


def scrub_environ():
    # /proc/1/environ is the live memory of the environment block this
    # process was started with. Linux keeps it from the code (non-dumpable);
    # this gVisor gives it mode 0444. So the block is zeroed in place: the
    # interpreter already holds its copy (os.environ, which the child's
    # environment is made from), and no libc call of the runner needs one
    # (TZ, the locale and the rest are read at start-up). Then libc's
    # environ is emptied too, so nothing reads the zeroed strings.
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        env = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
        p = ctypes.cast(env, ctypes.POINTER(ctypes.c_void_p))
        i = 0
        while p[i]:
            ctypes.memset(p[i], 0, len(ctypes.string_at(p[i])))
            i += 1
        if i:
            p[0] = None
    except Exception as e:
        os.write(2, ("compute-bot sandbox: the runner could not clear its environment (" + repr(e)[:200] + "); nothing was run\n").encode())
        os._exit(70)


# ---------------------------------------------------------------- two uids
# Started as root with only CAP_SETUID and CAP_SETGID (the engine's third
# argument, "<runner uid>:<code uid>", says so), the runner gives them up
# for good before anything else: from then on it is real and saved uid R,
# effective uid C (gids alike, no supplementary groups), and the code runs
# as C in all three. So the code can neither signal pid 1 (kill needs its
# uid to match the runner's real or saved uid) nor pass the kernel's ptrace
# check on /proc/1 (uid, euid and suid must all match), while the runner
# still reads the code's memory for the supervisor (its fsuid is C). Its
# pipes and the inputs are made with effective uid R for a moment: owned
# by R, mode 0600 and 0444, so the code cannot open them through /proc/1/fd
# (gVisor checks the file's owner there, not the ptrace rule) nor chmod
# them. Started as any other user (Podman) everything stays one uid.
IDS = None


def become(real, effective, saved):
    # gids first: once no uid is 0 the capabilities are gone.
    os.setresgid(real, effective, saved)
    os.setresuid(real, effective, saved)
    nondumpable()


def drop_root():
    global IDS
    if os.geteuid() != 0:
        return
    try:
        r, c = (int(x) for x in sys.argv[3].split(":"))
        if r <= 0 or c <= 0 or r == c:
            raise ValueError
        os.setgroups([])
        become(r, c, r)
        # (gVisor shows no CapAmb line.)
        with open("/proc/self/status") as f:
            caps = {line.split()[0]: line.split()[1] for line in f if line.startswith(("CapPrm:", "CapEff:", "CapAmb:"))}
        if len(caps) < 2 or any(int(x, 16) for x in caps.values()) or os.getresuid() != (r, c, r):
            raise OSError("capabilities or uids left after the drop: %r %r" % (caps, os.getresuid()))
    except Exception as e:
        os.write(2, ("compute-bot sandbox: the runner could not give up root (" + repr(e)[:200] + "); nothing was run\n").encode())
        os._exit(70)
    IDS = (r, c)


def as_runner():
    # Effective uid R (the code's uid kept as the saved one, to go back).
    if IDS:
        become(IDS[0], IDS[0], IDS[1])


def as_code():
    # Effective uid C, real and saved R: the runner's steady state.
    if IDS:
        become(IDS[0], IDS[1], IDS[0])


def deaf():
    # pid 1 ignores every signal that can be ignored (SIGKILL and SIGSTOP
    # cannot: the code's uid may not send them here, and under runc the
    # kernel drops them from inside the container). Not SIGCHLD: wait4
    # needs it. After the child is spawned, so the code keeps the defaults.
    import signal
    for s in signal.valid_signals():
        if s in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
            continue
        try:
            signal.signal(s, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass


def oom_kills():
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2 and parts[0] == "oom_kill":
                        return int(parts[1])
        except OSError:
            continue
    return None


def read_exact(stream, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(min(1 << 16, n - len(buf)))
        if not chunk:
            raise EOFError("stdin closed early")
        buf += chunk
    return bytes(buf)


def spawn_child():
    # The child interpreter starts now and waits for its code on a pipe, so
    # its start-up overlaps ours and the wait for the job.
    # -I would ignore PYTHONHASHSEED: isolate with -s -P and an environment
    # without PYTHON* variables other than the fixed hash seed instead.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "0")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["MPLCONFIGDIR"] = "/tmp/mpl"
    # Same code, data and image: the same bytes. PDF/PS/SVG dates come from
    # SOURCE_DATE_EPOCH, SVG ids from svg.hashsalt (the matplotlibrc that
    # main() writes); PNGs carry no date.
    env["SOURCE_DATE_EPOCH"] = "0"
    env.setdefault("MPLBACKEND", "Agg")
    code_r, code_w = os.pipe()
    aud_r, aud_w = os.pipe()
    import socket
    sup_parent, sup_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    # The code's own channels (stdout, stderr, the audit pipe) belong to the
    # runner's uid like every pipe it makes, but others may write them: the
    # code opens its own /dev/stdout for writing (pandas' to_csv does), never
    # the runner's ends for reading.
    for fd in (out_w, err_w, aud_w):
        try:
            os.fchmod(fd, 0o622)
        except OSError:
            pass
    null = os.open("/dev/null", os.O_RDONLY)
    os.set_inheritable(code_r, True)
    os.set_inheritable(aud_w, True)
    sup_child.set_inheritable(True)
    preload = sys.argv[2] if len(sys.argv) > 2 else ""
    argv = [sys.executable, "-s", "-P", "-c", CHILD, str(code_r), str(aud_w), preload, str(sup_child.fileno())]
    pid = os.fork()
    if pid == 0:
        try:
            if IDS:
                os.setresgid(IDS[1], IDS[1], IDS[1])
                os.setresuid(IDS[1], IDS[1], IDS[1])
            # A session of its own: not even SIGCONT (allowed within a
            # session whatever the uids) reaches pid 1.
            os.setsid()
            for fd, to in ((null, 0), (out_w, 1), (err_w, 2)):
                os.dup2(fd, to)
            os.execve(sys.executable, argv, env)
        finally:
            os._exit(70)
    for fd in (code_r, aud_w, out_w, err_w, null):
        os.close(fd)
    sup_child.close()
    return pid, code_w, aud_r, out_r, err_r, aud_w, sup_parent


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def cpu_quota():
    # The container cgroup's CPU bandwidth limit as the kernel keeps it (v2
    # cpu.max, else v1's cfs files); quota None: no limit.
    v2 = read_text("/sys/fs/cgroup/cpu.max")
    if v2:
        q, _, p = v2.strip().partition(" ")
        if p.isdigit() and (q == "max" or q.isdigit()):
            return {"quota": None if q == "max" else int(q), "period": int(p)}
        return None
    for d in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
        q, p = read_text(d + "/cpu.cfs_quota_us"), read_text(d + "/cpu.cfs_period_us")
        if q and p and p.strip().isdigit() and q.strip().lstrip("-").isdigit():
            return {"quota": None if int(q) < 0 else int(q), "period": int(p)}
    return None


def cgroup_facts():
    # The container's cgroup, as the kernel keeps it (v2, else v1): peak
    # memory and CPU time of everything in the container.
    facts = {}
    peak = read_text("/sys/fs/cgroup/memory.peak") or read_text("/sys/fs/cgroup/memory/memory.max_usage_in_bytes")
    if peak and peak.strip().isdigit():
        facts["peak_memory_bytes"] = int(peak)
    stat = read_text("/sys/fs/cgroup/cpu.stat")
    if stat:
        for line in stat.splitlines():
            k, _, v = line.partition(" ")
            if k == "usage_usec" and v.strip().isdigit():
                facts["cpu_time_ms"] = int(v) // 1000
    else:
        usage = read_text("/sys/fs/cgroup/cpuacct/cpuacct.usage") or read_text("/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage")
        if usage and usage.strip().isdigit():
            facts["cpu_time_ms"] = int(usage) // 1000000
    return facts


def reap_orphans():
    # As pid 1 the runner inherits whatever the child left behind.
    while True:
        try:
            p, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if p == 0:
            return


# ---------------------------------------------------------------- the report
# Everything the code controls (paths, names, notes, audit records, argv,
# refused messages) reaches the bot through the report, so the report has
# bounds the code cannot push: each string is shown() (lossless, cut at
# TEXT_CAP characters with the cut stated), each list the runner keeps is
# bounded, /out is walked within OUT_DEPTH, OUT_ENTRIES and the name cap, and
# the report goes in pieces (REPORT_PIECE bytes, frames `p` then `r`) that fit
# the bot's frame reader.
TEXT_CAP = 1024
NOTES_CAP = 64
OUT_DEPTH = 16
OUT_ENTRIES = 4096
OUT_COUNTED = 65536
REPORT_PIECE = 256 << 10
AUDIT_LINE_CAP = 1 << 17
AUDIT_RECORDS = 400


def shown(v, cap=TEXT_CAP):
    # The report's one escaping (protocol.rs, "Text the code controls"):
    # UTF-8 text in which a backslash is `\\`, a byte that is not UTF-8 (a
    # name's byte, surrogateescape) is `\xNN` and a lone surrogate no byte
    # made is `\uXXXX`; cut at `cap` characters, with what was cut stated.
    s = v if isinstance(v, str) else str(v)
    total = len(s)
    s = s[: cap + 1]
    if "\\" in s or any("\ud800" <= c <= "\udfff" for c in s):
        out = []
        for c in s:
            o = ord(c)
            if c == "\\":
                out.append("\\\\")
            elif 0xDC80 <= o <= 0xDCFF:
                out.append("\\x%02x" % (o - 0xDC00))
            elif 0xD800 <= o <= 0xDFFF:
                out.append("\\u%04x" % o)
            else:
                out.append(c)
        pieces, n, kept = out, 0, 0
        for piece in pieces:
            if n + len(piece) > cap:
                break
            n += len(piece)
            kept += 1
        s = "".join(pieces[:kept])
        cut = total - kept
    else:
        cut = max(0, total - cap)
        s = s[:cap]
    if cut:
        s += "… (%d more characters not shown)" % cut
    return s


def shown_all(v):
    # The report with every string shown(); the keys are the runner's own.
    if isinstance(v, str):
        return shown(v)
    if isinstance(v, dict):
        return {k: shown_all(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [shown_all(x) for x in v]
    return v


def add_note(report, text):
    # At most NOTES_CAP notes; past them one more says how many were left out.
    notes = report["notes"]
    if len(notes) < NOTES_CAP:
        notes.append(text)
    else:
        report["notes_left_out"] = report.get("notes_left_out", 0) + 1


def walk_out(report):
    # /out, iteratively (a stack, no recursion), without following links:
    # regular files with (mtime, path relative to /out), every other entry
    # noted, and what the caps left out counted.
    files, stack, looked, counted, deep = [], [("", 0)], 0, 0, 0
    while stack:
        rel_dir, depth = stack.pop()
        try:
            it = os.scandir("/out/" + rel_dir if rel_dir else "/out")
        except OSError as e:
            add_note(report, "could not list /out/" + rel_dir + ": " + str(e.strerror))
            continue
        with it:
            for entry in it:
                rel = rel_dir + "/" + entry.name if rel_dir else entry.name
                if looked >= OUT_ENTRIES:
                    counted += 1
                    if counted >= OUT_COUNTED:
                        stack.clear()
                        break
                    if entry.is_dir(follow_symlinks=False) and depth + 1 < OUT_DEPTH:
                        stack.append((rel, depth + 1))
                    continue
                looked += 1
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    is_file = entry.is_file(follow_symlinks=False)
                    when = entry.stat(follow_symlinks=False).st_mtime_ns
                except OSError:
                    is_dir, is_file, when = False, False, 0
                if is_dir:
                    if depth + 1 >= OUT_DEPTH:
                        deep += 1
                    else:
                        stack.append((rel, depth + 1))
                elif len(shown(rel, TEXT_CAP + 1)) > TEXT_CAP:
                    add_note(report, "skipped artifact " + rel + " (its name is over %d characters)" % TEXT_CAP)
                elif not is_file:
                    add_note(report, "skipped artifact " + rel + " (not a regular file)")
                else:
                    files.append((when, rel, "/out/" + rel))
    if deep:
        report["notes"].append("%d folder(s) in /out deeper than %d levels not walked: what is in them is not collected" % (deep, OUT_DEPTH))
    if counted:
        more = ("at least %d" if counted >= OUT_COUNTED else "%d") % counted
        report["notes"].append("… %s entries in /out beyond the cap of %d not looked at: not collected" % (more, OUT_ENTRIES))
    # In the order the code wrote them (modification time, then name).
    files.sort()
    return files


def collect_out(report, caps):
    max_files = caps.get("artifacts_max_files", 16)
    max_bytes = caps.get("artifacts_max_bytes", 8 << 20)
    used = 0
    for _, rel, path in walk_out(report):
        try:
            with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW | os.O_NONBLOCK)) as f:
                st = os.fstat(f.fileno())
                import stat
                if not stat.S_ISREG(st.st_mode):
                    add_note(report, "skipped artifact " + rel + " (not a regular file)")
                    continue
                size = st.st_size
                if len(report["artifacts"]) >= max_files or used + size > max_bytes:
                    add_note(report, "dropped artifact " + rel + " (" + str(size) + " bytes): over the artifact caps")
                    continue
                data = f.read(size + 1)[:size]
        except OSError as e:
            add_note(report, "could not read artifact " + rel + ": " + str(e.strerror))
            continue
        used += len(data)
        frame(b"a", json.dumps({"name": shown(rel)}, ensure_ascii=False).encode())
        for i in range(0, len(data), 3072):
            frame(b"c", data[i:i + 3072])
        import hashlib  # only when there are artifacts: it loads OpenSSL
        report["artifacts"].append({"name": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})


def send_report(report, kind=b"r"):
    # Every string shown(), then the JSON in pieces that each fit a frame
    # line of the bot's reader: `p` frames, the last piece an `r` frame.
    left = report.pop("notes_left_out", 0)
    if left:
        report["notes"].append("… %d more notes not shown" % left)
    data = json.dumps(shown_all(report), ensure_ascii=False).encode("utf-8")
    while len(data) > REPORT_PIECE:
        frame(b"p", data[:REPORT_PIECE])
        data = data[REPORT_PIECE:]
    frame(kind, data)


def main():
    drop_root()
    nondumpable()
    scrub_environ()
    cpu_before = cpu_quota()
    # SIGINT ignored from the start (Python would install a handler), and
    # the code inherits that; every other signal once the child is spawned
    # (deaf).
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The font cache first: a preloading child imports matplotlib right away.
    os.makedirs("/tmp/mpl", exist_ok=True)
    try:
        for name in os.listdir("/opt/compute-bot/mpl"):
            with open("/opt/compute-bot/mpl/" + name, "rb") as s, open("/tmp/mpl/" + name, "wb") as d:
                d.write(s.read())
    except OSError:
        pass
    try:
        with open("/tmp/mpl/matplotlibrc", "w") as f:
            f.write("svg.hashsalt: compute-bot\n")
    except OSError:
        pass
    as_runner()
    pid, code_w, aud_r, out_r, err_r, aud_fd, sup_sock = spawn_child()
    as_code()
    deaf()

    stdin = sys.stdin.buffer
    idle = float(sys.argv[1]) if len(sys.argv) > 1 else 900.0
    ready, _, _ = select.select([stdin], [], [], idle)
    if not ready:
        os.kill(pid, 9)
        sys.exit(0)
    header = json.loads(stdin.readline())
    set_key(binascii.unhexlify(header["key"]))
    global QUIET
    QUIET = tuple(p for p in header.get("library") or () if isinstance(p, str) and p.startswith("/"))
    src = read_exact(stdin, header["code_len"])
    # The inputs are the runner's (effective uid R): the code cannot chmod them.
    as_runner()
    made = []
    for item in header.get("inputs", []):
        name = item["name"]
        # The job check's rule again (sandbox::input_name_problem): a plain
        # name, or github/<lowercase, digits, _>.csv in the bot's one folder.
        folder, _, leaf = name.rpartition("/")
        stem = leaf[:-4] if leaf.endswith(".csv") else ""
        if folder == "github":
            if not stem or any(c not in "abcdefghijklmnopqrstuvwxyz0123456789_" for c in stem):
                raise ValueError("bad input name")
            if not made:
                os.mkdir("/data/github", 0o755)
                made.append("/data/github")
        elif "/" in name or "\0" in name or name in ("", ".", "..", "github"):
            raise ValueError("bad input name")
        path = "/data/" + name
        left = item["size"]
        with open(path, "wb") as f:
            while left:
                chunk = stdin.read(min(1 << 16, left))
                if not chunk:
                    raise EOFError("stdin closed early")
                f.write(chunk)
                left -= len(chunk)
        os.chmod(path, 0o444)
    # The bot's folder read-only like /data itself, once its files are in.
    for d in made + ["/data"]:
        try:
            os.chmod(d, 0o555)
        except OSError:
            pass
    as_code()
    del header["key"]
    caps = header.get("caps", {})
    oom_before = oom_kills()
    started = time.monotonic()
    rules = header.get("rules") or {}
    flags = ("f" if rules.get("restrict_files") else "") + ("s" if rules.get("deny_subprocess") else "") + ("n" if rules.get("deny_network") else "")
    # A session of steps (see "sessions" below): the child keeps its
    # interpreter and waits for each next step.
    session = bool(header.get("session"))
    if session:
        flags += "t"
    denied = ",".join(m for m in rules.get("deny_imports") or [] if "," not in m and "\t" not in m)
    totals = {b"o": 0, b"e": 0}
    # What each pump has framed of the current step (the caps hold per step
    # in a session), and a lock each holds from reading a chunk until it is
    # framed: a step's end waits for both (see drain).
    sent = {b"o": 0, b"e": 0}
    pumping = {b"o": threading.Lock(), b"e": threading.Lock()}

    def pump(fd, kind, cap):
        while True:
            try:
                select.select([fd], [], [])
            except (OSError, ValueError):
                break
            with pumping[kind]:
                try:
                    chunk = os.read(fd, 1 << 15)
                except OSError:
                    break
                if not chunk:
                    break
                totals[kind] += len(chunk)
                if sent[kind] <= cap:
                    piece = chunk[: cap + 1 - sent[kind]]
                    sent[kind] += len(piece)
                    for i in range(0, len(piece), 3072):
                        frame(kind, piece[i:i + 3072])

    audit = {"files_opened": [], "network_attempts": [], "subprocess_attempts": [], "imports": [], "refused": [], "preloaded": [], "preload_skipped": [], "truncated": False}

    def unesc(v):
        out, i = [], 0
        while i < len(v):
            c = v[i]
            if c == "\\" and i + 1 < len(v):
                out.append({"t": "\t", "n": "\n"}.get(v[i + 1], v[i + 1]))
                i += 2
            else:
                out.append(c)
                i += 1
        return "".join(out)

    code_started = [None]
    unchecked = set()
    hold = bool(header.get("hold"))
    released = []

    def release():
        # The child has its modules; for a held run the bot lowers the CPU
        # quota first and says so with GO on stdin (anything else: the bot is
        # gone, and the code never starts). The quota the code starts under
        # is read here, by pid 1, before the code can run.
        if hold:
            frame(b"q", b"")
            if stdin.readline() != b"go\n":
                os.kill(pid, 9)
                return
        released.append(cpu_quota())
        try:
            os.write(code_w, b"g")
            if not session:
                os.close(code_w)
        except OSError:
            pass

    def pump_audit():
        lists = {"net": "network_attempts", "sub": "subprocess_attempts", "import": "imports", "refused": "refused", "preloaded": "preloaded", "preload_skipped": "preload_skipped"}
        records = 0
        with os.fdopen(aud_r, "rb") as f:
            while True:
                line = f.readline(AUDIT_LINE_CAP)
                if not line:
                    break
                if not line.endswith(b"\n") and len(line) >= AUDIT_LINE_CAP:
                    # Longer than any record the hook writes: skipped to its end.
                    while line and not line.endswith(b"\n"):
                        line = f.readline(AUDIT_LINE_CAP)
                    sup.keep(sup.tampered, "a line over %d bytes came on the interpreter's audit channel: its hook writes none that long" % AUDIT_LINE_CAP)
                    continue
                parts = [unesc(x) for x in line.decode("utf-8", "surrogateescape").rstrip("\n").split("\t")]
                k = parts[0]
                if k not in ("ready", "start", "truncated"):
                    records += 1
                    if records > AUDIT_RECORDS:
                        if records == AUDIT_RECORDS + 1:
                            sup.keep(sup.tampered, "more than %d records came on the interpreter's audit channel: its hook writes no more" % AUDIT_RECORDS)
                        continue
                if k == "ready" and (released or code_started[0] is not None):
                    sup.keep(sup.tampered, "a second ready on the interpreter's audit channel: something else wrote to it")
                elif k == "ready":
                    release()
                elif k == "start" and code_started[0] is not None:
                    sup.keep(sup.tampered, "a second start on the interpreter's audit channel: something else wrote to it")
                elif k == "start":
                    code_started[0] = time.monotonic()
                    step[0]["began"] = code_started[0]
                    frame(b"s", b"")
                    # The code has its whole time limit from here: the
                    # backstop counts from its start, not from the handover.
                    deadline[0] = time.monotonic() + timeout_s + 35.0
                elif k == "step" and not (session and step[0]["handed"] and step[0]["began"] is None):
                    sup.keep(sup.tampered, "a step's start came on the interpreter's audit channel when no step was handed over: something else wrote to it")
                elif k == "step":
                    step[0]["began"] = time.monotonic()
                    frame(b"s", b"")
                    deadline[0] = time.monotonic() + step[0]["timeout"] + 35.0
                elif k == "stepend" and not (session and len(parts) == 4 and step[0]["began"] is not None):
                    sup.keep(sup.tampered, "a step's end came on the interpreter's audit channel when no step ran: something else wrote to it")
                elif k == "stepend":
                    try:
                        rc_step = int(parts[1])
                    except ValueError:
                        rc_step = 1
                    end_step(rc_step, parts[3] if parts[2] == "1" else None)
                    records = 0
                    next_step()
                elif k == "open" and len(parts) == 5:
                    audit["files_opened"].append({"path": parts[1], "mode": parts[2], "denied": parts[3] == "1"})
                    if parts[4] == "1" or code_started[0] is None:
                        # Relative to a dir_fd the event does not name, or
                        # opened by the sandbox's own set-up before the code.
                        unchecked.add(parts[1])
                elif k in lists and len(parts) == 2:
                    audit[lists[k]].append(parts[1])
                elif k == "truncated":
                    audit["truncated"] = True
                else:
                    sup.keep(sup.tampered, "a line the interpreter's hook does not write came on its audit channel: " + repr(line[:80]))
            # The channel closed: at the child's exit, or before it, when
            # the code closed it (the second stage refuses that under runc).
            # (At an exit the descriptors close a moment before the process
            # is a zombie: allow for that.)
            alive = None
            for _ in range(200):
                try:
                    alive = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    alive = True
                if alive is not None or exited.wait(0.005):
                    break
            if alive is None and code_started[0] is not None and not exited.is_set():
                sup.keep(sup.tampered, "the interpreter's audit channel closed while the code still ran")

    # The bot kills the container at the deadline; this backstop ends the code
    # when the bot is gone, so the container stops and is removed as a leftover.
    # Until the code starts (a preload may still run) it allows for the bot's
    # 30 s preload grace too. One thread with a deadline that "start" moves:
    # every thread of this process starts before the child has its code, since
    # code that exhausts the pids limit would leave none to start later (a
    # fork bomb once ended the audit thread this way, and its audit with it).
    timeout_s = caps.get("timeout_ms", 600000) / 1000.0
    deadline = [time.monotonic() + timeout_s + 65.0]
    done = threading.Event()

    def backstop():
        while not done.wait(max(0.0, min(deadline[0] - time.monotonic(), 5.0))):
            if time.monotonic() >= deadline[0]:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
                return

    # ------------------------------------------------------------ sessions
    # In a session the child keeps its interpreter after each step. At a
    # step's end (its "stepend" record) the runner waits until the step's
    # output is framed, reports the step with its own facts (a `t` frame:
    # the report's shape, each figure this step's; the kernel's record of
    # this step; the files in /out for a last step), and reads the bot's
    # next line: "step <length> <last 0|1> <timeout ms>" and the code, or
    # "end" (or the end of stdin: the bot is gone), which closes the
    # child's pipe so it exits. The bot freezes the container while it
    # waits for the model, so nothing runs between steps.
    step = [dict(n=1, handed=True, began=None, last=bool(header.get("last")), timeout=timeout_s,
                 cpu0=0, out0=0, err0=0, oom0=oom_before)]

    def drain():
        # The step's output is in the pipes before its end is written (the
        # child flushes first): wait until both are read, and framed.
        import fcntl, struct, termios
        until = time.monotonic() + 2.0
        while time.monotonic() < until:
            left = 0
            for fd in (out_r, err_r):
                try:
                    left += struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
                except OSError:
                    pass
            if not left:
                break
            time.sleep(0.001)
        with pumping[b"o"], pumping[b"e"]:
            pass

    def proc_cpu_ms():
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) * 1000 // os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def proc_peak():
        # The kernel's high-water mark of the process's memory: the peak of
        # the session so far.
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def end_step(rc, value):
        ended_at = time.monotonic()
        st = step[0]
        drain()
        # Every call of the step answered is recorded before the record is
        # read (the supervisor holds this from a call's arrival to its record).
        with sup.busy:
            pass
        cpu = proc_cpu_ms()
        oom = oom_kills()
        files = audit["files_opened"]
        report = {
            "exit_code": rc,
            "signal": None,
            "duration_ms": int((ended_at - st["began"]) * 1000),
            "start_wait_ms": int((st["began"] - started) * 1000) if st["n"] == 1 else 0,
            "peak_memory_bytes": proc_peak(),
            "cpu_time_ms": max(0, (cpu or 0) - st["cpu0"]),
            "stdout_bytes": totals[b"o"] - st["out0"],
            "stderr_bytes": totals[b"e"] - st["err0"],
            "oom_kills": None if oom is None or st["oom0"] is None else oom - st["oom0"],
            "audit": dict(audit),
            "artifacts": [],
            "notes": [],
            "cgroup": dict(cgroup_facts(), cpu_before_code=cpu_before, cpu_at_code_start=released[0] if released else None),
            "tampered": sup.tampered + sup.unseen([f for f in files if f["path"] not in unchecked]),
            "step": st["n"],
            "value": value,
        }
        report["kernel"] = sup.take_step()
        for key in ("files_opened", "network_attempts", "subprocess_attempts", "imports", "refused"):
            audit[key] = []
        audit["truncated"] = False
        if st["last"]:
            collect_out(report, caps)
        send_report(report, b"t")
        sent[b"o"] = sent[b"e"] = 0
        deadline[0] = float("inf")
        step[0] = dict(n=st["n"] + 1, handed=False, began=None, last=False, timeout=timeout_s,
                       cpu0=cpu or 0, out0=totals[b"o"], err0=totals[b"e"], oom0=oom)

    def next_step():
        # The bot's line carries a tag over the step's number, options and
        # code with the session's key: under gVisor the code can open pid
        # 1's stdin (/proc/1/fd/0), and a step it wrote there itself would
        # otherwise run, and be reported, as the bot's.
        from _operator import _compare_digest
        line = stdin.readline(256)
        parts = line.split()
        if len(parts) == 5 and parts[0] == b"step":
            try:
                size, last, ms = int(parts[1]), parts[2] == b"1", int(parts[3])
                text = read_exact(stdin, size)
            except (ValueError, EOFError):
                text = None
            signed = b"step:%d:%s:%s:" % (step[0]["n"], parts[2], parts[3])
            if text is not None and not _compare_digest(tag(signed + text), parts[4]):
                sup.keep(sup.tampered, "a step came on the runner's stdin without the bot's tag: something else wrote there")
                text = None
            if text is not None:
                st = step[0]
                st.update(handed=True, last=last, timeout=ms / 1000.0)
                deadline[0] = time.monotonic() + st["timeout"] + 65.0
                try:
                    os.write(code_w, b"%d\n" % len(text))
                    view = memoryview(text)
                    while view:
                        view = view[os.write(code_w, view[:1 << 16]):]
                except OSError:
                    pass
                return
        # "end", the end of stdin, or a line the bot never writes: the
        # child's pipe closes and it exits.
        try:
            os.close(code_w)
        except OSError:
            pass

    exited = threading.Event()
    sup = Supervisor(pid, rules, aud_fd)
    threads = [
        threading.Thread(target=sup.run, args=(sup_sock,), daemon=True),
        threading.Thread(target=pump, args=(out_r, b"o", caps.get("stdout", 65536)), daemon=True),
        threading.Thread(target=pump, args=(err_r, b"e", caps.get("stderr", 65536)), daemon=True),
        threading.Thread(target=pump_audit, daemon=True),
    ]
    for t in threads + [threading.Thread(target=backstop, daemon=True)]:
        t.start()
    os.write(code_w, ("%d\t%s\t%s\n" % (len(src), flags, denied)).encode())
    # The pipe holds 64 KiB; write the rest from a thread so a huge script
    # cannot block us. The pipe stays open for the release (`g`).
    def feed():
        try:
            view = memoryview(src)
            while view:
                n = os.write(code_w, view[:1 << 16])
                view = view[n:]
        except OSError:
            pass
    threading.Thread(target=feed, daemon=True).start()
    _, status, ru = os.wait4(pid, 0)
    exited.set()
    done.set()
    ended = time.monotonic()
    # A grandchild may keep the pipes open; do not wait for it.
    for t in threads:
        t.join(timeout=0.5)
    exit_code = os.waitstatus_to_exitcode(status)
    # The audit thread may read the child's "start" only after wait4 returned
    # (a short program on a loaded host): the code ran no later than it ended.
    began = min(code_started[0] or started, ended)
    if session and step[0]["began"] is not None:
        began = min(step[0]["began"], ended)  # the step that was running
    report = {
        "exit_code": exit_code if exit_code >= 0 else None,
        "signal": -exit_code if exit_code < 0 else None,
        "duration_ms": int((ended - began) * 1000),
        "start_wait_ms": int((began - started) * 1000),
        "peak_memory_bytes": ru.ru_maxrss * 1024,
        "cpu_time_ms": int((ru.ru_utime + ru.ru_stime) * 1000),
        "stdout_bytes": totals[b"o"],
        "stderr_bytes": totals[b"e"],
        "oom_kills": None if oom_before is None else (oom_kills() or 0) - oom_before,
        "audit": audit,
        "artifacts": [],
        "notes": [],
        "kernel": sup.record(),
        "cgroup": dict(cgroup_facts(), cpu_before_code=cpu_before, cpu_at_code_start=released[0] if released else None),
        "tampered": sup.tampered + sup.unseen([f for f in audit["files_opened"] if f["path"] not in unchecked]),
        "step": step[0]["n"] if session else None,
    }
    reap_orphans()
    # A session's /out goes with its last steps; here only when the child
    # ended during a step meant to give the result.
    if not session or (step[0]["last"] and step[0]["began"] is not None):
        collect_out(report, caps)
    send_report(report)
    out.flush()
    os._exit(0)


main()
