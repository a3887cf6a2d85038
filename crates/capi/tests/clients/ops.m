% Octave's BLAS and LAPACK calls (*: dgemm; \: dgetrf/dgetrs (LU) or dpotrf (SPD); chol:
% dpotrf), each result written as raw doubles to DIR/<name>, for run.sh to compare with and
% without the preload.  usage: octave-cli ops.m DIR
args = argv();
dir = args{1};
mkdir(dir);
function save_raw(dir, name, x)
  f = fopen(fullfile(dir, name), "w");
  fwrite(f, x(:), "double");
  fclose(f);
end
randn("seed", 1);
n = 300;
a = randn(n);
b = randn(n, 120);
save_raw(dir, "matmul", a * b);
save_raw(dir, "matmul-t", a' * b);
save_raw(dir, "backslash", a \ b);
spd = a' * a + eye(n);
save_raw(dir, "backslash-spd", spd \ b);
save_raw(dir, "chol", chol(spd));
save_raw(dir, "single-matmul", double(single(a) * single(b)));
printf("Octave: results in %s\n", dir);
