//! Distribution of C tiles over devices: 2D block-cyclic over a device grid as square as possible
//! (PARALiA), so A row-panels and B column-panels are shared along grid rows and columns. Each C
//! tile belongs to exactly one device, which accumulates it over all of K and writes it back once.

use crate::tiling::TileGrid;

/// The shape of the device grid for `ndev` devices and a `mt x nt` tile grid: the factorisation
/// `pr x pc = ndev` closest to square, with more devices along the longer dimension.
pub fn device_grid(ndev: usize, mt: usize, nt: usize) -> (usize, usize) {
    let ndev = ndev.max(1);
    let pr = (1..=ndev)
        .filter(|&pr| ndev.is_multiple_of(pr))
        .min_by_key(|&pr| pr.abs_diff(ndev / pr))
        .unwrap_or(1);
    let (a, b) = (pr.min(ndev / pr), pr.max(ndev / pr));
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

/// Assigns the C tiles `keep` accepts (a triangle of C for the symmetric rank updates) to
/// devices in proportion to `weights`: counts by largest-remainder rounding of `weight * tiles`
/// (callers that know device speeds pass whole tile counts, see `balance::tile_counts`). The
/// devices with a large share ("major": at least half the largest count) get the tiles 2D
/// block-cyclically, so each touches only its grid row's A panels and grid column's B panels;
/// the others, and majors that are short, then take tiles from the ends of the majors' lists.
/// Each device's tiles end in [`shell_order`].
pub fn weighted_where(
    mt: usize,
    nt: usize,
    weights: &[f64],
    keep: &dyn Fn(usize, usize) -> bool,
) -> Vec<Vec<(usize, usize)>> {
    let n = weights.len().max(1);
    let total: f64 = weights.iter().sum();
    let cyclic = |parts: usize| -> Vec<Vec<(usize, usize)>> {
        block_cyclic(mt, nt, parts)
            .into_iter()
            .map(|l| l.into_iter().filter(|&(i, j)| keep(i, j)).collect())
            .collect()
    };
    if total <= 0.0 {
        return cyclic(n);
    }
    let tiles = (0..mt)
        .flat_map(|i| (0..nt).map(move |j| (i, j)))
        .filter(|&(i, j)| keep(i, j))
        .count();
    if tiles == 0 {
        return vec![Vec::new(); n];
    }
    let exact: Vec<f64> = weights.iter().map(|w| w / total * tiles as f64).collect();
    let mut count: Vec<usize> = exact.iter().map(|x| (x + 1e-9).floor() as usize).collect();
    let mut rest: Vec<usize> = (0..n).collect();
    rest.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let short = tiles.saturating_sub(count.iter().sum::<usize>());
    for &d in rest.iter().take(short) {
        count[d] += 1;
    }
    let max = count.iter().copied().max().unwrap_or(0);
    let majors: Vec<usize> = (0..n)
        .filter(|&d| count[d] > 0 && 2 * count[d] >= max)
        .collect();
    let mut out = vec![Vec::new(); n];
    for (k, list) in cyclic(majors.len()).into_iter().enumerate() {
        out[majors[k]] = list;
    }
    // Move tiles from majors with a surplus to everyone short, taking the last ones.
    while let Some(dst) = (0..n).find(|&d| out[d].len() < count[d]) {
        let Some(src) = (0..n)
            .filter(|&d| out[d].len() > count[d])
            .max_by_key(|&d| out[d].len() - count[d])
        else {
            break;
        };
        let t = out[src].pop().expect("surplus tile");
        out[dst].push(t);
    }
    for t in &mut out {
        shell_order(t);
    }
    out
}

/// A strip of C's last rows for a device that computes in host memory (the CPU) when its
/// share is too small for whole tiles: the grid's row tiles shrink so that the rows left below
/// them are about that share, and that device takes the last tile row.
#[derive(Debug, Clone, PartialEq)]
pub struct HostStrip {
    /// The grid: `tm` shortened, the last tile row `m - (mt - 1) * tm` rows high.
    pub grid: TileGrid,
    /// Index of the strip's device in the device list.
    pub device: usize,
    /// Shares of C (by area) per device, the strip's device holding `rows / m`.
    pub weights: Vec<f64>,
    pub rows: usize,
}

/// The strip for device `device` with continuous share `weights[device]`, square tiles `t`:
/// `None` when that share already makes two whole tiles (the tile distribution serves it), or
/// is under 32 rows. The strip takes half the share (a thin GEMM streams all of B through host
/// memory and runs below the rate the balancer used), at least 32 rows; row tiles stay
/// multiples of 8.
pub fn host_strip(
    m: usize,
    n: usize,
    k: usize,
    t: usize,
    weights: &[f64],
    device: usize,
) -> Option<HostStrip> {
    let total: f64 = weights.iter().sum();
    let w = *weights.get(device)? / total.max(f64::MIN_POSITIVE);
    let g = TileGrid::square(m, n, k, t);
    if w.is_nan() || w <= 0.0 || w * (g.mt() * g.nt()) as f64 >= 2.0 || weights.len() < 2 {
        return None;
    }
    let target = ((0.5 * w * m as f64) as usize / 32) * 32;
    if target < 32 || target >= m {
        return None;
    }
    let q = (((m - target) as f64 / t.max(1) as f64).round() as usize).max(1);
    let tm = ((m - target) / q / 8) * 8;
    if tm == 0 || tm < t / 2 {
        return None; // the other devices' tiles would shrink too much
    }
    let rows = m - q * tm;
    let share = rows as f64 / m as f64;
    let weights = weights
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            if i == device {
                share
            } else {
                x / (total - weights[device]).max(f64::MIN_POSITIVE) * (1.0 - share)
            }
        })
        .collect();
    Some(HostStrip {
        grid: TileGrid { tm, ..g },
        device,
        weights,
        rows,
    })
}

/// The assignment with a host strip on `grid`: `device` takes the last tile row, the others
/// share the rest by their `weights` (as [`weighted_where`]).
pub fn with_strip(grid: &TileGrid, device: usize, weights: &[f64]) -> Vec<Vec<(usize, usize)>> {
    let (mt, nt) = (grid.mt(), grid.nt());
    let others: Vec<usize> = (0..weights.len()).filter(|&d| d != device).collect();
    let w: Vec<f64> = others.iter().map(|&d| weights[d]).collect();
    let mut out = vec![Vec::new(); weights.len()];
    for (list, &d) in weighted_where(mt.saturating_sub(1), nt, &w, &|_, _| true)
        .into_iter()
        .zip(&others)
    {
        out[d] = list;
    }
    if let Some(out) = out.get_mut(device) {
        *out = (0..nt).map(|j| (mt - 1, j)).collect();
    }
    out
}

/// Orders C tiles in growing squares ("shells") of the device's local tile grid: shell s holds
/// the tiles whose larger local coordinate is s, walked along its L (row s left to right, then
/// column s bottom to top) so consecutive tiles share an A row-panel or a B column-panel.
/// Shell s adds one A row-panel and one B column-panel for 2s + 1 C tiles, so transfers stay
/// hidden behind compute after the first shell (row order needs all of B during the first row).
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

    fn weighted(mt: usize, nt: usize, weights: &[f64]) -> Vec<Vec<(usize, usize)>> {
        weighted_where(mt, nt, weights, &|_, _| true)
    }

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
        // Two large and one tiny share: the large ones keep a block-cyclic split.
        let a = weighted(8, 8, &[31.0 / 64.0, 32.0 / 64.0, 1.0 / 64.0]);
        assert_eq!(
            a.iter().map(|v| v.len()).collect::<Vec<_>>(),
            vec![31, 32, 1]
        );
        let cols0: std::collections::HashSet<usize> = a[0].iter().map(|t| t.1).collect();
        assert!(
            cols0.len() <= 4,
            "device 0 stays on its half of the columns: {cols0:?}"
        );
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

    #[test]
    fn host_strip_gives_the_cpu_its_rows() {
        // 16384^2, tiles 4096: a 0.9% CPU share is under two of the 16 tiles.
        let s = host_strip(16384, 16384, 16384, 4096, &[0.495, 0.496, 0.009], 2).unwrap();
        assert_eq!(s.rows, 16384 - 4 * s.grid.tm);
        assert!(s.rows >= 64 && s.rows < 128, "{}", s.rows);
        assert_eq!(s.grid.tm % 8, 0);
        assert_eq!((s.grid.mt(), s.grid.nt()), (5, 4));
        assert!((s.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let a = with_strip(&s.grid, s.device, &s.weights);
        assert_eq!(a[2], vec![(4, 0), (4, 1), (4, 2), (4, 3)]);
        let mut all: Vec<(usize, usize)> = a.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 20, "every tile exactly once");
        assert!(a[0].iter().chain(&a[1]).all(|&(i, _)| i < 4));
        // A share of two tiles or more, or under 32 rows: no strip.
        assert!(host_strip(16384, 16384, 16384, 4096, &[0.4, 0.4, 0.2], 2).is_none());
        assert!(host_strip(4096, 4096, 4096, 1024, &[0.999, 0.001], 1).is_none());
    }
}
