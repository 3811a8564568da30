"""The one archive format between an autograder and the GPU host: a gzip'd tar of
LAB/FILE members, the submission's kernel files and nothing else.

The host reads it as hostile (unpack): a size limit on what it reads, on what it
unpacks and on the number of files; every member a regular file named LAB/FILE,
two plain path components (no absolute path, no "..", no hidden name), the lab
one of the assignment's and the file one of that lab's student_files
(tools/grading.toml); no links, devices, fifos or folders. The first bad member
refuses the whole archive, naming it; nothing is written before every member
has been read and checked.
"""
import io
import re
import tarfile
import zlib
from pathlib import Path

LAB_NAME = re.compile(r"[0-9][0-9]_[a-z0-9_]+")
FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class ArchiveError(Exception):
    """The archive is refused; the message names the member and the rule."""


def pack(folder, files):
    """A gzip'd tar of `files` (paths relative to `folder`, as LAB/FILE), bytes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in files:
            data = (Path(folder) / rel).read_bytes()
            info = tarfile.TarInfo(str(rel))
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def read_limited(stream, limit):
    """At most `limit` bytes of `stream`; ArchiveError if there is more."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise ArchiveError(f"the archive is larger than {limit} bytes (the limit is max_archive_kib in [bridge] of "
                           f"tools/grading.toml): send only the labs' kernel files")
    if not data:
        raise ArchiveError("no archive on standard input (send the submission as a .tar.gz: bridge.py submit does)")
    return data


# What a tar adds around its files: a 512-byte header per member (and for a long
# name a PAX header, two blocks more), each file padded to 512 bytes, the
# end-of-archive blocks padded to a 10240-byte record.
TAR_BYTES_PER_FILE = 4 * 512
TAR_BYTES_FIXED = 2 * 10240


def gunzip_limited(data, limit):
    """The gzip stream `data` decompressed, or ArchiveError once it passes `limit`
    bytes: a megabyte of zeros compresses a thousandfold, and tarfile would read a
    header of any declared size (a PAX record, a GNU long name) whole into memory
    before any check of ours sees it."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as e:
        raise ArchiveError(f"not a readable .tar.gz ({e})") from None
    if len(out) > limit or d.unconsumed_tail:
        raise ArchiveError(f"the archive unpacks to more than {limit} bytes of tar (max_unpacked_kib and max_files "
                           f"in [bridge] of tools/grading.toml): send only the labs' kernel files")
    if not d.eof:
        raise ArchiveError("not a readable .tar.gz (the gzip stream is cut short)")
    return out


def members(data, allowed, max_files, max_bytes):
    """{LAB/FILE: bytes} of an archive, every member checked; `allowed` is
    {lab: [student files]}. ArchiveError on the first bad member."""
    found, total = {}, 0
    tar_bytes = gunzip_limited(data, max_bytes + max_files * TAR_BYTES_PER_FILE + TAR_BYTES_FIXED)
    try:
        with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tar:
            for m in tar:
                name = m.name
                if not m.isreg():
                    kind = ("a symbolic link" if m.issym() else "a hard link" if m.islnk() else "a folder" if m.isdir()
                            else "a device file" if m.isdev() else "a fifo" if m.isfifo() else "not a regular file")
                    raise ArchiveError(f"member {name!r} is {kind}: only regular files LAB/FILE are accepted")
                if name.startswith("/"):
                    raise ArchiveError(f"member {name!r} is an absolute path: members are LAB/FILE")
                parts = name.split("/")
                if ".." in parts or "." in parts:
                    raise ArchiveError(f"member {name!r} leaves its folder ('..' or '.'): members are LAB/FILE")
                if len(parts) != 2 or not LAB_NAME.fullmatch(parts[0]) or not FILE_NAME.fullmatch(parts[1]):
                    raise ArchiveError(f"member {name!r} is not LAB/FILE (a lab folder such as 04_reduction, then a "
                                       f"file name of letters, digits, '_', '.', '-')")
                lab, file = parts
                if lab not in allowed:
                    raise ArchiveError(f"member {name!r}: lab {lab} is not part of this assignment "
                                       f"(its labs: {', '.join(sorted(allowed))})")
                if file not in allowed[lab]:
                    raise ArchiveError(f"member {name!r}: {file} is not one of {lab}'s kernel files "
                                       f"({', '.join(allowed[lab]) or 'none'})")
                if name in found:
                    raise ArchiveError(f"member {name!r} appears twice")
                if len(found) + 1 > max_files:
                    raise ArchiveError(f"more than {max_files} files (max_files in [bridge] of tools/grading.toml)")
                total += m.size
                if total > max_bytes:
                    raise ArchiveError(f"the files unpack to more than {max_bytes} bytes "
                                       f"(max_unpacked_kib in [bridge] of tools/grading.toml)")
                f = tar.extractfile(m)
                content = f.read(m.size + 1) if f else b""
                if len(content) != m.size:
                    raise ArchiveError(f"member {name!r}: its size does not match its header")
                found[name] = content
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise ArchiveError(f"not a readable .tar.gz ({e})") from None
    if not found:
        raise ArchiveError("the archive holds no file")
    return found


def unpack(data, dest, allowed, max_files, max_bytes):
    """Checks every member (members()), then writes them under dest/LAB/FILE.
    Returns the labs written, sorted."""
    found = members(data, allowed, max_files, max_bytes)
    dest = Path(dest)
    for name, content in found.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return sorted({name.split("/")[0] for name in found})
