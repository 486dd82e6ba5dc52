"""Files jeirt writes: all or nothing (`atomic_write`), which paths a command may write
(`check_output`), and JSON that holds numpy numbers.

A reader, or a process killed half-way, sees either the old file or the whole new one: the bytes go
to a temporary file in the same folder, are flushed to disk, and replace the target in one step
(through a symbolic link: its target is replaced, the link kept). Files that belong together (a
table and its JSON) are written as one unit (`atomic_write_many`). Temporary files left by a killed
writer (`.tmp-<pid>-<uuid>-<name>`) are removed by the next write into the same folder on the same
machine (`remove_stale_temporaries`). A failed write raises `WriteError`, which names the path.

A target that is not a regular file is never renamed over: a character device or a FIFO (a terminal,
`/dev/stdout`, `/dev/null`, a named pipe) is written through in place, as a shell's `>` would, since
it keeps nothing to replace; a block device (a disk), a socket or any other kind is refused
(`OutputRefused`). `locked(path)` serialises the updates of one file by several processes (`jeirt
onboard --in-place`).

A new output (one that did not exist when `check_output` passed it, without `force`) is created
exclusively: its final name is claimed in one step that fails if the name exists (a hard link of the
finished temporary file), so of two commands writing one new file at once, the second is refused
(`OutputTaken`) instead of replacing the first's output without a word.

A command never writes over what it reads, the datasets and their checksum manifest under
`$JEIRT_DATA`, or a file of the installed jeirt package; `force` replaces only earlier outputs.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

_TEMPORARY = re.compile(r"^\.tmp-(?:(\d+)-)?[0-9a-f]{32}-")  # .tmp-<pid>-<uuid>-<name>; older files lack the pid
STALE_SECONDS = 60.0  # a temporary file without a writer's pid (an older jeirt's) is removed once this old
ABANDONED_SECONDS = 24 * 3600.0  # any temporary file this old is removed, whoever wrote it
NAME_BYTES = 255  # the longest file name most file systems take (ext4, APFS, NTFS)
WRITTEN: list[
    str
] = []  # the outputs (paths `check_output` passed) written in full, in order, for an interrupt's message
_OUTPUTS: set[str] = set()  # the real paths `check_output` passed in this process
_NEW: set[str] = set()  # those of them that did not exist and may not be replaced: created exclusively


class WriteError(OSError):
    """An output could not be written (disk full, permissions, a read-only disk); names the path."""


class OutputTaken(WriteError):
    """A new output's name was taken by another process while this one worked: nothing replaced it."""


class OutputRefused(ValueError):
    """A path a command may not write: an input, a dataset or manifest, a package file, or an existing
    file without `force`."""


def new_command() -> None:
    """Forget the outputs of an earlier command run in this process (`jeirt.cli.main` may run several)."""
    WRITTEN.clear()
    _NEW.clear()


def _alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (on Windows, where `os.kill` would end the
    process, every writer counts as running)."""
    if os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    except OSError:
        return False
    return True


def remove_stale_temporaries(folder: str | Path) -> list[Path]:
    """Delete the temporary files of writers that were killed before `os.replace`; return them.

    A file counts as stale when its writer's process is gone (its pid is in the name; a folder shared
    with other machines should not take jeirt outputs from two of them at once), when it has no pid
    and is older than `STALE_SECONDS`, or, whoever wrote it, when it is older than `ABANDONED_SECONDS`;
    a running writer's file is otherwise left alone.
    """
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if not match:
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            age = now - entry.stat(follow_symlinks=False).st_mtime
            pid = int(match.group(1)) if match.group(1) else None
            if pid is None:
                stale = age > STALE_SECONDS
            else:
                stale = pid != os.getpid() and not _alive(pid)
            if stale or age > ABANDONED_SECONDS:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:  # another process removed or replaced it first
            continue
    return removed


def _target(path: Path) -> Path:
    """Where writing `path` lands: the file a symbolic link points to (the link stays a link)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def stream_kind(path: str | Path) -> str | None:
    """What kind of non-regular file `path` is ("character device", "FIFO", "block device", "socket",
    "special file"), following links; None for a regular file or a path that does not exist."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, kind in (
        (stat.S_ISCHR, "character device"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return kind
    return "special file"


WRITTEN_THROUGH = ("character device", "FIFO")  # streams: written in place, never replaced


def _refuse_kind(path: str | Path, kind: str) -> OutputRefused:
    return OutputRefused(
        f"{path} is a {kind}, not a regular file: jeirt writes only files, terminals, pipes and "
        "character devices, and never replaces a special file; give a file name."
    )


def _temporary(path: Path) -> Path:
    """A fresh temporary name beside `path`, cut to `NAME_BYTES` (a long file name must still fit)."""
    prefix = f".tmp-{os.getpid()}-{uuid.uuid4().hex}-"
    name = path.name.encode("utf-8", errors="surrogateescape")[: NAME_BYTES - len(prefix)]
    return path.with_name(prefix + name.decode("utf-8", errors="ignore"))  # a character cut in two is dropped


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call `write(f)` on a temporary file beside `path`, fsync it, then `os.replace` it onto `path`.

    A kill at any moment leaves `path` as it was or whole and new, never partly written. The folder
    must exist; `path` must not be a folder. Failing to write raises `WriteError` naming `path`.
    """
    atomic_write_many([(path, write)])
    return Path(path)


def atomic_write_many(files: Sequence[tuple[str | Path, Callable[[BinaryIO], object]]]) -> list[Path]:
    """Write several files as one unit: every one to its temporary file first, each fsynced, and only
    then all of them moved into place, one right after the other (a kill in the microseconds between
    two moves is what a reader must detect, e.g. by a checksum one file keeps of the other). The new
    outputs are claimed first (`_claim`): if another process took one of their names meanwhile, the unit
    is refused (`OutputTaken`) and nothing of it stays."""
    streams = [(Path(p), write) for p, write in files if stream_kind(p) is not None]
    for path, _ in streams:
        kind = stream_kind(path)
        if kind not in WRITTEN_THROUGH:
            raise _refuse_kind(path, str(kind))  # "None" only if the path vanished since it was sorted
    regular = [(p, write) for p, write in files if stream_kind(p) is None]
    targets = [_target(Path(p)) for p, _ in regular]
    for path in targets:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder; give a file name to write to.")
    temporaries: list[Path] = []
    try:
        for path, (_, write) in zip(targets, regular):
            remove_stale_temporaries(path.parent)
            temporaries.append(_temporary(path))
            _write_file(temporaries[-1], path, write)
        _move_into_place(targets, temporaries)
        for folder in dict.fromkeys(path.parent for path in targets):
            _fsync_folder(folder)
        for path, write in streams:  # after the files: a reader at a pipe sees output that is complete
            _write_through(path, write)
    finally:
        for tmp in temporaries:
            tmp.unlink(missing_ok=True)
    return [Path(p) for p, _ in files]


class _Recording:
    """A binary file that keeps the first OSError its writes raised, so that a writer which turns it
    into an error of its own (`torch.save` raises RuntimeError "enforce fail ...") still fails as the
    `WriteError` it is (a full disk, a file-size limit)."""

    def __init__(self, stream: BinaryIO):
        self._stream = stream
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            return self._stream.write(data)
        except OSError as err:
            self.error = self.error or err
            raise

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _write_failed(path: Path, err: OSError) -> WriteError:
    return WriteError(
        err.errno,
        f"could not write {path} ({err.strerror or err}); free space or choose another path",
        str(path),
    )


def _write_file(file: Path, path: Path, write: Callable[[BinaryIO], object], sync: bool = True) -> None:
    """`write` into `file` (the temporary file of `path`, fsynced; or `path` itself, a stream), flushed;
    any failure to write, however the writer reports it, a `WriteError` naming `path`."""
    try:
        with open(file, "wb") as f:  # O_TRUNC is a no-op on a stream
            recording = _Recording(f)
            try:
                write(recording)  # type: ignore[arg-type]  # (a BinaryIO by delegation)
            except Exception as err:
                if isinstance(err, OSError) or recording.error is None:
                    raise
                raise _write_failed(path, recording.error) from err
            f.flush()
            if sync:
                os.fsync(f.fileno())
    except OSError as err:
        if isinstance(err, WriteError):
            raise
        raise _write_failed(path, err) from err


def _move_into_place(targets: list[Path], temporaries: list[Path]) -> None:
    """Move each temporary file onto its target: the new outputs first, each claimed exclusively (a
    claim that fails takes back the claims made before it), then the replacements, back to back."""
    new = [os.path.realpath(path) in _NEW for path in targets]
    claimed: list[Path] = []
    try:
        for path, tmp, is_new in zip(targets, temporaries, new):
            if is_new:
                _claim(tmp, path)
                claimed.append(path)
    except BaseException:
        for path in claimed:
            path.unlink(missing_ok=True)
        raise
    for path, tmp, is_new in zip(targets, temporaries, new):
        if not is_new:
            try:
                os.replace(tmp, path)
            except OSError as err:
                raise WriteError(err.errno, f"could not write {path} ({err.strerror or err})", str(path)) from err
        _NEW.discard(os.path.realpath(path))  # written: a second write in this command replaces its own file
        _note_written(path)


def _claim(tmp: Path, path: Path) -> None:
    """Give the finished temporary file `tmp` the name `path` only if no file has it: a hard link, which
    fails when the name exists (where a file system has no hard links: the name created with O_EXCL,
    then replaced). `OutputTaken` if another process created `path` since `check_output` passed it."""
    try:
        try:
            os.link(tmp, path)
            return
        except FileExistsError:
            raise
        except OSError:  # no hard links here (FAT, some network file systems)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        os.replace(tmp, path)
    except FileExistsError:
        raise OutputTaken(
            errno.EEXIST,
            f"{path} was created by another process while this command ran (it did not exist when the command "
            "started); it was left as it is and this command's output was not written. Pass --force to replace "
            "it, or choose another name",
            str(path),
        ) from None
    except OSError as err:
        raise WriteError(err.errno, f"could not write {path} ({err.strerror or err})", str(path)) from err


def _note_written(path: Path) -> None:
    if os.path.realpath(path) in _OUTPUTS:  # a command's output, not a cache file written on the way
        WRITTEN.append(str(path))


def _write_through(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write into a character device or FIFO in place (no temporary file, no rename, no truncation of
    what is not a file); a failure (`/dev/full`: no space) raises `WriteError` naming `path`."""
    _write_file(path, path, write, sync=False)
    _note_written(path)


class Locked(WriteError):
    """Another process held a file's update lock for longer than the caller would wait; names both (a
    `WriteError`: the output could not be written)."""


LOCK_NOTICE_SECONDS = 1.0  # how long `locked` waits quietly before saying on stderr whom it waits for
_held: dict[str, tuple[int, int]] = {}  # lock file -> (descriptor, depth): this process's locks


def lock_path(path: str | Path) -> Path:
    """The lock file beside `path` (its link's target): `.<name>.lock`, kept after use, since removing
    it while another process waits on it would let a third take a new one at once."""
    target = _target(Path(path).expanduser())
    return target.with_name(f".{target.name}.lock")


@contextlib.contextmanager
def locked(path: str | Path, timeout: float | None = 600.0) -> Iterator[Path]:
    """Hold the update lock of `path` for the `with` block (an exclusive `fcntl.flock` on `lock_path`),
    so that a read-modify-write of one file by two processes runs one after the other, never both on
    the old file. Waiting: a line on stderr after `LOCK_NOTICE_SECONDS`; `Locked` after `timeout`
    seconds (None: wait for as long as it takes). Re-entrant within a process; a no-op on Windows."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; `JEIRT.save` still refuses a file changed since its load
        yield Path(path)
        return
    lock = lock_path(path)
    key = str(lock)
    if key in _held:
        fd, depth = _held[key]
        _held[key] = (fd, depth + 1)
        try:
            yield Path(path)
        finally:
            fd, depth = _held[key]
            _held[key] = (fd, depth - 1)
        return
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise WriteError(
            err.errno,
            f"could not create the lock file {lock} ({err.strerror}); check the folder's permissions",
            str(lock),
        ) from err
    try:
        start, told = time.monotonic(), False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                if timeout is not None and waited >= timeout:
                    raise Locked(
                        errno.EAGAIN,
                        f"{path} is being updated by another process (it holds {lock}) and was still after "
                        f"{timeout:g} s; wait for it to finish, or end it, then run again",
                        str(path),
                    ) from None
                if not told and waited >= LOCK_NOTICE_SECONDS:
                    print(f"waiting for another process updating {path} (it holds {lock}) ...", file=sys.stderr)
                    told = True
                time.sleep(0.05)
        _held[key] = (fd, 1)
        try:
            yield Path(path)
        finally:
            del _held[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def identity(path: str | Path) -> tuple[int, int, int, int] | None:
    """What tells one version of a file from the next (device, inode, size, modification time in ns),
    or None when it cannot be read: `atomic_write` gives every version a new inode."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _fsync_folder(folder: Path) -> None:
    """Flush the folder entry too, so the rename itself survives a power cut (POSIX; a no-op elsewhere)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------------------------------
# Which paths a command may read


class InputRefused(ValueError):
    """A path given as an input that is not a readable regular file; says what it is instead."""


def as_path(path: str | Path) -> Path:
    """`path` as a Path (user folder expanded); a TypeError naming it when it is not a path at all."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path={path!r}: expected a file's path (a str or pathlib.Path), not a {type(path).__name__}.")
    return Path(path).expanduser()


def check_input(path: str | Path) -> Path:
    """`path` (user folder expanded) if it names a readable regular file, else `InputRefused` saying what
    it names: nothing, a link that leads nowhere (a loop or a missing target), a folder, a FIFO, socket
    or device (opening one to read would wait forever or read without end), or a file this user cannot
    read. Looked at with `stat` only: nothing is opened."""
    p = as_path(path)
    if not str(path).strip():
        raise InputRefused("is empty; give a file.")
    if not os.path.exists(p):  # os.path: False, not an error, for a name too long to look up
        if os.path.lexists(p):
            raise InputRefused(
                f"{path} is a symbolic link that leads nowhere (a loop, or its target is missing); give the file."
            )
        raise InputRefused(f"{path}: no such file; check the path.")
    if os.path.isdir(p):
        raise InputRefused(f"{path} is a folder; give a file.")
    kind = stream_kind(p)
    if kind is not None:
        raise InputRefused(f"{path} is a {kind}, not a regular file; give a file.")
    if not os.access(p, os.R_OK):
        raise InputRefused(f"{path} cannot be read (permission denied); check its permissions.")
    return p


# ----------------------------------------------------------------------------------------------------
# Which paths a command may write


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def protected(path: str | Path) -> str | None:
    """Why no command may write `path` (resolved through links), or None: a file of the installed jeirt
    package, the checksum manifest of `$JEIRT_DATA`, a file in one of its dataset folders or listed in
    the manifest."""
    from jeirt import settings

    path = Path(os.path.realpath(Path(path).expanduser()))
    package = Path(__file__).resolve().parent
    if _inside(path, package):
        return f"a file of the installed jeirt package ({package})"
    data = settings.data_dir()
    if not _inside(path, data) or path == data:
        return None
    rel = path.relative_to(data)
    if rel.as_posix() == "checksums.json":
        return f"the datasets' checksum manifest ({data}/checksums.json)"
    if len(rel.parts) > 1 and (data / rel.parts[0] / "responses.csv.gz").is_file():
        return f"in the dataset folder {data / rel.parts[0]}"
    try:
        listed = json.loads((data / "checksums.json").read_text()).get("files", {})
    except (OSError, ValueError, AttributeError):
        listed = {}
    if isinstance(listed, dict) and rel.as_posix() in listed:
        return f"a data file listed in {data}/checksums.json"
    return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b) or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _writable_folder(folder: Path) -> bool:
    """Whether a file can be created in `folder`: tried, since permission bits do not bind root and a
    read-only disk shows none (the atomic writer needs a temporary file there)."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".tmp-probe-"):
            return True
    except OSError:
        return False


def check_output(
    path: str | Path, *, reads: Sequence[tuple[str, Path]] = (), force: bool = False, replaces: str | None = None
) -> Path:
    """The file writing `path` will replace (a link's target), or `OutputRefused` saying why not.

    A character device or FIFO is returned as given (written through, `--force` not needed); a block
    device, a socket or another special file is refused.
    Refused: an empty path; a folder, a missing or unwritable folder, a name over `NAME_BYTES` bytes;
    one of `reads` ((what, path) pairs: the command's inputs); anything `protected`; an existing file
    unless `force` (earlier outputs only). `replaces` names the one input this output is asked to
    replace (onboard --in-place): it may exist and be read.
    """
    if not str(path).strip():
        raise OutputRefused("is empty; give a file name.")
    path = Path(path).expanduser()
    size = len(path.name.encode("utf-8", errors="surrogateescape"))
    if size > NAME_BYTES:  # before any look at the disk, which would fail on it
        raise OutputRefused(
            f"{path}: the file name is {size} bytes long; file systems take at most {NAME_BYTES}, "
            "choose a shorter name."
        )
    kind = stream_kind(path)
    if kind is not None:  # nothing is replaced, so no --force is asked; never renamed over (atomic_write)
        if kind not in WRITTEN_THROUGH:
            raise _refuse_kind(path, kind)
        for what, read in reads:
            if _same_file(path, Path(read)):
                raise OutputRefused(f"{path} is also {what}: jeirt never writes into an input; write to another file.")
        if not os.access(path, os.W_OK):
            raise OutputRefused(f"{path} is a {kind} this user cannot write (permissions); choose another path.")
        _OUTPUTS.add(os.path.realpath(path))
        return path
    target = _target(path)
    if os.path.isdir(target):
        raise OutputRefused(f"{path} is a folder; give a file name inside it.")
    if not os.path.isdir(target.parent):
        raise OutputRefused(f"{path}: the folder {target.parent} does not exist; create it first.")
    for what, read in reads:
        if what != replaces and _same_file(target, Path(read)):
            raise OutputRefused(f"{path} is also {what}: jeirt never overwrites an input; write to another file.")
    why = protected(target)
    if why:
        raise OutputRefused(
            f"{path} is {why}: jeirt never writes there, with or without --force; write to another file."
        )
    if not _writable_folder(target.parent):
        raise OutputRefused(
            f"{path} cannot be written: the folder {target.parent} does not take new files "
            "(permissions or a read-only disk); choose another path."
        )
    exists = target.exists()
    if exists and not force and replaces is None:
        raise OutputRefused(f"{path} exists; pass --force to replace it, or choose another name.")
    real = os.path.realpath(target)
    _OUTPUTS.add(real)
    if exists or force or replaces is not None:
        _NEW.discard(real)
    else:  # may not replace a file that another process creates meanwhile: claimed exclusively when written
        _NEW.add(real)
    return target


def write_text(path: str | Path, text: str) -> Path:
    """`text` as UTF-8, written atomically (CSV tables, reports)."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def json_number(value: object) -> object:
    """`json.dumps(default=...)`: numpy scalars as JSON numbers, anything else as its text."""
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def finite_json(blob: object) -> object:
    """`blob` with every NaN or infinite number (also numpy's) replaced by None, which JSON writes as
    null: strict JSON holds no NaN, and a metric that is undefined is not a number."""
    if isinstance(blob, dict):
        return {key: finite_json(value) for key, value in blob.items()}
    if isinstance(blob, (list, tuple)):
        return [finite_json(value) for value in blob]
    if isinstance(blob, (float, np.floating)) and not np.isfinite(blob):
        return None
    return blob


def write_json(path: str | Path, blob: object, indent: int = 2) -> Path:
    """`blob` as strict JSON (NaN refused), written atomically."""
    text = json.dumps(blob, indent=indent, default=json_number, allow_nan=False)
    return write_text(path, text)


def comma_list(text: str) -> list[str]:
    """'a, b,c' -> ['a', 'b', 'c'] (empty items dropped): a command-line list."""
    return [item.strip() for item in text.split(",") if item.strip()]
