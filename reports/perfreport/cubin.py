"""Per-kernel facts from a CUDA cubin (an ELF file), without cuobjdump:
the code size of each kernel (its .text section; 16 bytes per SASS
instruction on sm_90), its register count (the EIATTR_REGCOUNT entry of
.nv.info) and its static shared memory (its .nv.shared section). Decode
time on the H200 followed the code a kernel carries, not only what it runs
(docs/performance_log.md), and this machine has no cuobjdump or nvdisasm:
`nvcc -cubin` and this reader give the sizes here."""
import struct

_EIATTR_REGCOUNT = 0x2F
_EIFMT_SVAL = 4  # entries with a payload of `size` bytes; the others are 4 bytes in all
_SASS_BYTES = 16


class CubinError(ValueError):
    pass


def _sections(data):
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise CubinError("not a 64-bit ELF file (a cubin from nvcc -cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = secs[shstrndx][4]
    return [(_cstr(data, names_at + s[0]), s) for s in secs]


def _cstr(data, at):
    return data[at:data.index(b"\0", at)].decode()


def _symbol_names(data, sections):
    for _, s in sections:
        if s[1] == 2:  # SHT_SYMTAB
            strtab = sections[s[6]][1][4]
            return [_cstr(data, strtab + struct.unpack_from("<I", data, s[4] + j * 24)[0])
                    for j in range(s[5] // 24)]
    return []


def kernel_facts(data):
    """{mangled kernel name: {"code_bytes", "instructions", "registers", "shared_bytes"}}"""
    sections = _sections(data)
    symbols = _symbol_names(data, sections)
    facts = {}
    for name, s in sections:
        if name.startswith(".text."):
            facts[name[6:]] = {"code_bytes": s[5], "instructions": s[5] // _SASS_BYTES,
                               "registers": None, "shared_bytes": 0}
    for name, s in sections:
        if name.startswith(".nv.shared.") and name[11:] in facts:
            facts[name[11:]]["shared_bytes"] = s[5]
        if name == ".nv.info":
            at, end = s[4], s[4] + s[5]
            while at + 4 <= end:
                fmt, attr, size = struct.unpack_from("<BBH", data, at)
                if fmt == _EIFMT_SVAL:
                    if attr == _EIATTR_REGCOUNT and size >= 8:
                        index, value = struct.unpack_from("<II", data, at + 4)
                        if index < len(symbols) and symbols[index] in facts:
                            facts[symbols[index]]["registers"] = value
                    at += 4 + size
                else:
                    at += 4
    return facts
