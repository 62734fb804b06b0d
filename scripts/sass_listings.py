"""What the SASS checks (check_sass_waits.py, check_sass_rounds.py) share: their listings from
cuobjdump or from files, and an instruction's opcode. Without cuobjdump (this CI's nvcc-only
install), a listing read straight from the cubins inside the built objects (cubin_listing): each
instruction's address and control word, and a name for the few opcodes a check needs."""
import struct
import subprocess
import sys

SKIP = 77  # ctest's skip: no cuobjdump on this machine


def opcode(instruction):
    """The opcode with its modifiers, past any predicate (@P0, @!PT)."""
    parts = instruction.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


# sm_90 opcodes (the low 12 bits of an instruction's first 64-bit word) that cubin_listing names;
# any other instruction is OPxxx. Checked against cuobjdump -sass over the 34 pad_flat functions
# of 28c4d73's sm_90a build (session 57: 43,176 instructions, the same addresses, loads, stores
# and control words).
CUBIN_OPCODES = {0x981: "LDG", 0x986: "STG", 0x816: "PRMT", 0x947: "BRA", 0x94D: "EXIT",
                 0xB82: "LDC"}
OPCODE_OF = {name: op for op, name in CUBIN_OPCODES.items()}
EM_CUDA = 190  # an ELF's e_machine for a cubin
FATBIN_MAGIC = 0xBA55ED50


def elf_sections(data):
    """(name, bytes) of each section of a 64-bit little-endian ELF image."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    table = headers[names][4]
    for name, _, _, _, offset, size in headers:
        end = data.index(b"\0", table + name)
        yield data[table + name:end].decode(errors="replace"), data[offset:offset + size]


def is_elf(data):
    return len(data) > 0x40 and data[:4] == b"\x7fELF" and data[4] == 2  # 64-bit


def fatbin_cubins(blob):
    """The uncompressed cubins (ELF entries) of a .nv_fatbin section: its fat binaries one after
    another, each a header (magic, version, header size, size) and entries (kind 2: ELF; header
    size, payload size). A compressed entry is passed over."""
    pos = 0
    while pos + 16 <= len(blob):
        magic, _, header, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            break
        entry, end = pos + header, pos + header + size
        while entry + 16 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            body = blob[entry + entry_header:entry + entry_header + payload]
            if kind == 2 and is_elf(body):
                yield body
            entry += entry_header + payload
        pos = (end + 7) // 8 * 8


def object_cubins(data):
    """The cubins in an ar archive's members, a host object's .nv_fatbin, or a cubin itself."""
    if data[:8] == b"!<arch>\n":
        pos = 8
        while pos + 60 <= len(data):
            size = int(data[pos + 48:pos + 58].decode().strip() or 0)
            yield from object_cubins(data[pos + 60:pos + 60 + size])
            pos += 60 + size + (size & 1)
        return
    if not is_elf(data):
        return
    if struct.unpack_from("<H", data, 0x12)[0] == EM_CUDA:
        yield data
        return
    for name, body in elf_sections(data):
        if name == ".nv_fatbin":
            yield from fatbin_cubins(body)


def branch_target(address, low):
    """Where an sm_90 BRA at `address` (bytes) goes, from its first 64-bit word: the offset in
    4-byte words past the next instruction is bits 16-23 (low byte) and the signed bits 34-63
    (the rest). Checked on cuobjdump's BRA lines (forward, backward and to itself)."""
    upper = low >> 34
    if upper & (1 << 29):
        upper -= 1 << 30
    return address + 16 + 4 * (upper * 256 + ((low >> 16) & 0xFF))


def cubin_listing(cubin):
    """A listing in cuobjdump -sass's layout from a cubin's code (.text.<function>): a
    "Function :" line a function, then per 16-byte instruction its address, its name (an opcode
    of CUBIN_OPCODES, else OPxxx) and its two 64-bit words, the second (the control word) on the
    line below, as cuobjdump prints them."""
    lines = []
    for name, code in elf_sections(cubin):
        if not name.startswith(".text."):
            continue
        lines.append(f"\t\tFunction : {name[6:]}")
        for at in range(0, len(code) - 15, 16):
            low, high = struct.unpack_from("<QQ", code, at)
            op = CUBIN_OPCODES.get(low & 0xFFF, f"OP{low & 0xFFF:03x}")
            lines.append(f"        /*{at:04x}*/                   {op} ;  /* 0x{low:016x} */")
            lines.append(f"                                                 /* 0x{high:016x} */")
    return "\n".join(lines) + "\n"


def read_cubins(files):
    """[(file, listing)] of every cubin in the files (cubin_listing), or None where none holds
    one."""
    listings = []
    for f in files:
        try:
            with open(f, "rb") as handle:
                data = handle.read()
        except OSError:
            continue  # (cuobjdump's absence is then the reason given)
        listings += [(f, cubin_listing(c)) for c in object_cubins(data)]
    return listings or None


def load(argv, check, usage, decode=False):
    """([(file, listing)], None) from `--cuobjdump PATH FILE...` or `--sass LISTING...`; or
    (None, exit code) having said why: 2 on bad usage, SKIP without cuobjdump. With `decode`,
    no cuobjdump reads the files' cubins instead (cubin_listing): for a check that needs only
    loads, stores and control words."""
    if len(argv) < 2 or argv[0] not in ("--cuobjdump", "--sass"):
        print(usage, file=sys.stderr)
        return None, 2
    listings = []
    if argv[0] == "--cuobjdump":
        tool, files = argv[1], argv[2:]
        if not tool or tool.endswith("NOTFOUND"):
            if decode and files:
                listings = read_cubins(files)
                if listings:
                    print(f"{check}: no cuobjdump; read {len(listings)} cubin(s) in "
                          f"{' '.join(files)} directly (loads, stores and control words)")
                    return listings, None
                print(f"skipped: no cuobjdump on this machine, and no uncompressed cubin in "
                      f"{' '.join(files)} to read instead")
                return None, SKIP
            print("skipped: no cuobjdump (the CUDA toolkit's disassembler) on this machine; "
                  "the check runs where it is (the H200's image)")
            return None, SKIP
        if not files:
            print(f"{check}: --cuobjdump PATH needs the files to disassemble", file=sys.stderr)
            return None, 2
        for f in files:
            run = subprocess.run([tool, "-sass", f], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{check}: {tool} -sass {f} failed: {run.stderr.strip()}", file=sys.stderr)
                return None, 2
            listings.append((f, run.stdout))
    else:
        for f in argv[1:]:
            with open(f, encoding="utf-8", errors="replace") as handle:
                listings.append((f, handle.read()))
    return listings, None
