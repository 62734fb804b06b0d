"""scripts/check_sass_waits.py, the kernels' SASS check (ctest kernels.sass_waits, which needs
cuobjdump), on listings in both disassemblers' forms. The instruction lines are nvcc 13.0's
sm_90a code for fourfold's kernels (session 42, read with nvdisasm): the FP8 GEMV's per-warp
SwiGLU of session 41 with its [gate | up] loads hoisted above the wait, the MoE block's weights
streamed before it, the attention's *pos hint, the column-stationary epilogue's cp.async."""
import os
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "check_sass_waits.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import check_sass_waits as check  # noqa: E402

HOISTED = """
	code for sm_90a
		Function : _ZN8fourfold7kernels11gemv_fp8_csILi3EEEv
	.headerflags	@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                       /* 0x00000a00ff017b82 */
                                                                                 /* 0x000fe40000000800 */
        /*00c0*/                   PREEXIT ;
        /*0ae0*/              @!P1 LDG.E.128.CONSTANT R16, [R20.64] ;
        /*0b20*/              @!P1 LDG.E.128.CONSTANT R48, [R78.64+0x10] ;
        /*0c00*/                   ACQBULK ;
        /*0c10*/                   LDG.E.128.CONSTANT R4, [R2.64] ;
        /*0c20*/                   EXIT ;
		Function : _ZN8fourfold7kernels7gemv_csILi0EEEv
        /*0100*/              @P2 LDGSTS.E.ZFILL [R7], [R8.64], P3 ;
        /*0200*/                   ACQBULK ;
        /*0300*/                   LDGSTS.E [R7+0x800], [R10.64] ;
"""
LEGAL = """
  .text._ZN8fourfold7kernels14moe_one_launchIffLi1EEEv:
        /*01b0*/                   LDG.E.NA.128.CONSTANT R16, [R2.64] ;
        /*0270*/                   LDG.E.NA.128.CONSTANT R8, [R8.64] ;
        /*0300*/                   ACQBULK ;
        /*0310*/                   LDG.E.128.CONSTANT R12, [R12.64] ;
  .text._ZN8fourfold7kernels16attention_kernelIfLi128EEEv:
        /*05d0*/                   LDG.E.64 R6, [R4.64] ;
        /*0600*/                   ACQBULK ;
  .text._ZN8fourfold7kernels7no_waitEv:
        /*0000*/                   LDG.E.128.CONSTANT R4, [R2.64] ;
"""


def test_a_load_hoisted_above_the_wait_is_found_in_cuobjdump_form():
    found, waiting = check.findings(HOISTED)
    assert waiting == 2
    assert [name for name, _ in found] == ["_ZN8fourfold7kernels11gemv_fp8_csILi3EEEv"] * 2 + [
        "_ZN8fourfold7kernels7gemv_csILi0EEEv"]  # a cp.async before the wait, not the one after
    assert found[0][1].startswith("@!P1 LDG.E.128.CONSTANT R16")
    assert found[2][1].startswith("@P2 LDGSTS.E.ZFILL")


def test_weights_streamed_early_and_coherent_hints_are_allowed_in_nvdisasm_form():
    found, waiting = check.findings(LEGAL)
    assert found == []
    assert waiting == 2  # the function without a wait is not looked at


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def test_exit_codes(tmp_path):
    bad, good, none = tmp_path / "bad.sass", tmp_path / "good.sass", tmp_path / "none.sass"
    bad.write_text(HOISTED)
    good.write_text(LEGAL)
    none.write_text("  .text._Z1fv:\n        /*0000*/ EXIT ;\n")
    r = run("--sass", str(bad), str(good))
    assert r.returncode == 1 and r.stdout.count("loads before griddepcontrol.wait") == 3, r.stdout
    assert run("--sass", str(good)).returncode == 0
    assert run("--sass", str(none)).returncode == 1  # nothing waits: not a sm_90 build
    skipped = run("--cuobjdump", "FOURFOLD_CUOBJDUMP-NOTFOUND", "lib.a")
    assert skipped.returncode == 77 and "skipped" in skipped.stdout
    assert run("--cuobjdump", "/bin/false", "lib.a").returncode == 2
    assert run().returncode == 2
