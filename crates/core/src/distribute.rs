//! Distribution of C tiles over devices: 2D block-cyclic over a device grid as square as possible
//! (PARALiA), so A row-panels and B column-panels are shared along grid rows and columns. Each C
//! tile belongs to exactly one device, which accumulates it over all of K and writes it back once.

/// The shape of the device grid for `ndev` devices and a `mt x nt` tile grid: the factorisation
/// `pr x pc = ndev` closest to square, with more devices along the longer dimension.
pub fn device_grid(ndev: usize, mt: usize, nt: usize) -> (usize, usize) {
    let ndev = ndev.max(1);
    let mut best: (usize, usize) = (1, ndev);
    for pr in 1..=ndev {
        if ndev.is_multiple_of(pr) {
            let pc = ndev / pr;
            let (bpr, bpc) = best;
            if pr.abs_diff(pc) < bpr.abs_diff(bpc) {
                best = (pr, pc);
            }
        }
    }
    let (a, b) = (best.0.min(best.1), best.0.max(best.1));
    if mt > nt {
        (b, a)
    } else {
        (a, b)
    }
}

/// Assigns every C tile of a `mt x nt` grid to one of `ndev` devices, 2D block-cyclically, and
/// returns each device's tiles in execution order (see [`shell_order`]).
pub fn block_cyclic(mt: usize, nt: usize, ndev: usize) -> Vec<Vec<(usize, usize)>> {
    let (pr, pc) = device_grid(ndev, mt, nt);
    let mut out = vec![Vec::new(); ndev.max(1)];
    for i in 0..mt {
        for j in 0..nt {
            out[(i % pr) * pc + (j % pc)].push((i, j));
        }
    }
    for tiles in &mut out {
        shell_order(tiles);
    }
    out
}

/// Assigns C tiles to devices in proportion to `weights` (fractions summing to 1). Equal
/// weights give [`block_cyclic`]; otherwise the tile counts are the largest-remainder rounding
/// of `weight * tiles`, and tiles are dealt in row-major serpentine order to the device furthest
/// below its target (relative), which spreads every device over the whole matrix. Each
/// device's tiles are then put in [`shell_order`].
pub fn weighted(mt: usize, nt: usize, weights: &[f64]) -> Vec<Vec<(usize, usize)>> {
    let n = weights.len().max(1);
    let total: f64 = weights.iter().sum();
    let equal = weights
        .iter()
        .all(|&w| (w - total / n as f64).abs() <= 0.02 * total / n as f64);
    if equal || total <= 0.0 {
        return block_cyclic(mt, nt, n);
    }
    let tiles = mt * nt;
    let exact: Vec<f64> = weights.iter().map(|w| w / total * tiles as f64).collect();
    let mut count: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
    let mut rest: Vec<usize> = (0..n).collect();
    rest.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    for &d in rest.iter().take(tiles - count.iter().sum::<usize>()) {
        count[d] += 1;
    }
    let mut out = vec![Vec::new(); n];
    let mut given = vec![0usize; n];
    for i in 0..mt {
        for jj in 0..nt {
            let j = if i % 2 == 0 { jj } else { nt - 1 - jj };
            let d = (0..n)
                .filter(|&d| given[d] < count[d])
                .max_by(|&a, &b| {
                    let da = (count[a] - given[a]) as f64 / count[a].max(1) as f64;
                    let db = (count[b] - given[b]) as f64 / count[b].max(1) as f64;
                    da.total_cmp(&db).then(b.cmp(&a))
                })
                .unwrap_or(0);
            given[d] += 1;
            out[d].push((i, j));
        }
    }
    for t in &mut out {
        shell_order(t);
    }
    out
}

/// Orders C tiles in growing squares ("shells") of the device's local tile grid: shell s holds
/// the tiles whose larger local coordinate is s, walked along its L (row s left to right, then
/// column s bottom to top) so consecutive tiles share an A row-panel or a B column-panel.
///
/// Why: row-by-row order needs all of B during the first row, so transfers pile up at the start
/// while the compute engine waits, and sit idle at the end. Shell s adds one A row-panel and one
/// B column-panel for 2s + 1 C tiles, so new data per unit of compute shrinks steadily and the
/// transfers stay hidden behind compute after the first shell (measured: 16384^3 DGEMM on H200,
/// 197 ms row order).
pub fn shell_order(tiles: &mut [(usize, usize)]) {
    let mut rows: Vec<usize> = tiles.iter().map(|t| t.0).collect();
    let mut cols: Vec<usize> = tiles.iter().map(|t| t.1).collect();
    rows.sort_unstable();
    rows.dedup();
    cols.sort_unstable();
    cols.dedup();
    let local = |v: &[usize], x: usize| v.binary_search(&x).unwrap_or(0);
    tiles.sort_by_key(|&(i, j)| {
        let (li, lj) = (local(&rows, i), local(&cols, j));
        let s = li.max(lj);
        // Along the L: row s (li == s) by increasing column, then column s by decreasing row.
        let pos = if li == s { lj } else { 2 * s - li };
        (s, pos)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids() {
        assert_eq!(device_grid(1, 4, 4), (1, 1));
        assert_eq!(device_grid(4, 4, 4), (2, 2));
        assert_eq!(device_grid(2, 8, 2), (2, 1));
        assert_eq!(device_grid(2, 2, 8), (1, 2));
        assert_eq!(device_grid(6, 4, 4), (2, 3));
        assert_eq!(device_grid(3, 1, 9), (1, 3));
    }

    #[test]
    fn shells_grow() {
        let a = block_cyclic(3, 3, 1);
        assert_eq!(
            a[0],
            vec![
                (0, 0),
                (1, 0),
                (1, 1),
                (0, 1),
                (2, 0),
                (2, 1),
                (2, 2),
                (1, 2),
                (0, 2)
            ]
        );
    }

    #[test]
    fn weighted_counts() {
        let a = weighted(8, 8, &[1.0, 2.0, 4.0]);
        let c: Vec<usize> = a.iter().map(|v| v.len()).collect();
        assert_eq!(c.iter().sum::<usize>(), 64);
        assert_eq!(c, vec![9, 18, 37]);
        assert_eq!(weighted(4, 4, &[0.5, 0.5]), block_cyclic(4, 4, 2));
        let z = weighted(4, 4, &[1.0, 0.0]);
        assert_eq!((z[0].len(), z[1].len()), (16, 0));
    }

    #[test]
    fn every_tile_once() {
        for ndev in 1..6 {
            let a = block_cyclic(5, 7, ndev);
            let mut all: Vec<_> = a.iter().flatten().copied().collect();
            all.sort();
            all.dedup();
            assert_eq!(all.len(), 35);
            assert_eq!(a.iter().map(|v| v.len()).sum::<usize>(), 35);
        }
    }
}
