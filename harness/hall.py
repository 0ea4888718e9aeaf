"""A lecture hall on loopback: several hosted replicas of the app behind Debian's nginx, and what a browser
does through it.

`Hall` starts N replicas (`streamlit run app.py` in hosted mode, each on a free loopback port), opens every
lesson once on each, renders the nginx configuration (deploy/nginx/anatomy.conf.template) into its own folder,
and starts nginx there as an ordinary process with its own prefix, logs and temporary files. While it runs, a
replica that exits is started again (on a new port, warmed up, then nginx reloaded). `stop` ends nginx, then
every replica, then the database.

The class's answers (lessons/common/classroom.py) must be shared by the replicas: the hall starts PostgreSQL
beside them (harness/postgres.py: its own data, loopback only), runs the migrations once before any replica
starts, and gives every replica its URL in ANATOMY_CLASS_DATABASE_URL. Where PostgreSQL is not installed, it
says so and the replicas share one SQLite file in the hall's folder instead (they are on one machine). A URL
given in the environment (an external database) is used as it is, and nothing is started.

One Streamlit process keeps each session in its memory, so the proxy pins a browser to one replica by a
cookie; see the template for how, and docs/hosting.md for why. `visit` is a browser's plain HTTP request
(keeping cookies); harness.client.Tab is its websocket, keeping the same cookies.

scripts/lecture_hall.py (`make class`) runs a Hall until Ctrl-C; tests/deploy/test_lecture_hall.py drives one.
"""

from __future__ import annotations

import asyncio
import gzip
import importlib.metadata
import importlib.util
import logging
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.message import Message
from pathlib import Path

from harness.client import REPLICA_HEADER, cookie_header, remember_cookies
from harness.load import run_coroutine, websocket_warm_up
from harness.postgres import PostgresServer, postgres_binaries
from harness.server import StreamlitServer, ends_with_its_parent, free_port, stop_process
from lessons.common.class_store import ClassStore, describe
from lessons.common.classroom import DATABASE_URL_VARIABLE

ROOT = Path(__file__).resolve().parents[1]
NGINX = Path(shutil.which("nginx") or "/usr/sbin/nginx")  # Debian: apt-get install nginx
# Debian: apt-get install libnginx-mod-http-brotli-filter. Without it the hall compresses with gzip only.
BROTLI_MODULE = Path("/usr/lib/nginx/modules/ngx_http_brotli_filter_module.so")
# Debian: apt-get install libnginx-mod-http-brotli-static; with it (and the brotli package) Streamlit's files are
# sent as brotli compressed them ahead of time, else as gzip did (`streamlit_files_compressed_ahead`).
BROTLI_STATIC_MODULE = Path("/usr/lib/nginx/modules/ngx_http_brotli_static_module.so")
MIME_TYPES = Path("/etc/nginx/mime.types")  # Debian's nginx: the type of a file nginx sends from disk
TEMPLATE = ROOT / "deploy" / "nginx" / "anatomy.conf.template"
COOKIE = "anatomy_replica"  # the name the template reads as $cookie_anatomy_replica

# deploy/compose.yaml: replica-0, replica-1, ... as services, each on its own port (nginx tells the replicas
# apart by the port that answered), and nginx on 8080 inside its container.
COMPOSE_CONFIG = ROOT / "deploy" / "nginx" / "compose.conf"
COMPOSE_REPLICAS = 3
COMPOSE_FIRST_PORT = 8501
COMPOSE_LISTEN = "8080"

# How the proxy compresses, for the hall and for anything measured beside it (benchmarks/browser_vs_bertviz.py
# serves BertViz's pages with these same lines, so that neither side is compared uncompressed).
GZIP = """        gzip on;
        gzip_vary on;
        gzip_proxied any;
        gzip_comp_level 5;
        gzip_min_length 1024;
        gzip_types application/javascript text/javascript text/css application/json application/manifest+json
                   image/svg+xml text/csv text/plain font/ttf;"""
BROTLI = """
        brotli on;
        brotli_comp_level 5;
        brotli_types application/javascript text/javascript text/css application/json application/manifest+json
                     image/svg+xml text/csv text/plain font/ttf;"""

# Streamlit's own files (its JavaScript, with plotly's 4.7 MB bundle, its CSS and fonts) are the same on every
# replica of one install. The hall's nginx sends them from a copy on disk, each compressed once, ahead of time, at
# the best levels, instead of compressing them again for every student who opens the link: on this 2-core
# machine brotli at level 5 took 0.20 s of nginx's CPU for plotly's bundle alone, a student (40 s for a class of
# 200 arriving at once, on the cores that serve the lessons), and sent 1.30 MB where level 11 sends 1.06 MB.
# One copy per Streamlit version, kept for later halls: in the system's temporary folder, which nginx's workers
# can reach (they run as nobody where nginx runs as root, and a checkout's own folders may be closed to them).
PRECOMPRESSED = Path(tempfile.gettempdir()) / f"anatomy-precompressed-{os.getuid()}"
COMPRESSED_AHEAD = (".js", ".css", ".json", ".svg", ".html", ".map", ".txt")  # fonts and images: compressed already
SMALLEST_COMPRESSED = 1024  # as gzip_min_length: below it the headers weigh more than the saving
BROTLI_BEST, GZIP_BEST = 11, 9

log = logging.getLogger(__name__)


def replica_name(index: int) -> str:
    return f"replica-{index}"


def nginx_config(addresses: list[str], listen: str, brotli: bool, streamlit_files: Path | None = None) -> str:
    """The template filled in for replicas at `addresses` ("host:port", each port a different one), nginx
    listening on `listen`, with or without the brotli module; Streamlit's files sent from `streamlit_files`
    (`streamlit_files_compressed_ahead`) where given, else from the replicas."""
    names = [replica_name(index) for index in range(len(addresses))]
    upstreams = []
    for name, address in zip(names, addresses):
        backups = "".join(f"\n        server {other} backup;" for other in addresses if other != address)
        upstreams.append(f"    upstream {name} {{\n        server {address};{backups}\n    }}")
    port_patterns = [address.rsplit(":", 1)[1] for address in addresses]
    if len(set(port_patterns)) != len(addresses):
        raise ValueError(f"each replica needs a port of its own (nginx names them by it): {addresses}")
    fields = {
        "load_brotli_module": load_brotli_module(brotli, brotli_ahead(streamlit_files)),
        "replica_upstreams": "\n".join(upstreams),
        "class_servers": "\n".join(f"        server {address};" for address in addresses),
        "upstream_by_cookie": "\n".join(f"        {name} {name};" for name in names),
        "replica_by_address": "\n".join(f'        "~:{port}$" {name};' for name, port in zip(names, port_patterns)),
        "listen": listen,
        "compression": compression(brotli),
        "streamlit_files": streamlit_files_location(streamlit_files),
    }
    config = TEMPLATE.read_text()
    for field, value in fields.items():
        config = config.replace("{{" + field + "}}", value)
    if "{{" in config:
        raise ValueError(f"the template has a field nginx_config does not fill: {config[config.index('{{') :][:40]}")
    return config


def compression(brotli: bool) -> str:
    """The server block's compression directives: gzip, and brotli where its module is loaded."""
    return GZIP + ("\n" + BROTLI if brotli else "")


def load_brotli_module(brotli: bool, sent_ahead: bool = False) -> str:
    """The brotli filter, and with `sent_ahead` the module that sends files brotli compressed ahead of time."""
    if not brotli:
        return "# (no brotli module: gzip only)"
    modules = [BROTLI_MODULE] + ([BROTLI_STATIC_MODULE] if sent_ahead else [])
    return "\n".join(f"load_module {module};" for module in modules)


def streamlit_files_location(folder: Path | None) -> str:
    """The server block's location for /static/: Streamlit's files from `folder`, compressed ahead of time (.br
    beside a file where brotli made them, .gz always), or nothing (the replicas send them) without a folder."""
    if folder is None:
        return "        # (Streamlit's files come from the replicas, compressed on the fly.)"
    return f"""        # Streamlit's own files, the same on every replica: from a copy on disk, each compressed
        # once, ahead of time, at the best levels (streamlit_files_compressed_ahead in harness/hall.py).
        location /static/ {{
            root {folder};
            include {MIME_TYPES};{sent_ahead(folder)}
        }}"""


def sent_ahead(folder: Path) -> str:
    """A location's directives that send the .gz files `compress_ahead` made under `folder`, and its .br files
    where it made them too."""
    return "\n            gzip_static on;" + ("\n            brotli_static on;" if brotli_ahead(folder) else "")


BROTLI_MARK = "brotli-too"  # a file in a precompressed folder: its files have .br beside them as well as .gz


def brotli_ahead(folder: Path | None) -> bool:
    """Whether the files in `folder` (`streamlit_files_compressed_ahead`) have their .br beside them."""
    return folder is not None and (folder / BROTLI_MARK).exists()


def brotli_ahead_possible() -> bool:
    """Whether files can be sent brotli-compressed ahead of time: nginx's brotli modules and the brotli package."""
    return BROTLI_MODULE.exists() and BROTLI_STATIC_MODULE.exists() and importlib.util.find_spec("brotli") is not None


def compress_ahead(folder: Path, brotli_too: bool) -> int:
    """Beside every file under `folder` worth compressing, its .gz (gzip at its best level) and, with
    `brotli_too`, its .br (brotli at its best, and BROTLI_MARK in `folder` to say so); the files themselves stay,
    for browsers that take neither. Everything under `folder` is left readable by nginx's workers (nobody, where
    nginx runs as root). Returns how many files were compressed. A file of plotly's size takes brotli seconds:
    they run in parallel."""
    files = [
        path
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.suffix in COMPRESSED_AHEAD and path.stat().st_size >= SMALLEST_COMPRESSED
    ]

    def compress(path: Path) -> None:
        content = path.read_bytes()
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(content, GZIP_BEST, mtime=0))
        if brotli_too:
            import brotli  # only where brotli_ahead_possible() said it is installed

            path.with_name(path.name + ".br").write_bytes(brotli.compress(content, quality=BROTLI_BEST))

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # both compressors release the GIL
        list(pool.map(compress, files))
    if brotli_too:
        (folder / BROTLI_MARK).write_text("every .br here is brotli at quality 11\n")
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return len(files)


def streamlit_files_compressed_ahead() -> Path:
    """A copy of this install's Streamlit files (its static/ folder) with every file worth it compressed ahead of
    time (`compress_ahead`), made once per Streamlit version under PRECOMPRESSED (half a minute on two cores)
    and used by every later hall. Readable by nginx's workers, which run as nobody where nginx runs as root."""
    brotli_too = brotli_ahead_possible()
    version = importlib.metadata.version("streamlit")
    folder = PRECOMPRESSED / f"streamlit-{version}{'' if brotli_too else '-gzip'}"
    if folder.is_dir():
        return folder
    PRECOMPRESSED.mkdir(mode=0o755, exist_ok=True)
    if PRECOMPRESSED.stat().st_uid != os.getuid():  # files nginx sends to students: never another user's
        raise PermissionError(f"{PRECOMPRESSED} belongs to another user: remove it, or set TMPDIR elsewhere")
    building = Path(tempfile.mkdtemp(prefix=".building-", dir=PRECOMPRESSED))
    try:
        spec = importlib.util.find_spec("streamlit")
        assert spec is not None and spec.submodule_search_locations, "streamlit is installed: the hall runs it"
        started = time.monotonic()
        shutil.copytree(Path(spec.submodule_search_locations[0]) / "static" / "static", building / "static")
        count = compress_ahead(building, brotli_too)
        building.rename(folder)  # whole or not at all; another hall that got there first keeps its copy
        log.info("Streamlit's files compressed ahead: %d in %.0f s, in %s", count, time.monotonic() - started, folder)
    except OSError:
        if not folder.is_dir():
            raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return folder


# A folder of static files behind the hall's compression: files under /vendor/ may be cached for a year (as a
# CDN serves libraries), the rest not at all (a page is sent again on every visit, as the app's data is).
STATIC_SITE = """{load_brotli_module}
worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events {{}}
http {{
    client_body_temp_path temp/client_body;
    proxy_temp_path temp/proxy;
    fastcgi_temp_path temp/fastcgi;
    uwsgi_temp_path temp/uwsgi;
    scgi_temp_path temp/scgi;
    access_log off;
    types {{
        text/html html;
        application/javascript js;
    }}
    server {{
        listen {listen};
        root {root};
{compression}
        location / {{
            add_header Cache-Control "no-store";
        }}
        location /vendor/ {{
            add_header Cache-Control "public, max-age=31536000, immutable";{vendor_sent_ahead}
        }}
    }}
}}
"""


def static_site_config(root: Path, listen: str, brotli: bool) -> str:
    """nginx serving the files under `root` on `listen`, compressed as the hall compresses: the libraries under
    /vendor/ as compressed ahead of time where `compress_ahead` made their .gz (and .br, where `root` holds
    BROTLI_MARK), as the hall sends Streamlit's. `root` must be readable by nginx's workers (nobody, where
    nginx runs as root)."""
    return STATIC_SITE.format(
        load_brotli_module=load_brotli_module(brotli, brotli_ahead(root)),
        listen=listen,
        root=root,
        compression=compression(brotli),
        vendor_sent_ahead=sent_ahead(root),
    )


def compose_nginx_config() -> str:
    """What deploy/nginx/compose.conf must hold: the same configuration, for deploy/compose.yaml's services."""
    addresses = [f"{replica_name(index)}:{COMPOSE_FIRST_PORT + index}" for index in range(COMPOSE_REPLICAS)]
    rendered = "# Rendered from anatomy.conf.template by `python -m harness.hall`: edit the template, not this file.\n"
    return rendered + nginx_config(addresses, COMPOSE_LISTEN, brotli=True)


def check_nginx_config(config_path: Path, prefix: Path) -> None:
    """`nginx -t` on a rendered configuration; raises with nginx's own words when it is not valid."""
    check = subprocess.run(
        [str(NGINX), "-t", "-q", "-e", "stderr", "-p", f"{prefix}/", "-c", str(config_path)],
        capture_output=True,
        text=True,
    )
    if check.returncode:
        raise RuntimeError(f"nginx -t failed for {config_path}:\n{check.stderr}")


def prepare_prefix(prefix: Path) -> None:
    """The folders the template's relative paths need under nginx's prefix."""
    for folder in ("logs", "temp"):
        (prefix / folder).mkdir(parents=True, exist_ok=True)


def start_nginx(config_path: Path, prefix: Path, log_path: Path) -> subprocess.Popen:
    """nginx in the foreground on `config_path`, its output in `log_path`; it ends with this process."""
    with open(log_path, "w") as nginx_log:
        return subprocess.Popen(
            [str(NGINX), "-e", "stderr", "-p", f"{prefix}/", "-c", str(config_path), "-g", "daemon off;"],
            stdout=nginx_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=ends_with_its_parent(os.getpid()),  # killed outright, we leave no nginx behind
        )


def wait_for_nginx(nginx: subprocess.Popen, url: str, log_path: Path, path: str = "/_stcore/health") -> None:
    """Until nginx answers `path` under `url` with 200 (30 s at most)."""
    timeout = 30
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if nginx.poll() is not None:
            raise RuntimeError(f"nginx exited; see {log_path}")
        try:
            if visit(url + path, {}, timeout=2).status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nginx did not answer on {url} within {timeout} s")


class Nginx:
    """nginx on a configuration of its own (`config`, listening on `listen`), under `folder`, while in a `with`
    block: the hall's proxy in front of a server that is already running, or a static site."""

    def __init__(self, folder: Path, config: str, listen: str, ready_path: str = "/_stcore/health"):
        self.folder, self.config, self.ready_path = folder, config, ready_path
        self.url = f"http://{listen}"
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Nginx:
        prepare_prefix(self.folder)
        config_path = self.folder / "nginx.conf"
        config_path.write_text(self.config)
        check_nginx_config(config_path, self.folder)
        self.process = start_nginx(config_path, self.folder, self.folder / "nginx.log")
        try:
            wait_for_nginx(self.process, self.url, self.folder / "nginx.log", self.ready_path)
        except BaseException:
            stop_process(self.process)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:
            stop_process(self.process)


def class_database(folder: Path, environment: dict[str, str], binaries: Path | None) -> PostgresServer | str:
    """Where the hall's replicas keep the class's answers: the URL `environment` gives, else a PostgreSQL server
    under `folder` (not started yet) where `binaries` were found, else one SQLite file in `folder`."""
    given = environment.get(DATABASE_URL_VARIABLE, "").strip()
    if given:
        return given
    if binaries is not None:
        return PostgresServer(folder / "postgres", binaries)
    log.warning("PostgreSQL is not installed (no initdb): the replicas share one SQLite file in %s", folder)
    return f"sqlite:///{folder / 'classes.sqlite'}"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Message
    body: bytes

    @property
    def replica(self) -> str:
        return self.headers.get(REPLICA_HEADER, "")


def visit(url: str, cookies: dict[str, str], accept_encoding: str = "identity", timeout: float = 60) -> Answer:
    """One request as a browser makes it: with its cookies, keeping what the answer sets."""
    request = urllib.request.Request(url, headers={"Accept-Encoding": accept_encoding, **cookie_header(cookies)})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = Answer(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        answer = Answer(error.code, error.headers, error.read())
    remember_cookies(cookies, answer.headers.get_all("Set-Cookie") or [])
    return answer


THREADS_VARIABLE = "OMP_NUM_THREADS"  # torch's threads for its own kernels (one a core when unset)


def threads_per_replica(replicas: int, cores: int | None = None) -> int:
    """Torch threads for each of `replicas` replicas on `cores` cores (this process's, by default): its share.

    Torch starts one thread a core in every process, so N replicas on C cores would run N·C threads that take
    the cores from each other. Under a class a second thread costs CPU and gains nothing (docs/hosting.md: on
    two cores, one replica of one thread served as many views as one of two, for 0.066 s of CPU a view against
    0.092 s). A replica alone on the machine keeps every core: a lone learner's SmolLM2 writes faster so."""
    cores = cores or len(os.sched_getaffinity(0))
    return max(1, cores // replicas)


class Hall:
    """`replicas` hosted replicas of the app on loopback and nginx in front of them on `address`:`port` (a free
    loopback port if none is given), and the class database they share (`class_database`), everything they
    write under `folder`. A context manager, or start()/stop()."""

    def __init__(
        self,
        folder: Path,
        replicas: int = 2,
        port: int | None = None,
        address: str = "127.0.0.1",
        environment: dict | None = None,
        warm_up: bool = True,
        postgresql: bool = True,
    ):
        self.folder = folder
        self.warm_up = warm_up
        self.port = port or free_port()
        self.listen = f"{address}:{self.port}"  # nginx's; the replicas always listen on loopback only
        self.url = f"http://{'127.0.0.1' if address == '0.0.0.0' else address}:{self.port}"
        self.prefix = folder / "nginx"
        # One cookie secret for every replica: a student moved to another replica after a failure keeps a
        # valid XSRF cookie (an upload of a tour file needs one). Each replica's torch gets its share of the
        # cores, unless the shell or the caller says otherwise (`threads_per_replica`).
        threads = os.environ.get(THREADS_VARIABLE) or str(threads_per_replica(replicas))
        self.environment = {
            "ANATOMY_HOSTED": "1",
            "STREAMLIT_SERVER_COOKIE_SECRET": secrets.token_hex(32),
            THREADS_VARIABLE: threads,
            **(environment or {}),
        }
        binaries = postgres_binaries() if postgresql else None  # postgresql=False: the SQLite fallback
        database = class_database(folder, {**os.environ, **self.environment}, binaries)
        self.database = database if isinstance(database, PostgresServer) else None
        self.database_url = database.url if isinstance(database, PostgresServer) else database
        self.environment[DATABASE_URL_VARIABLE] = self.database_url
        self.replicas = [self._replica(index, free_port()) for index in range(replicas)]
        self.restarts: list[str] = []  # the name of each replica started again, in order
        self.restarting = threading.Event()  # cleared: a dead replica stays dead (a test of the fallback clears it)
        self.restarting.set()
        self.nginx: subprocess.Popen | None = None
        self._stopping = threading.Event()
        self._watcher = threading.Thread(target=self._restart_the_dead, daemon=True)

    def _replica(self, index: int, port: int) -> StreamlitServer:
        log_path = self.folder / f"{replica_name(index)}.log"
        if log_path.exists():  # a restart: keep the log of the one that died
            log_path = self.folder / f"{replica_name(index)}.{time.strftime('%H%M%S')}.log"
        # detached: Ctrl-C in the terminal reaches the hall alone, which then stops the replicas in order
        return StreamlitServer(log_path, port=port, environment=self.environment, detached=True)

    @property
    def names(self) -> list[str]:
        return [replica_name(index) for index in range(len(self.replicas))]

    def pid(self, name: str) -> int:
        return self.replicas[self.names.index(name)].started_process.pid

    def start(self) -> Hall:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.database is not None:
            self.database.start()
        self._migrate()
        for replica in self.replicas:
            replica.start()
        self._make_ready(self.replicas)
        prepare_prefix(self.prefix)
        self.nginx = start_nginx(self._write_nginx_config(), self.prefix, self.folder / "nginx.log")
        wait_for_nginx(self.nginx, self.url, self.folder / "nginx.log")
        self._watcher.start()
        return self

    def _migrate(self) -> None:
        """The class tables brought to the newest migration once, before any replica starts (a replica would
        otherwise run them on a student's first answer; the store's lock makes that safe, this makes it early)."""
        store = ClassStore(self.database_url)
        try:
            store.upgrade()
        finally:
            store.engine.dispose()
        log.info("class database: %s", describe(self.database_url))

    def _make_ready(self, replicas: list[StreamlitServer]) -> None:
        """Healthy, then every lesson opened once (in parallel over the replicas), before any student comes:
        the first visits import the lessons and load the models, which a class arriving at once would
        otherwise wait for on its first page."""
        for replica in replicas:
            replica.wait_until_healthy()
        if self.warm_up:

            async def warm_all() -> None:
                await asyncio.gather(*(websocket_warm_up(replica.url) for replica in replicas))

            run_coroutine(warm_all())

    def _write_nginx_config(self) -> Path:
        config_path = self.prefix / "nginx.conf"
        addresses = [f"127.0.0.1:{replica.port}" for replica in self.replicas]
        config_path.write_text(
            nginx_config(addresses, self.listen, BROTLI_MODULE.exists(), streamlit_files_compressed_ahead())
        )
        check_nginx_config(config_path, self.prefix)
        return config_path

    def _restart_the_dead(self) -> None:
        """Start a replica again whenever its process has ended (until the hall stops). Meanwhile nginx sends
        its students to the others. The new process gets a new port and is warmed up first; only then does
        nginx, reloaded, send it anyone."""
        while not self._stopping.wait(0.5):
            for index, replica in enumerate(self.replicas):
                if replica.started_process.poll() is None or self._stopping.is_set() or not self.restarting.is_set():
                    continue
                name = replica_name(index)
                log.warning("%s exited with %s; starting it again", name, replica.started_process.returncode)
                # Started from this thread, which lives as long as the hall: Linux ends the successor with it.
                successor = self._replica(index, free_port()).start()
                try:
                    self._make_ready([successor])
                except Exception:
                    log.exception("%s did not start again; trying once more", name)
                    successor.stop()
                    continue
                self.replicas[index] = successor
                self._write_nginx_config()
                self.started_nginx.send_signal(signal.SIGHUP)  # a reload: open connections stay as they are
                self._wait_until_routed(name, successor.port)
                self.restarts.append(name)

    def _wait_until_routed(self, name: str, port: int, timeout: float = 60) -> None:
        """A reload is asynchronous: nginx's master reads the configuration again and starts new workers while
        the old ones finish. The restart counts once a browser whose cookie names the replica reaches the new
        process (nginx's log names the port that answered)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self._stopping.is_set():
            try:
                answer = visit(f"{self.url}/_stcore/health", {COOKIE: name}, timeout=5)
                if answer.status == 200 and answer.replica == name:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        log.error(
            "nginx still sends %s's students elsewhere %.0f s after the reload (new port %d)", name, timeout, port
        )

    @property
    def started_nginx(self) -> subprocess.Popen:
        if self.nginx is None:
            raise RuntimeError("nginx has not been started")
        return self.nginx

    def stop(self) -> None:
        """nginx first (no new requests reach a replica that is going), then every replica, then the database
        (a fast shutdown: it rolls back whatever a replica left open)."""
        self._stopping.set()
        if self._watcher.is_alive():
            self._watcher.join()
        if self.nginx is not None:
            stop_process(self.nginx)  # SIGTERM: nginx's fast shutdown, open websockets included
        for replica in self.replicas:
            replica.stop()
        if self.database is not None:
            self.database.close()

    def processes(self) -> dict[str, int]:
        """Every process the hall runs, by name: nginx's master, each replica, and PostgreSQL's postmaster."""
        running = {name: self.pid(name) for name in self.names}
        if self.nginx is not None:
            running["nginx"] = self.nginx.pid
        if self.database is not None and self.database.process is not None:
            running["postgresql"] = self.database.process.pid
        return running

    def __enter__(self) -> Hall:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def is_running(pid: int) -> bool:
    """Whether `pid` is a live process: an ended one that no parent has reaped yet (a zombie, as an orphan is
    where PID 1 does not reap) is not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc (not Linux): the signal test is all there is
    return state not in ("Z", "X")


if __name__ == "__main__":  # `python -m harness.hall > deploy/nginx/compose.conf`
    print(compose_nginx_config(), end="")
