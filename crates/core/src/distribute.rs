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
/// returns each device's tiles in execution order: row by row, the columns in serpentine order so
/// consecutive tiles share an A row-panel and the B tiles just used.
pub fn block_cyclic(mt: usize, nt: usize, ndev: usize) -> Vec<Vec<(usize, usize)>> {
    let (pr, pc) = device_grid(ndev, mt, nt);
    let mut out = vec![Vec::new(); ndev.max(1)];
    for i in 0..mt {
        for jj in 0..nt {
            let j = if i % 2 == 0 { jj } else { nt - 1 - jj };
            let d = (i % pr) * pc + (j % pc);
            out[d].push((i, j));
        }
    }
    out
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
