#!/usr/bin/env python3
"""A throw-away single-node SLURM cluster on this machine, for testing the cluster profile.

    python tools/slurm_cluster.py install        # Debian's slurm-wlm + munge, when missing (root)
    python tools/slurm_cluster.py start DIR      # munged, slurmctld, slurmd; state and logs in DIR
    eval "$(python tools/slurm_cluster.py env DIR)"   # point sbatch/squeue/... at that cluster
    python tools/slurm_cluster.py stop DIR       # stop the daemons started there, by pid

The cluster's configuration, munge key, spool, state, logs and pid files live in DIR. Two things
live where SLURM looks for them without being told: munged's socket (/run/munge; a munged
already running there is used as it is) and slurmd's copy of the configuration (/run/slurm/conf:
slurmd runs "configless", fetching it from slurmctld, because the SLURM executor's job step
strips SLURM_CONF before it calls srun inside a job). A machine with its own
/etc/slurm/slurm.conf is left alone: ``start`` refuses. The node is described by ``slurmd -C`` (the machine's own cores and memory),
there is one partition, ``debug``, and no accounting database, so ``sacct`` does not work
("accounting storage is disabled") and job states come from ``squeue``. The daemons run as
root, which a test cluster on a CI machine is; ``start`` fails with one line when it cannot.
Standard library only: the script must run before the project is installed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd")
PARTITION = "debug"
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
CONF_CACHE = Path("/run/slurm/conf")
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")


class ClusterError(RuntimeError):
    """The cluster cannot be installed or started here (one line, for a skip reason)."""


def missing_programs() -> list[str]:
    """The programs a cluster needs that are not on PATH (daemons live in /usr/sbin)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    needed = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")
    return [p for p in needed if shutil.which(p, path=path) is None]


def _program(name: str) -> str:
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    found = shutil.which(name, path=path)
    if found is None:
        raise ClusterError(f"{name} not found: run `python tools/slurm_cluster.py install` (root, Debian)")
    return found


def install() -> None:
    """Install Debian's SLURM and munge packages when a program is missing."""
    if not missing_programs():
        return
    if shutil.which("apt-get") is None:
        raise ClusterError("SLURM is not installed and there is no apt-get to install it")
    if os.geteuid() != 0:
        raise ClusterError("SLURM is not installed and installing it needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", *PACKAGES]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise ClusterError(f"{' '.join(cmd)} failed: {tail[0]}")
    if missing_programs():
        raise ClusterError(f"still missing after install: {', '.join(missing_programs())}")


def munge_running() -> bool:
    """Whether a munged answers on the default socket (slurmd needs it there before it has a
    configuration: in configless mode it authenticates its request for one)."""
    munge, unmunge = shutil.which("munge"), shutil.which("unmunge")
    if munge is None or unmunge is None or not MUNGE_SOCKET.exists():
        return False
    cred = subprocess.run([munge, "-n"], capture_output=True)
    return cred.returncode == 0 and subprocess.run([unmunge], input=cred.stdout,
                                                   capture_output=True).returncode == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_line() -> str:
    """``NodeName=... CPUs=... RealMemory=...`` as slurmd measures this machine."""
    out = subprocess.run([_program("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
    line = next((ln for ln in out.splitlines() if ln.startswith("NodeName=")), None)
    if line is None:
        raise ClusterError(f"`slurmd -C` printed no node description: {out.strip()!r}")
    return line.strip()


def slurm_conf(root: Path, node: str, ctld_port: int, slurmd_port: int) -> str:
    """A single-node configuration: cons_tres on cores and memory, no cgroups, no accounting."""
    host = node.split()[0].split("=", 1)[1]
    return "\n".join([
        "ClusterName=structpred-test",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "AuthType=auth/munge",
        "SlurmUser=root",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd.pid",
        f"SlurmctldLogFile={root}/log/slurmctld.log",
        f"SlurmdLogFile={root}/log/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "MpiDefault=none",
        "ReturnToService=2",
        "MinJobAge=300",  # finished jobs stay visible to squeue for 5 minutes
        # slurmd takes its configuration from slurmctld and caches it where every SLURM command
        # on the node looks (/run/slurm/conf): the executor's job step strips SLURM_CONF
        # (with every SLURM_* variable) before it calls srun inside a job.
        "SlurmctldParameters=enable_configless",
        f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def environment(root: Path) -> dict[str, str]:
    """The variables that point SLURM's commands (and the jobs they start) at this cluster."""
    return {"SLURM_CONF": str(Path(root).resolve() / "slurm.conf")}


def _spawn(name: str, args: list[str], root: Path, env: dict[str, str]) -> int:
    log = open(root / "log" / f"{name}.out", "ab")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    (root / "pids").mkdir(exist_ok=True)
    (root / "pids" / name).write_text(str(proc.pid))
    return proc.pid


def _wait(what: str, ok, timeout: float, root: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.5)
    logs = sorted((root / "log").glob("*"))
    tail = ""
    for log in logs:
        lines = log.read_text(errors="replace").strip().splitlines()
        if lines:
            tail = f" ({log.name}: {lines[-1]})"
    raise ClusterError(f"{what} did not come up within {timeout:.0f} s{tail}")


def node_state(env: dict[str, str]) -> str:
    proc = subprocess.run([_program("sinfo"), "-h", "-N", "-o", "%T"], capture_output=True,
                          text=True, env=env)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def start(root: Path, timeout: float = 60.0) -> dict[str, str]:
    """Start munged, slurmctld and slurmd with their state in ``root``; return the environment."""
    if os.geteuid() != 0:
        raise ClusterError("the test cluster runs its daemons as root, and this is not root")
    for name in DAEMONS:
        _program(name)
    if SYSTEM_CONF.exists():
        raise ClusterError(f"this machine has its own SLURM ({SYSTEM_CONF}); not starting a second one")
    root = Path(root).resolve()
    if any((root / "pids" / d).exists() for d in DAEMONS):
        raise ClusterError(f"{root} already has a running cluster: stop it first")
    for sub in ("munge", "state", "spool", "log"):
        (root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(root / sub, 0o700)
    os.chmod(root, 0o755)
    key = root / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o600)
    env = {**os.environ, **environment(root)}
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, node_line(), _free_port(), _free_port()))

    if not munge_running():
        MUNGE_SOCKET.parent.mkdir(parents=True, exist_ok=True)
        _spawn("munged", [_program("munged"), "--foreground", "--force", f"--key-file={key}",
                          f"--pid-file={root}/munge/munged.pid", f"--log-file={root}/log/munged.log",
                          f"--seed-file={root}/munge/munged.seed"], root, env)
        _wait("munged", munge_running, timeout, root)
    _spawn("slurmctld", [_program("slurmctld"), "-D", "-i", "-f", str(conf)], root, env)
    ctld_port = next(ln for ln in conf.read_text().splitlines() if ln.startswith("SlurmctldPort="))
    _spawn("slurmd", [_program("slurmd"), "-D", "--conf-server",
                      f"127.0.0.1:{ctld_port.split('=')[1]}"], root, env)
    _wait("the node", lambda: node_state(env) in ("idle", "mixed", "allocated"), timeout, root)
    return environment(root)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(root: Path, timeout: float = 30.0) -> list[str]:
    """Stop the daemons whose pids ``start`` recorded in ``root`` (SIGTERM, then SIGKILL)."""
    root = Path(root).resolve()
    stopped = []
    for name in reversed(DAEMONS):
        pid_file = root / "pids" / name
        if not pid_file.exists():
            continue
        pid = int(pid_file.read_text())
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _alive(pid) and time.monotonic() < deadline:
                try:  # reap it when it is our child (the test's own fixture)
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
                time.sleep(0.2)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        pid_file.unlink()
        stopped.append(name)
    if CONF_CACHE.is_symlink() and str(os.readlink(CONF_CACHE)).startswith(str(root)):
        CONF_CACHE.unlink()  # slurmd's link to its cached configuration, left behind on exit
    return stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="install Debian's slurm-wlm and munge when missing")
    for name in ("start", "stop", "env"):
        p = sub.add_parser(name)
        p.add_argument("dir", type=Path, help="the cluster's state directory")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install()
            print("SLURM is installed")
        elif args.command == "start":
            env = start(args.dir)
            print(f"cluster up: partition {PARTITION}, {node_line()}; export SLURM_CONF={env['SLURM_CONF']}")
        elif args.command == "env":
            print(f"export SLURM_CONF={environment(args.dir)['SLURM_CONF']}")
        else:
            print("stopped: " + (", ".join(stop(args.dir)) or "nothing was running"))
    except (ClusterError, subprocess.CalledProcessError) as err:
        print(f"slurm_cluster: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
