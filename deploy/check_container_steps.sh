#!/usr/bin/env bash
# The Dockerfile's steps, run for real without a Docker engine.
#
# Reads ../Dockerfile and carries out its instructions in a scratch folder that stands in for the image:
# ENV and WORKDIR as written (with /home/user mapped into the scratch folder), COPY with .dockerignore
# applied, every RUN step verbatim in bash, then the CMD on a free port and the HEALTHCHECK against it,
# and finally one page fetched over HTTP. The base image's Python is this machine's python3.11.
#
# Two steps cannot be mirrored without a container, and the script says so when it meets them:
#   `useradd` (it would create a user on this machine: skipped) and `USER` (everything runs as the caller).
#
# Usage: deploy/check_container_steps.sh [scratch-folder]      (default: a new folder under /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH="${1:-$(mktemp -d /tmp/anatomy-container-XXXXXX)}"
exec python3.11 - "$PWD" "$SCRATCH" <<'PYTHON'
import fnmatch, json, os, re, shlex, shutil, socket, subprocess, sys, time, urllib.request
from pathlib import Path

context, scratch = Path(sys.argv[1]), Path(sys.argv[2])
home = scratch / "home" / "user"
started = time.monotonic()


def say(message):
    print(f"[{time.monotonic() - started:6.1f} s] {message}", flush=True)


def instructions(dockerfile):
    """(keyword, argument) pairs, continuation lines joined and comment lines dropped (as Docker does)."""
    logical, pending = [], ""
    for line in dockerfile.read_text().splitlines():
        if line.lstrip().startswith("#") or (not line.strip() and not pending):
            continue
        pending += line.rstrip().removesuffix("\\") + (" " if line.rstrip().endswith("\\") else "")
        if not line.rstrip().endswith("\\"):
            logical.append(pending.strip())
            pending = ""
    return [tuple(item.split(None, 1)) if " " in item else (item, "") for item in logical]


def in_scratch(text):
    return text.replace("/home/user", str(home))


def ignored_patterns():
    lines = (context / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def copy_context(source, destination, cwd):
    patterns = ignored_patterns()
    def ignored(relative):
        parts = Path(relative).parts
        return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(parts[0], p) or
                   (p.startswith("**/") and any(fnmatch.fnmatch(part, p[3:]) for part in parts)) for p in patterns)
    target = (cwd / destination) if not destination.startswith("/") else Path(in_scratch(destination))
    if source == ".":
        copied = 0
        for path in sorted(context.rglob("*")):
            relative = str(path.relative_to(context))
            if path.is_file() and not ignored(relative):
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / relative)
                copied += 1
        return f"{copied} files (after .dockerignore)"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(context / source, target / Path(source).name)
    return source


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


environment = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "TMPDIR": str(scratch / "tmp")}
for name in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_CONFIG_FILE"):  # this machine's pip setup
    if name in os.environ:
        environment[name] = os.environ[name]
(scratch / "tmp").mkdir(parents=True, exist_ok=True)
home.mkdir(parents=True, exist_ok=True)
cwd, command, healthcheck = scratch, None, None
say(f"scratch folder standing in for the image: {scratch}")
for keyword, argument in instructions(context / "Dockerfile"):
    keyword = keyword.upper()
    if keyword == "FROM":
        say(f"FROM {argument}: using {sys.executable} ({sys.version.split()[0]}) as the base image's Python")
    elif keyword == "ENV":
        for assignment in shlex.split(argument):
            name, value = assignment.split("=", 1)
            environment[name] = re.sub(r"\$(\w+)", lambda m: environment.get(m.group(1), ""), in_scratch(value))
        say(f"ENV {argument}")
    elif keyword == "WORKDIR":
        cwd = Path(in_scratch(argument))
        cwd.mkdir(parents=True, exist_ok=True)
        say(f"WORKDIR {argument}")
    elif keyword == "USER":
        say(f"USER {argument}: not mirrored, the steps run as {os.environ.get('USER', 'the caller')}")
    elif keyword == "COPY":
        parts = [part for part in shlex.split(argument) if not part.startswith("--")]
        say(f"COPY {argument}: {copy_context(parts[0], parts[1], cwd)}")
    elif keyword == "RUN":
        if "useradd" in argument:
            say(f"RUN {argument}: skipped (it would create a user on this machine)")
            continue
        say(f"RUN {argument}")
        step = time.monotonic()
        subprocess.run(["bash", "-euo", "pipefail", "-c", argument], cwd=cwd, env=environment, check=True)
        say(f"    done in {time.monotonic() - step:.0f} s")
    elif keyword == "EXPOSE":
        say(f"EXPOSE {argument}")
    elif keyword == "HEALTHCHECK":
        healthcheck = json.loads(argument.split(" CMD ", 1)[1]) if argument.split(" CMD ", 1)[1].startswith("[") \
            else ["bash", "-c", argument.split(" CMD ", 1)[1]]
    elif keyword == "CMD":
        command = json.loads(argument)

port = free_port()
command = [part.replace("8501", str(port)) if part.startswith("--server.port") else part for part in command]
command = [part.replace("0.0.0.0", "127.0.0.1") for part in command]  # loopback only on a shared machine
say(f"CMD {' '.join(command)}  (port 8501 mapped to free port {port})")
log = open(scratch / "streamlit.log", "w")
server = subprocess.Popen(command, cwd=cwd, env=environment, stdout=log, stderr=subprocess.STDOUT)
try:
    probe = [part.replace("8501", str(port)) for part in healthcheck]
    for _ in range(180):
        if server.poll() is not None:
            sys.exit(f"the app exited with {server.returncode}; see {scratch / 'streamlit.log'}")
        if subprocess.run(probe, cwd=cwd, env=environment, capture_output=True).returncode == 0:
            break
        time.sleep(1)
    else:
        sys.exit("HEALTHCHECK never passed")
    say("HEALTHCHECK passed (/_stcore/health answered 200)")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
        page = answer.read().decode()
    assert answer.status == 200 and "<div id=\"root\">" in page.replace("'", '"'), "the app's page did not load"
    say(f"GET / answered {answer.status} with the app's page ({len(page):,} bytes)")
    visit = subprocess.run(  # a first visit, headless, in the image's Python: hosted sidebar, embedded model
        ["python", "-c", "from streamlit.testing.v1 import AppTest\n"
         "app = AppTest.from_file('app.py', default_timeout=300).run()\n"
         "assert not app.exception, [e.value for e in app.exception]\n"
         "assert not app.sidebar.text_input and app.sidebar.selectbox, 'hosted mode: no free model field'\n"
         "print(app.title[0].value, '|', [m.value for m in app.markdown if 'layers' in m.value][0][:60])"],
        cwd=cwd, env=environment, capture_output=True, text=True)
    if visit.returncode:
        sys.exit(f"the first visit failed:\n{visit.stderr[-2000:]}")
    say(f"first visit (AppTest, hosted): {visit.stdout.strip()}")
    versions = subprocess.run(
        ["python", "-c", "import torch, streamlit, transformers; print(torch.__version__, streamlit.__version__, "
         "transformers.__version__, torch.cuda.is_available())"],
        cwd=cwd, env=environment, capture_output=True, text=True, check=True).stdout.split()
    say(f"in the image's Python: torch {versions[0]}, streamlit {versions[1]}, transformers {versions[2]}, "
        f"CUDA available: {versions[3]}")
    size = subprocess.run(["du", "-sh", environment["VIRTUAL_ENV"]], capture_output=True, text=True).stdout.split()[0]
    say(f"virtual environment size: {size}")
    print("CONTAINER STEPS OK")
finally:
    server.terminate()
    server.wait(timeout=30)
PYTHON
