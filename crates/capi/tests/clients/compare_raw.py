"""Compares two directories of raw f64 results (R's and Octave's, with and without the
preload): every file in both, within a relative bound (f64 results; `single-*` files were
computed in f32).  usage: python compare_raw.py DIR_A DIR_B"""

import pathlib
import sys

import numpy as np

a_dir, b_dir = map(pathlib.Path, sys.argv[1:3])
names = sorted(p.name for p in a_dir.iterdir())
if not names or names != sorted(p.name for p in b_dir.iterdir()):
    sys.exit(f"{a_dir} and {b_dir} hold different results (or none)")
bad = 0
for name in names:
    x, y = np.fromfile(a_dir / name), np.fromfile(b_dir / name)
    bound = 1e-4 if name.startswith("single") else 1e-10
    err = np.linalg.norm(x - y) / (np.linalg.norm(x) + 1e-300)
    if x.shape != y.shape or not err <= bound:
        print(f"  {name}: relative difference {err:.2e} (bound {bound:.0e})")
        bad += 1
if bad:
    sys.exit(f"{bad} of {len(names)} results differ")
print(f"all {len(names)} results agree")
