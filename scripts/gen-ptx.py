#!/usr/bin/env python3
"""Compiles the CUDA kernels of crates/backend-cuda/kernels/*.cu to the PTX committed beside them.

No CUDA toolkit is needed: NVRTC comes from NVIDIA's PyPI wheel (nvidia-cuda-nvrtc-cu12), driven
through ctypes. The version is pinned to CUDA 12.0's NVRTC, which writes PTX ISA 8.0: every
driver the CUDA backend accepts (CUDA 12.0 or newer, see driver.rs) can JIT it; a newer NVRTC
would write an ISA that a 12.0 driver refuses. The virtual architecture is compute_70 (Volta),
the oldest CUDA 12 supports fully; the driver compiles it for the GPU it runs on.

    python3 scripts/gen-ptx.py                  # downloads the pinned wheel (23 MB) to a temp dir
    python3 scripts/gen-ptx.py --nvrtc DIR      # or uses libnvrtc.so.12 from DIR
    python3 scripts/gen-ptx.py --check          # fails if a committed .ptx differs from its .cu
"""

import argparse
import ctypes
import pathlib
import subprocess
import sys
import tempfile
import zipfile

NVRTC_WHEEL = "nvidia-cuda-nvrtc-cu12==12.0.76"
ARCH = "compute_70"
ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "crates" / "backend-cuda" / "kernels"


def find_nvrtc(tmp: pathlib.Path, given: str | None) -> pathlib.Path:
    if given:
        return pathlib.Path(given) / "libnvrtc.so.12"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(tmp), NVRTC_WHEEL],
        check=True,
    )
    (wheel,) = tmp.glob("*.whl")
    zipfile.ZipFile(wheel).extractall(tmp)
    return tmp / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"


def compile_ptx(lib: ctypes.CDLL, cu: pathlib.Path) -> str:
    def check(status: int, call: str, prog=None) -> None:
        if status == 0:
            return
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        msg = lib.nvrtcGetErrorString(status).decode()
        log = ""
        if prog is not None:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode()
        sys.exit(f"{cu.name}: {call}: {msg}\n{log}")

    prog = ctypes.c_void_p()
    src = cu.read_bytes()
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), src, cu.name.encode(), 0, None, None),
          "nvrtcCreateProgram")
    opts = [f"--gpu-architecture={ARCH}".encode(), b"--std=c++14"]
    argv = (ctypes.c_char_p * len(opts))(*opts)
    check(lib.nvrtcCompileProgram(prog, len(opts), argv), "nvrtcCompileProgram", prog)
    size = ctypes.c_size_t()
    check(lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
    buf = ctypes.create_string_buffer(size.value)
    check(lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    header = (f"// Generated from {cu.name} by scripts/gen-ptx.py ({NVRTC_WHEEL}, {ARCH}); "
              "do not edit.\n")
    return header + buf.value.decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvrtc", help="directory holding libnvrtc.so.12 (12.0)")
    ap.add_argument("--check", action="store_true", help="compare instead of writing")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lib = ctypes.CDLL(str(find_nvrtc(pathlib.Path(tmp), args.nvrtc)))
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        if (major.value, minor.value) != (12, 0):
            sys.exit(f"NVRTC {major.value}.{minor.value}: 12.0 wanted (PTX ISA 8.0)")
        stale = []
        for cu in sorted(KERNELS.glob("*.cu")):
            ptx = compile_ptx(lib, cu)
            out = cu.with_suffix(".ptx")
            if args.check:
                if not out.exists() or out.read_text() != ptx:
                    stale.append(out.name)
            else:
                out.write_text(ptx)
                print(f"wrote {out.relative_to(ROOT)}")
        if stale:
            sys.exit(f"stale PTX (run scripts/gen-ptx.py): {', '.join(stale)}")


if __name__ == "__main__":
    main()
