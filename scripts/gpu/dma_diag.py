#!/usr/bin/env python3
"""DMA diagnostic (issue 4 model error): 2D host<->device copy speed by column bytes and host
pitch, alone and with the opposite direction busy, on cudaHostAlloc memory (what calibration
uses) and on malloc'd memory registered with cudaHostRegister (what user operands become).
Prints one line per configuration: GB/s alone and under duplex, per direction."""
import ctypes, glob, os, sys, statistics
import torch

def load_cudart():
    cands = []
    for base in [os.path.dirname(torch.__file__)] + sys.path:
        cands += glob.glob(os.path.join(base, "nvidia", "cuda_runtime", "lib", "libcudart.so*"))
        cands += glob.glob(os.path.join(base, "lib", "libcudart.so*"))
    cands += glob.glob("/usr/local/cuda*/lib64/libcudart.so*") + glob.glob("/usr/lib/x86_64-linux-gnu/libcudart.so*")
    for c in cands:
        try:
            return ctypes.CDLL(c), c
        except OSError:
            pass
    raise SystemExit("no libcudart")

rt, path = load_cudart()
torch.cuda.init()
print("cudart", path, "torch", torch.__version__, "gpu", torch.cuda.get_device_name(0))
H2D, D2H = 1, 2
rt.cudaMemcpy2DAsync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                 ctypes.c_size_t, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
rt.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
libc = ctypes.CDLL("libc.so.6")
libc.aligned_alloc.restype = ctypes.c_void_p
libc.aligned_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

HOST_BYTES = 1 << 30
TILE_BYTES = 64 << 20

def host_alloc():
    t = torch.empty(HOST_BYTES // 8, dtype=torch.float64, pin_memory=True)
    t.fill_(1.0)
    return t, t.data_ptr()

def host_register():
    p = libc.aligned_alloc(4096, HOST_BYTES)
    libc.memset(p, 1, HOST_BYTES)
    assert rt.cudaHostRegister(p, HOST_BYTES, 0) == 0
    return None, p

s_in, s_out = torch.cuda.Stream(), torch.cuda.Stream()
dev_in = torch.empty(TILE_BYTES // 8, dtype=torch.float64, device="cuda")
dev_out = torch.empty(TILE_BYTES // 8, dtype=torch.float64, device="cuda")

def copies(stream, kind, host, dev, col, pitch, reps):
    cols = min(TILE_BYTES // col, HOST_BYTES // pitch)
    for _ in range(reps):
        if kind == H2D:
            r = rt.cudaMemcpy2DAsync(dev, col, host, pitch, col, cols, H2D, stream.cuda_stream)
        else:
            r = rt.cudaMemcpy2DAsync(host, pitch, dev, col, col, cols, D2H, stream.cuda_stream)
        assert r == 0, r
    return col * cols * reps

def timed(jobs):
    """jobs: list of (stream, kind, host, dev, col, pitch, reps); all start together; returns GB/s each."""
    torch.cuda.synchronize()
    ev = []
    for (st, *rest) in jobs:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(st)
        nbytes = copies(st, *rest)
        b.record(st)
        ev.append((a, b, nbytes))
    torch.cuda.synchronize()
    return [n / (a.elapsed_time(b) * 1e-3) / 1e9 for a, b, n in ev]

def med(f, n=5):
    vals = [f() for _ in range(n)]
    return [statistics.median(v[i] for v in vals) for i in range(len(vals[0]))]

for name, alloc in [("hostalloc", host_alloc), ("registered", host_register)]:
    hin, pin_ = alloc()
    hout, pout = alloc()
    print(f"== {name}")
    print("pitchKiB colKiB | h2d alone | d2h alone | h2d duplex | d2h duplex | slow h2d | slow d2h")
    for pitch in [None, 32 << 10, 64 << 10, 128 << 10, 192 << 10, 256 << 10]:
        for col in [8 << 10, 12 << 10, 16 << 10, 24 << 10, 32 << 10, 48 << 10, 64 << 10]:
            p = col if pitch is None else pitch
            if col > p or (pitch is None and col != 32 << 10):
                continue
            reps = 4
            a_in = med(lambda: timed([(s_in, H2D, pin_, dev_in.data_ptr(), col, p, reps)]))[0]
            a_out = med(lambda: timed([(s_out, D2H, pout, dev_out.data_ptr(), col, p, reps)]))[0]
            both = med(lambda: timed([(s_in, H2D, pin_, dev_in.data_ptr(), col, p, reps),
                                      (s_out, D2H, pout, dev_out.data_ptr(), col, p, reps)]))
            tag = "contig" if pitch is None else f"{p >> 10}"
            print(f"{tag:>8} {col >> 10:>6} | {a_in:9.2f} | {a_out:9.2f} | {both[0]:10.2f} | {both[1]:10.2f} | "
                  f"{a_in / both[0]:8.3f} | {a_out / both[1]:8.3f}", flush=True)
    del hin, hout
