"""Faults while onnxmap writes a model (tests/cli/convert_atomic_test.py, and the Python package's
python/tests/test_save_atomic.py): a writer killed mid-write, and what a folder may hold after it.

The promise they check (docs/format-and-limits.md, "Writes"): after a failed or killed save, the
model's path holds the old version or the new one, byte for byte with the files it names, or no
model at all; never a file half-written under a final name, and never the old model with new data.
"""
import os
import pathlib
import signal
import subprocess
import time


def snapshot(folder):
    """{name relative to `folder`: bytes} of every file under it, hidden ones included."""
    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def restore(folder, old):
    """Puts `folder` back as snapshot `old` holds it (files not in it removed)."""
    folder = pathlib.Path(folder)
    for name in set(snapshot(folder)) - set(old):
        (folder / name).unlink()
    for name, data in old.items():
        (folder / name).write_bytes(data)


def writing_into(pid, folder):
    """Whether process `pid` holds a file of `folder` open (a file it writes: unnamed ones show
    as "FOLDER/#INODE (deleted)")."""
    prefix = str(pathlib.Path(folder).resolve()) + "/"
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                    return True
            except OSError:
                continue
    except OSError:
        return False
    return False


def kill_mid_write(argv, folder, delay=0.0, **popen_args):
    """Runs `argv` and SIGKILLs it `delay` seconds after it starts writing into `folder`. True
    when it was killed so; False when it ended first (its exit status checked: 0)."""
    process = subprocess.Popen([str(a) for a in argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, **popen_args)
    try:
        while process.poll() is None:
            if writing_into(process.pid, folder):
                time.sleep(delay)
                if process.poll() is not None:
                    break
                process.send_signal(signal.SIGKILL)
                if process.wait() == -signal.SIGKILL:
                    return True
                break
            time.sleep(0.0005)
        process.wait()
        assert process.returncode == 0, process.stderr.read().decode()
        return False
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()


def assert_old_new_or_none(after, model, old, new):
    """`after` (a snapshot) holds the model `model` as in snapshot `old`, with every file of that
    version byte for byte, or as in `new` likewise, or no file named `model`; every file in it is
    whole (the old version's or the new one's); and no hidden
    temporary file (writers write unnamed files where the file system allows, as ext4, tmpfs,
    xfs and btrfs do)."""
    hidden = [name for name in after if ".onnxmap-" in name]
    assert not hidden, f"temporary files left behind: {hidden}"
    # Every file under a final name is whole: the old version's or the new one's.
    torn = [n for n in after if after[n] != old.get(n) and after[n] != new.get(n)]
    assert not torn, f"files that are neither the old nor the new version: {torn}"
    if model not in after:
        return "none"
    for label, version in (("old", old), ("new", new)):
        if after[model] == version[model]:
            changed = [n for n in version if after.get(n) != version[n]]
            assert not changed, f"the {label} model with other files than its own: {changed}"
            return label
    raise AssertionError(f"{model} is neither the old version nor the new one "
                         f"({len(after[model])} bytes; old {len(old[model])}, new "
                         f"{len(new[model])})")
