# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private: a wheel's METADATA read out of its zip in ranges, for matrix_refresh (which re-exports these names).

``read(offset, size)`` gives bytes of the wheel (HTTP Range requests, or a recorded file in the unit tests).
Nothing here opens a file or a connection. Standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import struct
import zlib

# Bounds on what is read from a wheel.
MAX_CENTRAL_DIRECTORY = 64 * 1024 * 1024
MAX_METADATA = 4 * 1024 * 1024
MAX_COMMENT = 0xFFFF

_EOCD = 0x06054B50
_ZIP64_LOCATOR = 0x07064B50
_ZIP64_EOCD = 0x06064B50
_CENTRAL = 0x02014B50
_LOCAL = 0x04034B50


class RefreshError(ValueError):
    """Something in the index or a wheel that the matrix cannot be made from."""


# --- the wheel: a zip read in ranges ----------------------------------------

def tail_length(size):
    """How many bytes at the end of a zip of size bytes hold its end of central directory, comment included."""
    return min(size, 22 + MAX_COMMENT + 20)


def end_of_central_directory(tail, size):
    """(offset, size, count) of the central directory, from the last tail bytes of a zip of size bytes.

    Finds the end record whose comment runs exactly to the end of the file (a signature inside the
    comment is not taken), and its Zip64 record where the locator before it points to one inside tail;
    a Zip64 record outside tail raises RefreshError naming its offset.
    """
    start = size - len(tail)
    position = len(tail) - 22
    while position >= 0:
        if struct.unpack_from("<I", tail, position)[0] == _EOCD:
            comment = struct.unpack_from("<H", tail, position + 20)[0]
            if position + 22 + comment == len(tail):
                break
        position -= 1
    else:
        raise RefreshError("no end of central directory record in the last %d bytes: not a zip" % len(tail))
    count = struct.unpack_from("<H", tail, position + 10)[0]
    cd_size, cd_offset = struct.unpack_from("<II", tail, position + 12)
    locator = position - 20
    if locator >= 0 and struct.unpack_from("<I", tail, locator)[0] == _ZIP64_LOCATOR:
        record = struct.unpack_from("<Q", tail, locator + 8)[0] - start
        if record < 0 or record + 56 > len(tail):
            raise RefreshError("the Zip64 end record at %d is outside the bytes read" % (record + start))
        if struct.unpack_from("<I", tail, record)[0] != _ZIP64_EOCD:
            raise RefreshError("no Zip64 end record where the locator points (%d)" % (record + start))
        count, cd_size, cd_offset = struct.unpack_from("<QQQ", tail, record + 32)
    if cd_offset + cd_size > size:
        raise RefreshError("the central directory (%d bytes at %d) runs past the end of the file (%d bytes)"
                           % (cd_size, cd_offset, size))
    return cd_offset, cd_size, count


def _zip64_extra(extra, usize, csize, offset):
    position = 0
    while position + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, position)
        body = extra[position + 4:position + 4 + length]
        position += 4 + length
        if tag != 1:
            continue
        fields = [usize, csize, offset]
        read = 0
        for index, value in enumerate(fields):
            if value == 0xFFFFFFFF:
                if read + 8 > len(body):
                    raise RefreshError("a Zip64 extra field is too short")
                fields[index] = struct.unpack_from("<Q", body, read)[0]
                read += 8
        return tuple(fields)
    return usize, csize, offset


def central_directory(data, count=None):
    """The entries of a central directory: dicts of name, method, flags, crc, size, compressed, offset."""
    entries = []
    position = 0
    while position < len(data):
        if position + 46 > len(data) or struct.unpack_from("<I", data, position)[0] != _CENTRAL:
            raise RefreshError("central directory entry %d at byte %d is not one" % (len(entries), position))
        (flags, method, crc, csize, usize, name_length, extra_length, comment_length,
         offset) = struct.unpack_from("<8xHH4xIIIHHH8xI", data, position)
        end = position + 46 + name_length + extra_length + comment_length
        if end > len(data):
            raise RefreshError("central directory entry %d runs past the directory" % len(entries))
        raw = data[position + 46:position + 46 + name_length]
        name = raw.decode("utf-8" if flags & 0x800 else "cp437")
        extra = data[position + 46 + name_length:position + 46 + name_length + extra_length]
        usize, csize, offset = _zip64_extra(extra, usize, csize, offset)
        entries.append({"name": name, "method": method, "flags": flags, "crc": crc, "size": usize,
                        "compressed": csize, "offset": offset})
        position = end
    if count is not None and count != len(entries):
        raise RefreshError("the central directory holds %d entries, its end record says %d" % (len(entries), count))
    return entries


def member(read, entry, limit=MAX_METADATA):
    """The bytes of one member (an entry of central_directory), read with read(offset, length), checked by CRC."""
    if entry["flags"] & 0x1:
        raise RefreshError("%s is encrypted" % entry["name"])
    if entry["method"] not in (0, 8):
        raise RefreshError("%s: compression method %d (only stored and deflate are read)" % (entry["name"], entry["method"]))
    if entry["size"] > limit or entry["compressed"] > limit:
        raise RefreshError("%s is %d bytes, more than %d" % (entry["name"], max(entry["size"], entry["compressed"]), limit))
    guess = 30 + len(entry["name"].encode("utf-8")) + 256
    head = read(entry["offset"], guess + entry["compressed"])
    if len(head) < 30 or struct.unpack_from("<I", head, 0)[0] != _LOCAL:
        raise RefreshError("no local header for %s at %d" % (entry["name"], entry["offset"]))
    name_length, extra_length = struct.unpack_from("<HH", head, 26)
    start = 30 + name_length + extra_length
    data = head[start:start + entry["compressed"]]
    if len(data) < entry["compressed"]:
        data += read(entry["offset"] + start + len(data), entry["compressed"] - len(data))
    if entry["method"] == 8:
        inflater = zlib.decompressobj(-15)
        data = inflater.decompress(data, limit + 1)
        if len(data) > limit or inflater.unconsumed_tail:
            raise RefreshError("%s inflates to more than %d bytes" % (entry["name"], limit))
    if len(data) != entry["size"] or (zlib.crc32(data) & 0xFFFFFFFF) != entry["crc"]:
        raise RefreshError("%s: size or CRC differs from the central directory" % entry["name"])
    return data


def metadata_entry(entries):
    """The entry of the wheel's <name>-<version>.dist-info/METADATA (exactly one, at the top)."""
    found = [entry for entry in entries if re.fullmatch(r"[^/]+\.dist-info/METADATA", entry["name"])]
    if len(found) != 1:
        raise RefreshError("the wheel holds %d top-level .dist-info/METADATA files, not one" % len(found))
    return found[0]


def _bounded(read, size):
    def bounded(offset, length):
        if offset < 0 or offset >= size:
            raise RefreshError("a read at %d is outside the file (%d bytes)" % (offset, size))
        return read(offset, min(length, size - offset))
    return bounded


def read_wheel_directory(read, size):
    """The central directory entries of a zip of size bytes (central_directory's dicts), read with
    read(offset, length) -> bytes: the tail, then the directory when the tail does not hold it. Two reads at most,
    whatever the size of the members: a 300 MB wheel's file list costs its directory's bytes."""
    tail_start = size - tail_length(size)
    tail = read(tail_start, size - tail_start)
    cd_offset, cd_size, count = end_of_central_directory(tail, size)
    if cd_size > MAX_CENTRAL_DIRECTORY:
        raise RefreshError("the central directory is %d bytes, more than %d" % (cd_size, MAX_CENTRAL_DIRECTORY))
    if cd_offset >= tail_start:
        directory = tail[cd_offset - tail_start:cd_offset - tail_start + cd_size]
    else:
        directory = _bounded(read, size)(cd_offset, cd_size)
    return central_directory(directory, count)


def read_wheel_metadata(read, size, entries=None):
    """The METADATA text of a wheel of size bytes, read with read(offset, length) -> bytes (never past the end):
    the central directory (read_wheel_directory, unless its entries are given), then the member (twice where its
    local extra field is long)."""
    entry = metadata_entry(entries if entries is not None else read_wheel_directory(read, size))
    try:
        return member(_bounded(read, size), entry).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefreshError("%s is not UTF-8: %s" % (entry["name"], exc))
