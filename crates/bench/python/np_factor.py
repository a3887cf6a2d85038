"""pip NumPy/SciPy factorizations at order N (`scripts/gpu/dropin.sh factor`): the seconds of
`np.linalg.cholesky`, `np.linalg.solve` (4 right-hand sides) and `scipy.linalg.lu_factor`
(or those named), and each result's residual, as one JSON line.

    python3 np_factor.py N [cholesky,solve,lu_factor]
"""
import sys, time, json, numpy as np, scipy.linalg as sl
n = int(sys.argv[1])
which = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cholesky", "solve", "lu_factor"]
rng = np.random.default_rng(11)
a = rng.uniform(-1, 1, (n, n))
b = rng.uniform(-1, 1, (n, 4))
out, res = {}, {}
eps = 2.2e-16
def timed(name, f):
    t = time.perf_counter(); r = f(); out[name] = time.perf_counter() - t; return r
cols = [0, n // 2, n - 1]
if "cholesky" in which:
    spd = (a + a.T) / 2 + (n + 1) * np.eye(n)
    l = timed("cholesky", lambda: np.linalg.cholesky(spd))
    res["cholesky"] = max(np.abs(l @ l[j] - spd[:, j]).sum() / np.abs(spd[:, j]).sum() for j in cols)
    del spd, l
if "solve" in which:
    x = timed("solve", lambda: np.linalg.solve(a, b))
    res["solve"] = float(np.abs(a @ x - b).max() / (np.abs(a).sum(1).max() * np.abs(x).max() * n * eps))
if "lu_factor" in which:
    lu, piv = timed("lu_factor", lambda: sl.lu_factor(a))
    x2 = sl.lu_solve((lu, piv), b)
    res["lu_factor"] = float(np.abs(a @ x2 - b).max() / (np.abs(a).sum(1).max() * np.abs(x2).max() * n * eps))
print(json.dumps({"seconds": out, "residual": res}))
