#!/usr/bin/env python3
"""Serve a class: N Streamlit workers, Redis and nginx, supervised; Ctrl-C stops everything.

    python3 scripts/dev.py serve [--workers N] [--port P] [--host H] [--redis-url URL]

Why these parts (docs/deploy.md says more):
- Several processes for several cores: one Python process runs one script at a time per
  interpreter lock, so a class of 100-300 needs a process per core. Each worker is a plain
  `streamlit run app.py` on a loopback port.
- Redis holds what the workers share: the classroom rooms (a follower on any worker follows an
  instructor on any other), the per-address rate limits, the shared image, and the one
  benchmark-at-a-time lock. It keeps an append-only file in the state folder, so rooms survive a
  restart of the whole deployment.
- nginx (Debian's package) in front: websocket upgrades, and sticky sessions by a cookie it sets
  itself (`ce_worker`, the port of the worker that answered): a browser's page, websocket, uploads
  and media all reach the worker that holds its session, while a lecture hall behind one NAT
  address still spreads over every worker. A browser without that cookie goes to the worker with
  the fewest open connections (least_conn: 300 students land 37 or 38 a worker of 8, where a hash
  of random cookies put 30 to 42 on each, and the fullest set the class's delay). A worker that
  does not answer is skipped: its students' browsers reconnect to the least-connected other
  worker, which their next cookie names, where the link (`?room=CODE`) or the instructor's resume
  cookie brings them back into their room. nginx was chosen over HAProxy and Caddy for being the
  most widely known of the three and needing no modules beyond Debian's default build for this
  configuration.
- Lanes (`--large-workers L`, default a quarter of the workers when there are 4 or more): the
  last L workers form a pool of their own for students exploring large images (a working size of
  ui/budget.py's HEAVY_SIZE and more). One interpreter lock per process: a heavy session on a
  worker makes every light session there wait, and sticky hashing cannot know who will be heavy.
  The app moves such a session between the pools (ui/lanes.py: it sets the `ce_lane` cookie and
  reloads the page; a websocket stays on the process it reached). nginx picks the pool by that
  cookie; a browser without it that opens a link at a large working size (`cap=512` and up, not a
  room's link) goes to the large pool at once and gets the cookie there, so it never runs a page on
  a light worker. If every worker of a pool is down, the other pool serves (the app then stays put).
- Beacons: the worker that publishes an instructor's change also writes the room's version to a
  file (ui/beacon.py) in a directory nginx serves at /beacon/; followers' browsers read it four times
  a second and rerun only when it changes, instead of asking their worker every second.
- This script restarts a worker, Redis or nginx that exits, and stops them all on Ctrl-C or
  SIGTERM. Standard library only; it runs in the project's .venv (scripts/dev.py).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".serve"  # logs, nginx's config and temp files, Redis's append-only file
COOKIE = "ce_worker"
LANE_COOKIE = "ce_lane"  # "large": the browser's session explores large images (ui/lanes.py sets it)
LANE_ENV = "CONV_EXPLORER_LANE"  # tells a worker its pool: "light" or "large" (unset: lanes off)
LARGE_LINK_SIZES = (512, 768, 1024)  # ui/sidebar.py's working sizes from ui/budget.py's HEAVY_SIZE up
PROGRAM_ENV = {"nginx": "CONV_EXPLORER_NGINX", "redis-server": "CONV_EXPLORER_REDIS_SERVER"}
RESTART_PAUSE_S = 1.0  # a child that keeps dying is restarted at most this often


def say(msg: str) -> None:
    print(f"[serve] {msg}", file=sys.stderr, flush=True)


def program(name: str, override: str | None = None) -> str | None:
    """A program's path: the option, its CONV_EXPLORER_* variable (e.g. a package unpacked with
    `dpkg -x` on a machine without root), PATH, or Debian's sbin; None if none has it."""
    named = override or os.environ.get(PROGRAM_ENV.get(name, ""), "")
    if named:
        return shutil.which(named)  # a path to an executable file (or a name on PATH)
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")


def find(name: str, override: str | None, package: str) -> str:
    """The program's path (see `program`); a clear error otherwise."""
    path = program(name, override)
    if not path:
        sys.exit(
            f"[serve] error: {name} not found: install Debian's package ({package}), pass --{name} "
            f"or set {PROGRAM_ENV[name]}"
        )
    return path


def default_large_workers(workers: int) -> int:
    """A quarter of the workers for large images, once there are 4 or more (else lanes are off)."""
    return workers // 4 if workers >= 4 else 0


def port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def answers(port: int, path: str = "/_stcore/health", timeout: float = 1.0) -> bool:
    """An HTTP GET on loopback answers 200 (stdlib only: a raw request)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            return s.recv(16)[9:12] == b"200"
    except OSError:
        return False


def nginx_config(
    host: str,
    port: int,
    worker_ports: list[int],
    state: Path,
    *,
    large_ports: list[int] = (),
    beacons: Path | None = None,
) -> str:
    """The proxy: websockets, the client's address forwarded in X-Real-IP, and sticky sessions by
    a cookie that NAMES a worker. A browser without a valid ce_worker cookie (none, one naming a
    worker that is gone, or one of the other pool) is placed on the worker of its pool with the
    fewest open connections (least_conn over a shared zone: a follower's websocket is a long-lived
    connection, so this counts the students each worker holds), and every answer sets ce_worker to
    the port of the worker that gave it. Later requests go straight to that worker; if it does not
    answer, to the pool's least-connected worker, which the next cookie then names. (A hash of a
    random cookie put 30 to 42 of 300 browsers on each of 8 workers; the fullest set the class's
    delay.) With `large_ports`, a second pool: a browser whose ce_lane cookie is "large" goes there;
    a first visit without that cookie to a link at a large working size (LARGE_LINK_SIZES, not a
    room's) goes there too and gets the cookie; when every worker of the chosen pool is down, the
    other pool answers, at the worker the cookie names if it is one of that pool. With `beacons`,
    the rooms' beacon files (ui/beacon.py) at /beacon/, served by nginx itself, never cached."""
    pools = {"workers": worker_ports, **({"large": list(large_ports)} if large_ports else {})}

    def pinned_map(name: str, pool_of_lane: dict[str, str]) -> str:
        """ "$lane:$cookie" -> the one-worker upstream of a cookie naming a worker of the pool that
        pool_of_lane gives the browser's lane; "" (place it) for anything else."""
        entries = "".join(
            f'    "{lane}:{p}" w{p};\n' for lane, pool in pool_of_lane.items() for p in pools.get(pool, [])
        )
        return f'  map "$lane:$cookie_{COOKIE}" ${name} {{\n    default "";\n{entries}  }}'

    upstreams = "\n".join(
        f"  upstream {name} {{\n    zone {name} 64k;\n    least_conn;\n"
        + "".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=3s;\n" for p in ports)
        + "  }"
        for name, ports in pools.items()
    )
    singles = "\n".join(
        f"  upstream w{p} {{ server 127.0.0.1:{p}; }}" for ports in pools.values() for p in ports
    )
    large_lane, large_pool = ("large", "large") if large_ports else ("light", "workers")
    asked = f"$cookie_{LANE_COOKIE}"
    maps = []
    if large_ports:  # a first visit to a link at a large working size (not a room's): the large pool
        sizes = "|".join(str(size) for size in LARGE_LINK_SIZES)
        asked = "$lane_asked"
        maps += [
            f'  map "$cookie_{LANE_COOKIE}:$arg_cap:$arg_room" $lane_asked {{\n'
            f'    default $cookie_{LANE_COOKIE};\n    "~^:({sizes}):$" large;\n  }}',
            f'  map "$cookie_{LANE_COOKIE}:$lane_asked" $set_lane {{\n'
            f'    default "";\n    ":large" "{LANE_COOKIE}=large; Path=/; SameSite=Lax";\n  }}',
        ]
    maps += [
        f"  map {asked} $lane {{ default light; large {large_lane}; }}",
        f"  map {asked} $pool {{ default workers; large {large_pool}; }}",
        pinned_map("pinned", {"light": "workers", "large": large_pool}),
        '  map $pinned $target { "" $pool; default $pinned; }',
        # the port after the last colon of $upstream_addr: the worker that answered in the end
        f'  map $upstream_addr $set_worker {{ default ""; "~:(?<port>[0-9]+)$" '
        f'"{COOKIE}=$port; Path=/; HttpOnly; SameSite=Lax"; }}',
    ]
    if large_ports:
        maps += [
            f"  map {asked} $other_pool {{ default large; large workers; }}",
            pinned_map("pinned_other", {"light": "large", "large": "workers"}),
            '  map $pinned_other $other_target { "" $other_pool; default $pinned_other; }',
        ]

    proxy = """      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $http_host;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_connect_timeout 2s;
      proxy_read_timeout 1d;
      proxy_send_timeout 1d;
      proxy_buffering off;
      proxy_request_buffering off;  # uploads stream through: no temp files (nginx's workers may not own them)
      proxy_next_upstream error timeout http_502 http_503;
      add_header Set-Cookie $set_worker always;
      add_header X-Conv-Worker $upstream_addr always;"""
    if large_ports:
        proxy += "\n      add_header Set-Cookie $set_lane always;"

    def location(name: str, upstream: str, fallback: str | None, why: str) -> str:
        then = f"\n      error_page 502 504 = {fallback};  # {why}" if fallback else ""
        return f"""    location {name} {{
      proxy_pass http://{upstream};  # an upstream group's name: no resolver involved
{proxy}{then}
    }}"""

    chain = [
        location("/", "$target", "@pool", "the worker the cookie names is down: place the browser"),
        location(
            "@pool",
            "$pool",
            "@other" if large_ports else None,
            "every worker of the pool is down: the other pool answers",
        ),
    ]
    if large_ports:
        chain += [
            location("@other", "$other_target", "@other_pool", "place it in the other pool"),
            location("@other_pool", "$other_pool", None, ""),
        ]
    locations = "\n".join(chain)
    if beacons is not None:
        locations = f"""    location /beacon/ {{
      alias {beacons}/;
      default_type application/json;
      add_header Cache-Control "no-store" always;
    }}
{locations}"""
    tmp = state / "nginx-tmp"
    newline = "\n"
    return f"""# generated by scripts/serve.py: edit that, not this
worker_processes 2;
pid {state}/nginx.pid;
error_log {state}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  client_max_body_size 25m;  # Streamlit's own cap (.streamlit/config.toml) is 20 MB
  map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
{newline.join(maps)}
{upstreams}
{singles}
  server {{
    listen {host}:{port} reuseport;
    recursive_error_pages on;
{locations}
  }}
}}
"""


@dataclass
class Child:
    """One supervised process: how to start it, its log, and when it last started."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen | None = None
    started: float = 0.0
    restarts: int = 0
    ready_port: int | None = None
    extra: dict = field(default_factory=dict)

    def start(self) -> None:
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            self.argv, env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()
        self.started = time.monotonic()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if not self.alive():
            return
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def plan(args: argparse.Namespace) -> tuple[list[Child], str]:
    """The children to start (Redis first, then the workers, then nginx) and the Redis URL."""
    state = Path(args.state).resolve()
    (state / "nginx-tmp").mkdir(parents=True, exist_ok=True)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    children: list[Child] = []
    redis_url = args.redis_url
    if not redis_url:
        redis_port = args.redis_port or free_port()
        redis_url = f"redis://127.0.0.1:{redis_port}/0"
        redis_argv = [
            find("redis-server", args.redis_server, "redis-server"),
            "--port",
            str(redis_port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(state),
            "--appendonly",
            "yes",
            "--save",
            "",
            "--maxmemory",
            "512mb",
            "--maxmemory-policy",
            "volatile-ttl",
        ]
        children.append(Child("redis", redis_argv, base_env, state / "redis.log"))
    # The rooms' beacons: public (a room's version), readable by nginx's workers whatever user they
    # run as, so not under the state directory (a 0700 temporary one in the tests)
    beacons = Path(tempfile.mkdtemp(prefix="conv-explorer-beacons-"))
    beacons.chmod(0o755)
    args.beacons = beacons
    cookie_secret = secrets.token_urlsafe(32)  # one for all workers: XSRF cookies stay valid on failover
    worker_ports = [args.port + 1 + i for i in range(args.workers)]
    light = args.workers - args.large_workers  # the first ones; the last L form the large pool
    base_env.pop(LANE_ENV, None)
    for i, wport in enumerate(worker_ports):
        env = {
            **base_env,
            "CONV_EXPLORER_REDIS_URL": redis_url,
            "CONV_EXPLORER_TRUST_PROXY": "1",
            "STREAMLIT_SERVER_COOKIE_SECRET": cookie_secret,
            "CONV_EXPLORER_BEACON_DIR": str(beacons),
        }
        if args.large_workers:
            env[LANE_ENV] = "light" if i < light else "large"
        argv = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.port",
            str(wport),
            "--server.address",
            "127.0.0.1",
            "--server.headless",
            "true",
            "--global.developmentMode",
            "false",
            *args.streamlit,
        ]
        children.append(Child(f"worker{i}", argv, env, state / f"worker{i}.log", ready_port=wport))
    conf = state / "nginx.conf"
    pools = {"large_ports": worker_ports[light:], "beacons": beacons}
    conf.write_text(nginx_config(args.host, args.port, worker_ports[:light], state, **pools))
    nginx = find("nginx", args.nginx, "nginx")
    children.append(
        Child(
            "nginx",
            [
                nginx,
                "-e",
                str(state / "nginx-error.log"),
                "-p",
                str(state),
                "-c",
                str(conf),
                "-g",
                "daemon off;",
            ],
            base_env,
            state / "nginx.log",
        )
    )
    return children, redis_url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_pids(children: list[Child], state: Path) -> None:
    """state/children.json: each child's pid and port, for operators and the fault tests."""
    table = {
        c.name: {"pid": c.proc.pid if c.proc else None, "port": c.ready_port, "restarts": c.restarts}
        for c in children
    }
    tmp = state / "children.json.tmp"
    tmp.write_text(json.dumps(table, indent=1))
    tmp.replace(state / "children.json")


def supervise(children: list[Child], stop_requested: list[bool], state: Path) -> None:
    """Restart whatever exits (at most once per RESTART_PAUSE_S each) until asked to stop."""
    write_pids(children, state)
    while not stop_requested[0]:
        for child in children:
            if child.alive() or stop_requested[0]:
                continue
            if time.monotonic() - child.started < RESTART_PAUSE_S:
                continue
            code = None if child.proc is None else child.proc.returncode
            child.restarts += 1
            say(f"{child.name} exited (code {code}); restarting it (restart {child.restarts})")
            say(f"  its log: {child.log}")
            child.start()
            write_pids(children, state)
        time.sleep(0.2)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/dev.py serve", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="Streamlit processes (default: cores)"
    )
    parser.add_argument(
        "--port", type=int, default=8501, help="the port students open (nginx); workers use the next N"
    )
    parser.add_argument(
        "--host", default="0.0.0.0", help="the address nginx listens on (default: every interface)"
    )
    parser.add_argument("--redis-url", help="use this Redis instead of starting one")
    parser.add_argument(
        "--redis-port", type=int, help="port of the Redis this script starts (default: a free one)"
    )
    parser.add_argument(
        "--large-workers",
        type=int,
        help="how many of the workers serve students exploring large images (default: a quarter "
        "of them with 4 or more workers, else 0; 0: one pool)",
    )
    parser.add_argument(
        "--redis-server", help="path of redis-server (default: $CONV_EXPLORER_REDIS_SERVER, else PATH)"
    )
    parser.add_argument(
        "--nginx", help="path of nginx (default: $CONV_EXPLORER_NGINX, else PATH or /usr/sbin)"
    )
    parser.add_argument(
        "--state", default=str(STATE), help=f"folder for logs and Redis's data (default {STATE})"
    )
    parser.add_argument("streamlit", nargs="*", help="after --: options for every Streamlit worker")
    args = parser.parse_args(argv)
    if not 1 <= args.workers <= 256:
        parser.error(f"--workers {args.workers}: between 1 and 256")
    if args.large_workers is None:
        args.large_workers = default_large_workers(args.workers)
    if not 0 <= args.large_workers < args.workers:
        parser.error(
            f"--large-workers {args.large_workers}: between 0 and {args.workers - 1} "
            "(the light sessions need a worker of their own)"
        )
    for port in (args.port, *(args.port + 1 + i for i in range(args.workers))):
        if not port_free("127.0.0.1", port) or not 0 < port < 65536:
            taken = f"port {port} is taken or invalid: choose another --port"
            parser.error(f"{taken} (workers use the {args.workers} ports after it)")
    children, redis_url = plan(args)
    stop_requested = [False]

    def on_signal(signum: int, _frame: object) -> None:
        stop_requested[0] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    for child in children:
        child.start()
    deadline = time.monotonic() + 120
    waiting = [c for c in children if c.ready_port]
    while waiting and time.monotonic() < deadline and not stop_requested[0]:
        waiting = [c for c in waiting if not answers(c.ready_port)]
        time.sleep(0.3)
    if waiting:
        say(f"not answering after 120 s: {', '.join(c.name for c in waiting)} (logs in {args.state})")
    shown = "localhost" if args.host in ("0.0.0.0", "::") else args.host
    lanes = f", {args.large_workers} of them for large images" if args.large_workers else ""
    say(
        f"Conv Explorer for a class: http://{shown}:{args.port}/ ({args.workers} workers{lanes}, "
        f"Redis {redis_url}, nginx; logs in {args.state}). Ctrl-C stops everything."
    )
    try:
        supervise(children, stop_requested, Path(args.state).resolve())
    finally:
        say("stopping")
        for child in reversed(children):  # nginx first, Redis last
            child.stop()
        shutil.rmtree(args.beacons, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
