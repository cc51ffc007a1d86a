"""PID 1 of a jail: builds the jail's root, runs the command as its child, reports its end.

`jail.py` runs it as root, as `python -I -S jail_init.py [--loopback] WORKSPACE STATUS_FD
READONLY... -- HIDDEN... -- COMMAND...`, in fresh mount, network and PID namespaces
(`unshare --fork`): READONLY are the folders to show read-only, HIDDEN the paths to
cover if one of those folders holds them. `--loopback` brings the network namespace's
own `lo` up (only its owner can, so before the command drops to its user): processes of
the jail then reach one another on 127.0.0.1, and still nothing of the machine's. The
rootless backend (`backends/userns.py`) runs it as the
root of a fresh user namespace, with `--enter-user UID GID NPROC` first: the command
then runs as UID and GID in a user namespace of its own nested in that one (so it holds
no capability over the jail's mounts, which belong to the outer one), with at most
NPROC processes counted in that namespace alone. The root it builds holds
the read-only folders, the workspace at /mnt/workspace, a private /tmp, /dev (a few
device nodes and a private /dev/shm) and /proc, and nothing else; the machine's root is
unmounted after `pivot_root`. Then it runs COMMAND (which drops to the sandbox user) as
its child: a PID 1 ignores the signals it has no handler for, so the command itself
must not be PID 1 or SIGXCPU would not stop it. When the child ends, its wait status is
written to STATUS_FD and PID 1 exits, and the kernel kills whatever is left in the
namespace.

The standard library only (and few modules of it), with mounts made by system calls:
this runs before each tool call's command, and a shell script spawning `mount` some
fifty times took ~60 ms.
"""

import ctypes
import os
import signal
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND = 32, 4096
MNT_DETACH = 2
SETUP_FAILED = 97
"""The exit status when the jail could not be built (nothing of the command ran)."""
NEW_ROOT = "/mnt"
"""Where the new root is built before `pivot_root` (a folder every machine has)."""
WORKSPACE = "/mnt/workspace"
DEVICES = ("null", "zero", "full", "random", "urandom")
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin", "/bin")
PROC_SOURCE = "labrxiv-proc"
"""The source name of the jail's own /proc (named in the error when its mount fails)."""

_libc = ctypes.CDLL(None, use_errno=True)


def mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """mount(2); an OSError naming the target when it fails."""
    done = _libc.mount(
        source.encode(),
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if done != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {source} on {target}: {os.strerror(code)}")


def bind(source: str, target: str, flags: int) -> None:
    """Show `source` at `target` with `flags` (a bind mount takes its flags on a remount),
    and those of read-only, nosuid, nodev and noexec the source's mount has: in a user
    namespace they are locked, and a remount that drops one fails."""
    mount(source, target, None, MS_BIND)
    kept = os.statvfs(target).f_flag & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("none", target, None, MS_REMOUNT | MS_BIND | flags | kept)


def tmpfs(target: str, flags: int, options: str) -> None:
    mount("labrxiv-jail", target, "tmpfs", flags, options)


def build(workspace: str, readonly: list[str], hidden: list[str]) -> None:
    """Build the jail's root at NEW_ROOT and pivot into it."""
    new = NEW_ROOT
    tmpfs(new, 0, "size=1m,mode=755")
    for folder in ("mnt/workspace", "proc", "dev/shm", "tmp", ".old"):
        os.makedirs(f"{new}/{folder}")
    # The private /tmp and /dev/shm first, then the folders shown: a folder shown that
    # lives under /tmp (a virtual environment in a clone under /tmp, as CI makes) is
    # bound inside the private /tmp. Mounted after it, the tmpfs covered it, and lab
    # code found no numpy.
    tmpfs(f"{new}/dev/shm", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    tmpfs(f"{new}/tmp", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    bind(workspace, f"{new}{WORKSPACE}", MS_NOSUID | MS_NODEV)
    for path in readonly:
        if os.path.islink(path):
            os.makedirs(new + os.path.dirname(path), exist_ok=True)
            os.symlink(os.readlink(path), new + path)
        elif os.path.isdir(path):
            os.makedirs(new + path, exist_ok=True)
            bind(path, new + path, MS_RDONLY | MS_NOSUID | MS_NODEV)
    for path in hidden:  # a hidden path inside a folder shown: covered
        if os.path.lexists(new + path):
            tmpfs(new + path, MS_RDONLY, "size=4k,mode=000")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            open(f"{new}/dev/{name}", "w").close()
            bind(f"/dev/{name}", f"{new}/dev/{name}", MS_NOSUID | MS_NOEXEC)
    for name, target in (("fd", ""), ("stdin", "/0"), ("stdout", "/1"), ("stderr", "/2")):
        os.symlink(f"/proc/self/fd{target}", f"{new}/dev/{name}")
    mount(PROC_SOURCE, f"{new}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.chdir(new)
    # pivot_root(2) has no libc wrapper and a number per architecture: util-linux's tool.
    found = [f"{d}/pivot_root" for d in SBIN if os.path.exists(f"{d}/pivot_root")]
    if not found or os.waitpid(os.posix_spawn(found[0], [found[0], ".", ".old"], {}), 0)[1]:
        raise OSError("pivot_root failed")
    os.chdir("/")
    if _libc.umount2(b"/.old", MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), "umount /.old")
    os.rmdir("/.old")
    os.chdir(WORKSPACE)


SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """Bring `lo` of this network namespace up (a fresh namespace's is down), which
    gives it 127.0.0.1 (and ::1 where IPv6 is on)."""
    import fcntl  # only a jail with loopback needs these
    import socket
    import struct

    ifreq = "16sh22x"  # struct ifreq: the interface's name, then its flags
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            asked = fcntl.ioctl(sock, SIOCGIFFLAGS, struct.pack(ifreq, b"lo", 0))
            flags = struct.unpack(ifreq, asked)[1] | IFF_UP
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(ifreq, b"lo", flags))
    except OSError as exc:
        raise OSError(exc.errno, f"bring up lo: {exc.strerror}") from None


CLONE_NEWUSER = 0x10000000
PR_SET_NO_NEW_PRIVS = 38


def enter_user(uid: int, gid: int, processes: int) -> None:
    """Become `uid`/`gid` in a new user namespace, with no way to gain privileges and at
    most `processes` processes.

    Mapped onto the outer namespace's root, which is the worker's user outside: files
    the command writes are the worker's. RLIMIT_NPROC counts processes per user per user
    namespace (and up each parent), so set here it bounds this command's tree alone, not
    every process of the worker's user on the machine."""
    import resource  # only the rootless jail needs it

    if _libc.unshare(CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} 0 1"), ("gid_map", f"{gid} 0 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def run(command: list[str], status_fd: int, user: tuple[int, int, int] | None = None) -> None:
    """Run `command` as a child (as `user`, uid, gid and process limit, in a user
    namespace of its own if given); write its wait status to `status_fd`; exit."""
    child = os.fork()
    if child == 0:
        os.close(status_fd)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        if user is not None:
            try:
                enter_user(*user)
            except OSError as exc:
                os.write(2, f"labrxiv-jail: {exc}\n".encode())
                os._exit(SETUP_FAILED)
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    while True:
        try:
            pid, status = os.wait()  # reaps orphans too, as a PID 1 must
        except ChildProcessError:
            os._exit(0)
        if pid == child:
            os.write(status_fd, str(status).encode())
            os._exit(0)


def main(argv: list[str]) -> None:
    user, loopback = None, False
    while argv[0] in ("--enter-user", "--loopback"):
        if argv[0] == "--loopback":
            loopback, argv = True, argv[1:]
        else:
            user, argv = (int(argv[1]), int(argv[2]), int(argv[3])), argv[4:]
    workspace, status_fd, rest = argv[0], int(argv[1]), argv[2:]
    first = rest.index("--")
    second = rest.index("--", first + 1)
    try:
        if loopback:
            loopback_up()
        build(workspace, rest[:first], rest[first + 1 : second])
    except OSError as exc:
        os.write(2, f"labrxiv-jail: {exc}\n".encode())
        os._exit(SETUP_FAILED)
    run(rest[second + 1 :], status_fd, user)


if __name__ == "__main__":
    main(sys.argv[1:])
