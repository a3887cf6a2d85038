# Sourced by the GPU scripts: records the machine, and makes cuBLAS loadable if hetblas cannot
# find it by itself (it searches the usual places; this only helps the baselines).
echo "== machine"; nvidia-smi --query-gpu=index,name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
nproc; free -g | head -2
ldconfig -p | grep -E "libcublas.so|libcuda.so" | head -4
if ! ldconfig -p | grep -q "libcublas.so.13"; then
  d=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
  echo "cublas dir from python: $d"
fi
