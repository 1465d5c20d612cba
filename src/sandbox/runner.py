# compute-bot sandbox runner. Runs inside the container as `python3 -I -S -c <this>`
# (no site: it needs only the standard library, and starts faster).
#
# It starts a fresh child interpreter (CHILD below) that waits for the code,
# then reads one job from stdin: a JSON header line, the code, the input files.
# It writes the inputs to /data, hands the code to the child, forwards the
# child's stdout/stderr as framed lines, collects /out and finally reports
# rusage and the audit trail. Every line it writes starts with a nonce that
# only the bot and this process know, so the code cannot forge the report.
#
# This is telemetry and convenience: the container (no network, read-only
# root, no capabilities, cgroup limits) is the enforcement.
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
quiet = ("/usr/lib/python3", "/usr/local/lib/python3", "/usr/share/matplotlib",
         "/usr/share/fonts", "/usr/share/zoneinfo", "/usr/share/fonts-", "/opt/compute-bot",
         "/usr/lib/python3.", "/etc/matplotlibrc", "/usr/share/tcltk")
read_ok = ("/data/", "/tmp/", "/out/", "/usr/", "/opt/compute-bot/", "/etc/localtime",
           "/etc/timezone", "/dev/null", "/dev/urandom", "/proc/self/", "/proc/cpuinfo",
           "/proc/meminfo", "/sys/devices/system/cpu/", "/sys/fs/cgroup/", "/etc/mime.types")
write_ok = ("/tmp/", "/out/", "/dev/null/")
seen = set()
count = [0]
def esc(v):
    return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
def send(kind, *values):
    if count[0] >= 400:
        if count[0] == 400:
            os.write(AUD, b"truncated\n")
            count[0] += 1
        return
    count[0] += 1
    try:
        os.write(AUD, ("\t".join([kind] + [esc(v) for v in values]) + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
def norm(p):
    if isinstance(p, bytes):
        p = p.decode("utf-8", "replace")
    if isinstance(p, int):
        return None
    p = os.fspath(p) if hasattr(p, "__fspath__") else str(p)
    if not p.startswith("/"):
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
            send("open", path, mode, "1" if bad else "0")
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
def show_source():
    import linecache
    linecache.cache["main.py"] = (len(src), None, src.splitlines(True), "main.py")
try:
    code = compile(src, "main.py", "exec")
except SyntaxError:
    import traceback
    show_source()
    traceback.print_exc(limit=0)
    sys.exit(1)
sys.stdout.reconfigure(line_buffering=True)
g = {"__name__": "__main__", "__builtins__": builtins, "__file__": "main.py"}
orig_import = builtins.__import__
def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    # Every `import` statement of the code, even of a module already loaded
    # (preloaded, or loaded by a library), which raises no "import" event.
    f = sys._getframe(1)
    if level == 0 and isinstance(name, str) and (f.f_code.co_filename in user_files or f.f_code in user_codes):
        if denied_module(name):
            refuse("import of " + name)
        for sub in fromlist or ():
            if isinstance(sub, str) and sub != "*" and denied_module(name + "." + sub) and not denied_module(name):
                refuse("import of " + name + "." + sub)
        top = name.split(".")[0]
        if top not in seen:
            seen.add(top)
            send("import", top)
    return orig_import(name, globals, locals, fromlist, level)
builtins.__import__ = guarded_import
for _m in _preloaded:
    send("preloaded", _m)
for _m in _skipped:
    send("preload_skipped", _m)
sys.addaudithook(hook)
try:
    os.write(AUD, b"start\n")
except OSError:
    pass
rc = 0
try:
    exec(code, g)
except SystemExit as e:
    c = e.code
    rc = c if isinstance(c, int) else (0 if c is None else 1)
    if not isinstance(c, int) and c is not None:
        print(c, file=sys.stderr)
except BaseException as e:
    import traceback
    show_source()
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "main.py":
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)
    rc = 1
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BaseException:
    pass
os._exit(rc)
'''

out = sys.stdout.buffer
out_lock = threading.Lock()


def frame(nonce, kind, payload):
    line = nonce + b":" + kind + b":" + binascii.b2a_base64(payload, newline=False) + b"\n"
    with out_lock:
        out.write(line)
        out.flush()


def nondumpable():
    # Keep the same-uid code out of this process's memory and fds via /proc.
    try:
        import ctypes
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:
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
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open("/dev/null", os.O_RDONLY)
    os.set_inheritable(code_r, True)
    os.set_inheritable(aud_w, True)
    preload = sys.argv[2] if len(sys.argv) > 2 else ""
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, "-s", "-P", "-c", CHILD, str(code_r), str(aud_w), preload],
        env,
        file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ],
    )
    for fd in (code_r, aud_w, out_w, err_w, null):
        os.close(fd)
    return pid, code_w, aud_r, out_r, err_r


def main():
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
    pid, code_w, aud_r, out_r, err_r = spawn_child()
    nondumpable()

    stdin = sys.stdin.buffer
    idle = float(sys.argv[1]) if len(sys.argv) > 1 else 900.0
    ready, _, _ = select.select([stdin], [], [], idle)
    if not ready:
        os.kill(pid, 9)
        sys.exit(0)
    header = json.loads(stdin.readline())
    nonce = header["nonce"].encode()
    src = read_exact(stdin, header["code_len"])
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
    del header["nonce"]
    caps = header.get("caps", {})
    oom_before = oom_kills()
    started = time.monotonic()
    rules = header.get("rules") or {}
    flags = ("f" if rules.get("restrict_files") else "") + ("s" if rules.get("deny_subprocess") else "") + ("n" if rules.get("deny_network") else "")
    denied = ",".join(m for m in rules.get("deny_imports") or [] if "," not in m and "\t" not in m)
    totals = {b"o": 0, b"e": 0}

    def pump(fd, kind, cap):
        sent = 0
        while True:
            try:
                chunk = os.read(fd, 1 << 15)
            except OSError:
                break
            if not chunk:
                break
            totals[kind] += len(chunk)
            if sent <= cap:
                piece = chunk[: cap + 1 - sent]
                sent += len(piece)
                for i in range(0, len(piece), 3072):
                    frame(nonce, kind, piece[i:i + 3072])

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

    def pump_audit():
        lists = {"net": "network_attempts", "sub": "subprocess_attempts", "import": "imports", "refused": "refused", "preloaded": "preloaded", "preload_skipped": "preload_skipped"}
        with os.fdopen(aud_r, "rb") as f:
            for line in f:
                parts = [unesc(x) for x in line.decode("utf-8", "replace").rstrip("\n").split("\t")]
                k = parts[0]
                if k == "start":
                    code_started[0] = time.monotonic()
                    frame(nonce, b"s", b"")
                    # The code has its whole time limit from here: the
                    # backstop counts from its start, not from the handover.
                    deadline[0] = time.monotonic() + timeout_s + 35.0
                elif k == "open" and len(parts) == 4:
                    audit["files_opened"].append({"path": parts[1], "mode": parts[2], "denied": parts[3] == "1"})
                elif k in lists and len(parts) == 2:
                    audit[lists[k]].append(parts[1])
                elif k == "truncated":
                    audit["truncated"] = True

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

    threads = [
        threading.Thread(target=pump, args=(out_r, b"o", caps.get("stdout", 65536)), daemon=True),
        threading.Thread(target=pump, args=(err_r, b"e", caps.get("stderr", 65536)), daemon=True),
        threading.Thread(target=pump_audit, daemon=True),
    ]
    for t in threads + [threading.Thread(target=backstop, daemon=True)]:
        t.start()
    os.write(code_w, ("%d\t%s\t%s\n" % (len(src), flags, denied)).encode())
    # The pipe holds 64 KiB; write the rest from a thread so a huge script cannot block us.
    def feed():
        try:
            view = memoryview(src)
            while view:
                n = os.write(code_w, view[:1 << 16])
                view = view[n:]
        except OSError:
            pass
        finally:
            os.close(code_w)
    threading.Thread(target=feed, daemon=True).start()
    _, status, ru = os.wait4(pid, 0)
    done.set()
    ended = time.monotonic()
    # A grandchild may keep the pipes open; do not wait for it.
    for t in threads:
        t.join(timeout=0.5)
    exit_code = os.waitstatus_to_exitcode(status)
    # The audit thread may read the child's "start" only after wait4 returned
    # (a short program on a loaded host): the code ran no later than it ended.
    began = min(code_started[0] or started, ended)
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
    }
    max_files = caps.get("artifacts_max_files", 16)
    max_bytes = caps.get("artifacts_max_bytes", 8 << 20)
    used = 0
    # In the order the code wrote them (modification time, then name).
    found = []
    for root, dirs, files in os.walk("/out"):
        for name in files:
            path = os.path.join(root, name)
            try:
                when = os.lstat(path).st_mtime_ns
            except OSError:
                when = 0
            found.append((when, os.path.relpath(path, "/out"), path))
    found.sort()
    for _, rel, path in found:
        try:
            if os.path.islink(path) or not os.path.isfile(path):
                report["notes"].append("skipped artifact " + rel + " (not a regular file)")
                continue
            size = os.path.getsize(path)
            if len(report["artifacts"]) >= max_files or used + size > max_bytes:
                report["notes"].append("dropped artifact " + rel + " (" + str(size) + " bytes): over the artifact caps")
                continue
            with open(path, "rb") as f:
                data = f.read(size + 1)[:size]
        except OSError as e:
            report["notes"].append("could not read artifact " + rel + ": " + str(e))
            continue
        used += len(data)
        frame(nonce, b"a", json.dumps({"name": rel, "size": len(data)}).encode())
        for i in range(0, len(data), 3072):
            frame(nonce, b"c", data[i:i + 3072])
        import hashlib  # only when there are artifacts: it loads OpenSSL
        report["artifacts"].append({"name": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    frame(nonce, b"r", json.dumps(report).encode())
    out.flush()
    os._exit(0)


main()
