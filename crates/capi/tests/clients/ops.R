# R's BLAS and LAPACK calls (%*% and crossprod: dgemm/dsyrk; solve: dgesv; chol: dpotrf),
# each result written as raw doubles to DIR/<name>, for run.sh to compare with and without
# the preload. Then a fork test: mclapply children computing products after the parent's
# product (which, with the preload, started the runtime); run.sh runs this under a time limit.
# usage: Rscript ops.R DIR
dir <- commandArgs(trailingOnly = TRUE)[1]
dir.create(dir, showWarnings = FALSE)
save <- function(name, x) writeBin(as.double(x), file.path(dir, name))
set.seed(1)
n <- 300
a <- matrix(rnorm(n * n), n)
b <- matrix(rnorm(n * 120), n)
save("matmul", a %*% b)
save("matmul-t", t(a) %*% b)
save("crossprod", crossprod(a))
save("tcrossprod", tcrossprod(a, t(b[, 1:n %% 120 + 1])))
save("solve", solve(a, b))
save("inverse", solve(a))
spd <- crossprod(a) + diag(n)
save("chol", chol(spd))
save("chol2inv", chol2inv(chol(spd)))
library(parallel)
ints <- function(seed) { set.seed(seed); matrix(sample(-8:7, 150 * 150, TRUE), 150) }
exact <- function(x, y) all((x %*% y) == apply(y, 2, function(col) colSums(t(x) * col)))
stopifnot(exact(ints(1), ints(2)))
ok <- unlist(mclapply(1:4, function(i) exact(ints(10 + i), ints(20 + i)), mc.cores = 2))
if (length(ok) != 4 || !all(ok)) stop("mclapply children: ", paste(ok, collapse = " "))
cat("R: results in", dir, "; mclapply (fork) children computed\n")
