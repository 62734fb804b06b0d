"""scripts/check_sass_rounds.py, the pad's SASS check (ctest kernels.sass_rounds: cuobjdump's
listing, or the cubins read directly without it). The instruction lines and their control words are nvcc 13.0's sm_90a code for
pad_flat<bf16, 2, contiguous, 4> (session 56, cuobjdump -sass on the H100's build): 760e68c's
round, whose PRMT waited for its unit's loads before the next unit's were issued, and the round
as it should be, every load issued before the first wait on one."""
import os
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "check_sass_rounds.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_sass_rounds as check  # noqa: E402

LOADS_0 = """
        /*25e0*/              @!P1 LDG.E.U16 R4, desc[UR4][R2.64] ;                              /* 0x0000000402049981 */
                                                                                                 /* 0x000ea8000c1e1500 */
        /*25f0*/              @!P0 LDG.E.U16 R35, desc[UR4][R2.64+0x2] ;                         /* 0x0000020402238981 */
                                                                                                 /* 0x0002a2000c1e1500 */
"""
PACK_0 = """
        /*2720*/                   PRMT R4, R4, 0x5410, R35 ;                                    /* 0x0000541004047816 */
                                                                                                 /* 0x004fd60000000023 */
"""
STEP = """
        /*2730*/              @!P1 BRA 0x2a80 ;                                                  /* 0x0000000000d09947 */
                                                                                                 /* 0x000fea0003800000 */
"""
LOADS_1 = """
        /*2b30*/              @!P1 LDG.E.U16 R35, desc[UR4][R2.64] ;                             /* 0x0000000402239981 */
                                                                                                 /* 0x000ea8000c1e1500 */
        /*2b40*/              @!P0 LDG.E.U16 R22, desc[UR4][R2.64+0x2] ;                         /* 0x0000020402168981 */
                                                                                                 /* 0x000ea2000c1e1500 */
"""
PACK_1 = """
        /*2c20*/                   PRMT R2, R35, 0x5410, R22 ;                                   /* 0x0000541023027816 */
                                                                                                 /* 0x004fd20000000016 */
"""
STORE = """
        /*39b0*/                   STG.E desc[UR4][R22.64], R4 ;                                 /* 0x0000000416007986 */
                                                                                                 /* 0x0001e2000c101904 */
"""
PAD = "\t\tFunction : _ZN8fourfold7kernels8pad_flatI13__nv_bfloat16Li2ELb1ELi4EEEvv\n"
OTHER = "\t\tFunction : _ZN8fourfold7kernels7softmaxIfEEvv\n"


def test_a_pack_waiting_inside_its_round_is_found():
    serial = PAD + LOADS_0 + PACK_0 + STEP + LOADS_1 + PACK_1 + STORE
    found, looked = check.findings(serial)
    assert looked == 1
    # the first unit's pack waits with the second unit's loads still to come; the last one's
    # pack comes after the round's last load
    assert [(address, text.split()[0]) for _, address, text in found] == [("2720", "PRMT")]


def test_every_load_before_the_first_wait_is_clean_and_rounds_end_at_stores():
    in_flight = PAD + LOADS_0 + STEP + LOADS_1 + PACK_0 + PACK_1 + STORE
    assert check.findings(in_flight) == ([], 1)
    # a wait after a store waits on the round before: the next round's loads are another piece
    two_rounds = PAD + LOADS_0 + STORE + PACK_0 + LOADS_1 + STORE
    assert check.findings(two_rounds) == ([], 1)


def test_only_the_named_functions_are_looked_at():
    serial = OTHER + LOADS_0 + PACK_0 + LOADS_1 + STORE
    assert check.findings(serial) == ([], 0)
    assert len(check.findings(serial, "softmax")[0]) == 1


def test_the_command_line_says_what_it_found_and_skips_without_cuobjdump(tmp_path):
    bad = tmp_path / "bad.sass"
    bad.write_text(PAD + LOADS_0 + PACK_0 + LOADS_1 + STORE)
    run = subprocess.run([sys.executable, SCRIPT, "--sass", str(bad)], capture_output=True,
                         text=True)
    assert run.returncode == 1
    assert "/*2720*/ 'PRMT R4, R4, 0x5410, R35' waits on a load of its round" in run.stdout
    # a listing without control words (nvdisasm's plain form) is not silently passed
    plain = tmp_path / "plain.sass"
    plain.write_text(PAD + "        /*25e0*/              @!P1 LDG.E.U16 R4, desc[UR4][R2.64] ;\n")
    run = subprocess.run([sys.executable, SCRIPT, "--sass", str(plain)], capture_output=True,
                         text=True)
    assert run.returncode == 1
    assert "no function matching 'pad_flat' with control words" in run.stderr
    run = subprocess.run([sys.executable, SCRIPT, "--cuobjdump", "FOURFOLD_CUOBJDUMP-NOTFOUND",
                          "x.a"], capture_output=True, text=True)
    assert run.returncode == 77
    run = subprocess.run([sys.executable, SCRIPT, "--bogus"], capture_output=True, text=True)
    assert run.returncode == 2
