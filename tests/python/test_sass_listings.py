"""scripts/sass_listings.py's listing read straight from cubins (cubin_listing, object_cubins):
what kernels.sass_rounds runs on where the toolkit has no cuobjdump (this CI). Two parts: the
containers (an ar archive of host objects whose .nv_fatbin holds the cubin) on an image built
here byte by byte, and the opcodes and control words on nvcc's own code for a copy kernel."""
import os
import shutil
import struct
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_sass_rounds  # noqa: E402
import sass_listings  # noqa: E402

# sm_90a words as cuobjdump printed them for pad_flat (session 56): a 2-byte load setting write
# barrier 2, and a store whose control word waits on barrier 2 (mask bit 2)
LDG = (0x0000000402049981, 0x0002A2000C1E1500)
STG = (0x0000000416007986, 0x0041E2000C101904)
OTHER = (0x0000541004047816, 0x000FD60000000023)  # a PRMT


def elf(sections, machine):
    """A 64-bit little-endian ELF image of the given (name, bytes) sections."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _ in sections) + b".shstrtab\0"
    body, offsets = b"", []
    for _, data in sections:
        offsets.append(0x40 + len(body))
        body += data + b"\0" * (-len(data) % 8)
    names_at = 0x40 + len(body)
    body += names + b"\0" * (-len(names) % 8)
    shoff = 0x40 + len(body)
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header += struct.pack("<HHIQQQIHHHHHH", 1, machine, 1, 0, 0, shoff, 0, 0x40, 0, 0, 64,
                          len(sections) + 2, len(sections) + 1)
    table = [b"\0" * 64]
    at = 1
    for (name, data), offset in zip(sections, offsets):
        table.append(struct.pack("<IIQQQQIIQQ", at, 1, 6, 0, offset, len(data), 0, 0, 16, 0))
        at += len(name) + 1
    table.append(struct.pack("<IIQQQQIIQQ", at, 3, 0, 0, names_at, len(names), 0, 0, 1, 0))
    return header + body + b"".join(table)


def fatbin(cubin):
    entry = struct.pack("<HHIQ", 2, 0, 16, len(cubin)) + cubin
    return struct.pack("<IHHQ", sass_listings.FATBIN_MAGIC, 1, 16, len(entry)) + entry


def archive(*members):
    out = b"!<arch>\n"
    for i, data in enumerate(members):
        name = f"m{i}.o/".ljust(16).encode()
        out += name + "0".ljust(12).encode() + "0".ljust(6).encode() * 2
        out += "644".ljust(8).encode() + str(len(data)).ljust(10).encode() + b"`\n"
        out += data + (b"\n" if len(data) % 2 else b"")
    return out


def code(*instructions):
    return b"".join(struct.pack("<QQ", low, high) for low, high in instructions)


def test_an_archive_of_host_objects_gives_each_cubin_as_cuobjdump_lays_it_out():
    cubin = elf([(".text.pad_flat_k", code(LDG, OTHER, LDG, STG))], sass_listings.EM_CUDA)
    host = elf([(".text", b"\xc3" * 16), (".nv_fatbin", fatbin(cubin))], 62)  # x86-64
    plain = elf([(".text", b"\xc3" * 16)], 62)  # a host object without device code
    found = list(sass_listings.object_cubins(archive(plain, host)))
    assert found == [cubin]
    listing = sass_listings.cubin_listing(cubin)
    [(name, body)] = list(check_sass_rounds.functions(listing))
    assert name == "pad_flat_k"
    assert [(a, t.split()[0], barrier, wait) for a, t, barrier, wait in body] == [
        ("0000", "LDG", 2, 0), ("0010", "PRMT", 7, 0), ("0020", "LDG", 2, 0), ("0030", "STG", 7, 4)]
    # the PRMT waits on nothing; a PRMT waiting on the first load before the second is found
    waiting = (OTHER[0], OTHER[1] | (4 << 52))
    serial = elf([(".text.pad_flat_k", code(LDG, waiting, LDG, STG))], sass_listings.EM_CUDA)
    found, looked = check_sass_rounds.findings(sass_listings.cubin_listing(serial))
    assert looked == 1 and [(a, t.split()[0]) for _, a, t in found] == [("0010", "PRMT")]


def test_a_file_without_cubins_gives_none():
    assert sass_listings.read_cubins([os.path.join(ROOT, "README.md")]) is None
    assert sass_listings.read_cubins([os.path.join(ROOT, "no-such-file")]) is None


NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)


@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine")
def test_nvccs_copy_kernel_reads_as_a_load_then_a_store_that_waits_on_it(tmp_path):
    source = tmp_path / "copy.cu"
    source.write_text("__global__ void pad_flat_copy(const float* x, float* y) {\n"
                      "    y[threadIdx.x] = x[threadIdx.x] * 2.f;\n}\n")
    out = tmp_path / "copy.o"
    subprocess.run([NVCC, "-arch=sm_90a", "-O3", "-c", str(source), "-o", str(out)], check=True)
    [(name, listing)] = sass_listings.read_cubins([str(out)])
    [(function, body)] = [f for f in check_sass_rounds.functions(listing) if "pad_flat" in f[0]]
    ops = [t.split()[0] for _, t, _, _ in body]
    assert ops.count("LDG") == 1 and ops.count("STG") == 1 and "EXIT" in ops
    load, store = ops.index("LDG"), ops.index("STG")
    assert load < store
    barrier = body[load][2]
    assert barrier != check_sass_rounds.NO_BARRIER
    # the store's operand comes from the load: something between waits on the load's barrier
    assert any(wait & (1 << barrier) for _, _, _, wait in body[load + 1:store + 1])


import sass_loops  # noqa: E402


def test_branch_targets_read_as_cuobjdump_prints_them():
    # (address, first word, cuobjdump's target) from s56_d's listing of pad_flat (sm_90a)
    for address, low, target in [(0x36A0, 0xFFFFFFE8001C8947, 0x1F20),  # the main loop's end
                                 (0x0B00, 0xFFFFFFFC005C8947, 0x0880),
                                 (0x0150, 0x0000001400D40947, 0x18B0),  # forward
                                 (0x3960, 0xFFFFFFFC00FC7947, 0x3960)]:  # the final self-branch
        assert sass_listings.branch_target(address, low) == target


def bra(address, target):
    words = (target - address - 16) // 4
    return 0x947 | ((words & 0xFF) << 16) | (((words >> 8) & ((1 << 30) - 1)) << 34), 0


def test_the_loop_budget_leaves_out_the_bodies_its_forward_branches_skip():
    nop = (0x918, 0)
    # 0x00 LDG; 0x10 BRA -> 0x40 (skips two); 0x20, 0x30 the rare body; 0x40 STG; 0x50 back to 0
    body = [LDG, bra(0x10, 0x40), nop, nop, STG, bra(0x50, 0x00), (0x94D, 0)]
    start, end, size, hot, counts = sass_loops.loop_budget(code(*body))
    assert (start, end, size, hot) == (0x00, 0x50, 6, 4)
    assert counts[sass_loops.LDG] == 1 and counts[sass_loops.STG] == 1
    assert sass_loops.loop_budget(code(LDG, STG, (0x94D, 0))) is None  # no loop
