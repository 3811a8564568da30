"""A student's .zip, unpacked by the grader with its own rights (outside the
sandbox), so that no archive can do more than fill a bounded folder.

A course submission is a few kernel files of some KB. What an archive may hold,
and what happens to the rest:
  - the archive itself: at most MAX_ARCHIVE_BYTES on disk and MAX_MEMBERS
    entries (read from its end record before the directory is parsed); more,
    a corrupt or encrypted archive, a member whose name points outside the
    folder (absolute, "..") or a name given twice: Rejected, with the fix;
  - unpacked: at most MAX_UNPACKED_BYTES in all, counted on the bytes actually
    decompressed (an archive's declared sizes can lie: a zip bomb says 1 KB);
    more: Rejected;
  - one member: at most submission.MAX_FILE_BYTES (a kernel file's limit,
    which grade.py would refuse anyway), nested at most submission.MAX_DEPTH
    folders, a name of printable characters; else left out and named;
  - links and special files (Unix modes in a member's external_attr): never
    made; left out and named. Backslashes are folder separators (zips made on
    Windows). A zip inside the zip stays a file: never unpacked.
Every file is created new (O_EXCL, O_NOFOLLOW) in folders this module made,
so nothing is written through a link."""
from __future__ import annotations

import os
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from .submission import MAX_DEPTH, MAX_FILE_BYTES, shown

MiB = 1 << 20
MAX_ARCHIVE_BYTES = 64 * MiB     # the .zip file itself
MAX_UNPACKED_BYTES = 64 * MiB    # everything decompressed from one archive
MAX_MEMBERS = 2000               # entries of one archive
CHUNK = 1 << 16


class Rejected(Exception):
    """The whole archive is refused: why, and what the student does about it."""

    def __init__(self, why, fix):
        super().__init__(f"{why}. Fix: {fix}")
        self.why, self.fix = why, fix


def _declared_members(path):
    """The entry count from the archive's end record, before its directory is parsed
    (a directory of a million entries would cost the grader gigabytes of memory)."""
    try:
        with open(path, "rb") as f:
            end = zipfile._EndRecData(f)  # noqa: SLF001  (the standard library's own reader of that record)
    except (OSError, AttributeError):
        return None
    return end[zipfile._ECD_ENTRIES_TOTAL] if end else None  # noqa: SLF001


def _member_path(info):
    """The member's relative parts, or None for a folder entry; Rejected for a name
    that leaves the folder."""
    name = info.filename.replace("\\", "/")
    if name.endswith("/"):
        return None
    parts = [p for p in PurePosixPath(name).parts if p not in ("", ".")]
    if name.startswith("/") or (parts and len(parts[0]) == 2 and parts[0][1] == ":") or ".." in parts:
        raise Rejected(f"the archive's member {shown(info.filename)} points outside the archive's folder",
                       "make the zip from inside your folder (cd into it; zip -r ../submission.zip .)")
    return parts


def _mode(info):
    """The member's Unix file type, when the zip was made on Unix and says it."""
    return stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0


def extract_zip(path, dest):
    """Unpacks the zip at path into dest (an empty folder). Returns the members left
    out, each with why (for the report). Raises Rejected when the whole archive is
    refused; dest may then hold part of it."""
    dest = Path(dest)
    size = os.path.getsize(path)
    if size > MAX_ARCHIVE_BYTES:
        raise Rejected(f"the archive is {size} bytes, more than the limit of {MAX_ARCHIVE_BYTES >> 20} MiB",
                       "submit only the lab's kernel files (no build folders, profiles or data)")
    declared = _declared_members(path)
    if declared is not None and declared > MAX_MEMBERS:
        raise Rejected(f"the archive holds {declared} entries, more than the limit of {MAX_MEMBERS}",
                       "submit only the lab's kernel files (no build folders)")
    try:
        with zipfile.ZipFile(path) as z:
            return _extract(z, dest)
    except Rejected:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, ValueError, RuntimeError,
            zipfile.LargeZipFile) as e:
        raise Rejected(f"the archive cannot be read ({e.__class__.__name__}: {shown(str(e))})",
                       "make the zip again (zip -r submission.zip FOLDER) and check that it opens") from None


def _extract(z, dest):
    infos = z.infolist()
    if len(infos) > MAX_MEMBERS:
        raise Rejected(f"the archive holds {len(infos)} entries, more than the limit of {MAX_MEMBERS}",
                       "submit only the lab's kernel files (no build folders)")
    if any(info.flag_bits & 0x1 for info in infos):
        raise Rejected("the archive is encrypted (it has a password)", "make the zip again without a password")
    left_out, seen, unpacked = [], set(), 0
    for info in infos:
        parts = _member_path(info)
        if parts is None or not parts:
            continue
        rel = "/".join(parts)
        if rel in seen:
            raise Rejected(f"the archive holds {shown(rel)} twice (which one is graded is not clear)",
                           "make the zip again from your folder, so that each file is in it once")
        seen.add(rel)
        kind = _mode(info)
        if kind and kind != stat.S_IFREG:
            what = "a symbolic link" if kind == stat.S_IFLNK else "not a plain file"
            left_out.append(f"{shown(rel)} ({what} in the archive: not taken)")
            continue
        if not all(p.isprintable() for p in parts):
            left_out.append(f"{shown(rel)} (a name with control characters: not taken)")
            continue
        if len(parts) - 1 > MAX_DEPTH:
            left_out.append(f"{shown(rel)} (more than {MAX_DEPTH} folders deep: not taken)")
            continue
        try:
            n, kept = _write_member(z, info, dest, parts, MAX_UNPACKED_BYTES - unpacked)
        except OSError as e:  # a name too long, a file where a folder should be
            left_out.append(f"{shown(rel)} ({e.strerror or e}: not taken)")
            continue
        unpacked += n
        if not kept:
            left_out.append(f"{shown(rel)} (more than a kernel file's limit of {MAX_FILE_BYTES >> 20} MiB: not taken)")
    return left_out


def _write_member(z, info, dest, parts, room):
    """Streams one member to dest/parts, counting the bytes as they come out of the
    decompressor. Returns (bytes unpacked, whether the file was kept: not when it is
    over MAX_FILE_BYTES). Rejected when the archive as a whole goes over
    MAX_UNPACKED_BYTES (the bytes of members left out count too: unpacking is work)."""
    fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.fdopen(os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=fd), "wb")
        n, kept = 0, True
        with out, z.open(info) as src:
            while chunk := src.read(CHUNK):
                n += len(chunk)
                if n > room:
                    raise Rejected(f"the archive unpacks to more than {MAX_UNPACKED_BYTES >> 20} MiB "
                                   f"(stopped in {shown('/'.join(parts))})",
                                   "submit only the lab's kernel files (no build folders, profiles or data)")
                if n > MAX_FILE_BYTES:
                    kept = False
                    break
                out.write(chunk)
        if not kept:
            os.unlink(parts[-1], dir_fd=fd)
        return n, kept
    finally:
        os.close(fd)
