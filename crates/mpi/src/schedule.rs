//! The layout of a distributed GEMM chosen by a model: the process grid, the panel width and
//! where each rank keeps its local C.
//!
//! - **Grid** ([`choose_grid`]): SUMMA moves, per unit of k, `(m/p)(1 - 1/q)` elements of A
//!   to each rank along its process row and `(n/q)(1 - 1/p)` of B along its column; the grid
//!   of `p x q = ranks` with the least of their sum is chosen (square for square C, more
//!   process rows for tall C). This is also the 2D decomposition COSMA's schedule picks for
//!   these shapes; COSMA gains over it for shapes where a split of k (with a reduction of C)
//!   moves less, which is not done here (see [`crate::summa`]).
//! - **Panel width and C's place** ([`choose`]): from the rank's node model (its GPUs'
//!   calibrated DGEMM rates and host links, [`crate::project::NodeModel`]), each candidate
//!   width is priced with local C on a device (C crosses the host link once each way, not
//!   overlapped with anything; each panel's product only streams its A and B panels) and with
//!   C in host memory (every panel's runtime call streams C in and out beside the panels, all
//!   of it overlapped with the products while the link keeps up). Wider panels mean fewer
//!   calls (each call's first tiles and last C tile are not overlapped) and less C traffic,
//!   but a longer wait for the first panel when it must come from another rank. The cheapest
//!   pair is kept. On one H200 (`docs/profiles/nvidia-h200-x1.json`), a rank's DGEMM
//!   16384x32768x32768 with C on the device in panels of 8192 is predicted at 0.83 s
//!   (measured on 2026-11-29: 0.84 s, of which 0.67 s products); with C on the host in panels
//!   of 16384 at 0.67 s (two calls, C's traffic hidden under the products).

use crate::project::NodeModel;

/// The `p x q` grid (`p * q = ranks`) that moves the fewest panel bytes per rank for C
/// `m x n`; ties go to more process rows.
pub fn choose_grid(ranks: usize, m: usize, n: usize) -> (usize, usize) {
    let ranks = ranks.max(1);
    let cost = |p: usize| {
        let q = ranks / p;
        let (pf, qf) = (p as f64, q as f64);
        m as f64 / pf * (1.0 - 1.0 / qf) + n as f64 / qf * (1.0 - 1.0 / pf)
    };
    (1..=ranks)
        .filter(|p| ranks % p == 0)
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)).then(b.cmp(&a)))
        .map_or((1, 1), |p| (p, ranks / p))
}

/// What the model chose for a rank's local products.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub panel: usize,
    pub c_on_device: bool,
    /// The predicted seconds of the rank's part of the call.
    pub seconds: f64,
}

/// How the panels reach a rank, as the model sees it.
pub trait Delivery {
    /// Seconds before the first panel of width `w` can be multiplied (0 when the rank owns
    /// one of the first panels and reads it in place).
    fn first(&self, w: usize) -> f64;
    /// Seconds a panel of width `w` takes to arrive in steady state (packing by its owner,
    /// the broadcast), overlapped with the products by the look-ahead.
    fn each(&self, w: usize) -> f64;
}

/// The panel width among `widths` and the place of C with the least predicted time for a
/// rank with local C `m x n` and `k` to multiply (`read_c`: beta != 0), on `node`.
/// `None` when there is nothing to choose from.
pub fn choose(
    node: &NodeModel,
    m: usize,
    n: usize,
    k: usize,
    read_c: bool,
    widths: &[usize],
    delivery: &dyn Delivery,
) -> Option<Choice> {
    let mut best: Option<Choice> = None;
    for &w in widths.iter().filter(|&&w| w > 0) {
        let w = w.min(k.max(1));
        for on_device in [false, true] {
            let seconds = price(node, m, n, k, read_c, w, on_device, delivery);
            if best.is_none_or(|b| seconds < b.seconds) {
                best = Some(Choice {
                    panel: w,
                    c_on_device: on_device,
                    seconds,
                });
            }
        }
    }
    best
}

/// For each of `widths`, the predicted seconds of a rank's part of the call with C where it
/// is cheaper (what processes compare to agree on one width: the slowest rank's time counts).
pub fn seconds_per_width(
    node: &NodeModel,
    m: usize,
    n: usize,
    k: usize,
    read_c: bool,
    widths: &[usize],
    delivery: &dyn Delivery,
) -> Vec<f64> {
    widths
        .iter()
        .map(|&w| {
            [false, true]
                .iter()
                .map(|&dev| price(node, m, n, k, read_c, w, dev, delivery))
                .fold(f64::INFINITY, f64::min)
        })
        .collect()
}

/// The predicted seconds of a rank's part of the call with panels of `w` and local C on a
/// device (`on_device`) or in host memory (see [`choose`]).
#[allow(clippy::too_many_arguments)] // the shape, the two choices and the delivery
pub fn price(
    node: &NodeModel,
    m: usize,
    n: usize,
    k: usize,
    read_c: bool,
    w: usize,
    on_device: bool,
    delivery: &dyn Delivery,
) -> f64 {
    let w = w.clamp(1, k.max(1));
    let panels = (0..k / w).map(|_| w).chain((k % w > 0).then_some(k % w));
    let mut seconds = delivery.first(w);
    if on_device {
        seconds += node.c_round_trip(m, n, read_c);
    }
    for (i, kw) in panels.enumerate() {
        let product = if on_device {
            node.step_time(m, n, kw)
        } else {
            // Every call after the first reads C (beta = 1 from then on).
            node.step_time_host_c(m, n, kw, read_c || i > 0)
        };
        seconds += product.max(delivery.each(kw));
    }
    seconds
}

/// The candidate panel widths for k-blocks of `kb`: whole multiples of it from 1024 to
/// 32768 (powers of two times `kb`), and `kb` itself; at most `k`.
pub fn candidate_widths(kb: usize, k: usize) -> Vec<usize> {
    let kb = kb.max(1);
    let mut out = vec![kb.min(k.max(1))];
    let mut w = kb;
    while w <= 32768 && w < k {
        if w >= 1024 {
            out.push(w);
        }
        w *= 2;
    }
    if w >= k && k <= 32768 {
        out.push(k.max(1));
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas::MachineProfile;

    #[test]
    fn grids_move_the_fewest_panel_bytes() {
        assert_eq!(choose_grid(1, 100, 100), (1, 1));
        assert_eq!(choose_grid(2, 1000, 1000), (2, 1));
        assert_eq!(choose_grid(4, 1000, 1000), (2, 2));
        assert_eq!(choose_grid(8, 1000, 1000), (4, 2));
        assert_eq!(choose_grid(16, 1000, 1000), (4, 4));
        // Tall C: more process rows; wide C: more columns.
        assert_eq!(choose_grid(4, 100_000, 1000), (4, 1));
        assert_eq!(choose_grid(4, 1000, 100_000), (1, 4));
        assert_eq!(choose_grid(7, 1000, 1000), (7, 1));
    }

    #[test]
    fn widths_are_whole_k_blocks() {
        assert_eq!(
            candidate_widths(4096, 32768),
            vec![4096, 8192, 16384, 32768]
        );
        assert_eq!(candidate_widths(512, 4096), vec![512, 1024, 2048, 4096]);
        assert_eq!(candidate_widths(8192, 4096), vec![4096]);
        assert_eq!(
            candidate_widths(3000, 100_000),
            vec![3000, 6000, 12000, 24000]
        );
    }

    fn h200(gpus: usize) -> NodeModel {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/profiles/nvidia-h200-x4.json"
        );
        let profile = MachineProfile::load(std::path::Path::new(path)).expect("the H200 profile");
        NodeModel::from_profile(&profile, gpus).expect("a node model")
    }

    /// The first panel after `first_s_per_col` seconds per column of width, the others
    /// hidden.
    struct Late(f64);
    impl Delivery for Late {
        fn first(&self, w: usize) -> f64 {
            self.0 * w as f64
        }
        fn each(&self, _: usize) -> f64 {
            0.0
        }
    }
    const IN_PLACE: Late = Late(0.0);

    #[test]
    fn one_h200_keeps_c_on_the_host_in_wide_panels_for_a_ranks_share_of_32768() {
        let node = h200(1);
        let widths = candidate_widths(4096, 32768);
        let c = choose(&node, 16384, 32768, 32768, true, &widths, &IN_PLACE).unwrap();
        assert!(!c.c_on_device, "{c:?}");
        assert!(c.panel >= 16384, "{c:?}");
        // Within 10% of the products alone (16384 x 32768 x 32768 at about 52 TFLOP/s).
        let flops = 2.0 * 16384.0 * 32768.0 * 32768.0;
        assert!(c.seconds < 1.1 * flops / 52e12, "{c:?}");
        // Panels of 8192 forced: C's round trip on the device, or C streamed per call at the
        // link's limit; either costs more.
        let narrow = choose(&node, 16384, 32768, 32768, true, &[8192], &IN_PLACE).unwrap();
        assert!(narrow.seconds > c.seconds, "{narrow:?} vs {c:?}");
    }

    /// The lone rank of 2026-11-29 on one H200 (panels of 8192, C on the device): 0.84 s
    /// measured per call. The model of the x1 profile prices it within 5%, and prices C on
    /// the host in panels of 16384 below the products of that run (0.67 s).
    #[test]
    fn the_model_prices_the_measured_lone_rank() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/profiles/nvidia-h200-x1.json"
        );
        let profile = MachineProfile::load(std::path::Path::new(path)).expect("the x1 profile");
        let node = NodeModel::from_profile(&profile, 1).expect("a node model");
        let then = price(&node, 16384, 32768, 32768, true, 8192, true, &IN_PLACE);
        assert!((then / 0.84 - 1.0).abs() < 0.05, "{then}");
        let now = choose(&node, 16384, 32768, 32768, true, &[16384], &IN_PLACE).unwrap();
        assert!(!now.c_on_device && now.seconds < 0.69, "{now:?}");
    }

    #[test]
    fn narrow_panels_keep_c_on_the_device() {
        // Panels of 4096 (say, for memory): C streamed per call would cross the link 64
        // times for k = 262144, at about twice the products' time; on the device it crosses
        // once each way.
        let node = h200(1);
        let c = choose(&node, 16384, 16384, 262_144, true, &[4096], &IN_PLACE).unwrap();
        assert!(c.c_on_device, "{c:?}");
        // Free to choose, wide panels hide C's traffic per call and the round trip goes.
        let widths = candidate_widths(4096, 262_144);
        let free = choose(&node, 16384, 16384, 262_144, true, &widths, &IN_PLACE).unwrap();
        assert!(!free.c_on_device && free.panel >= 16384, "{free:?}");
        assert!(free.seconds < c.seconds);
    }

    #[test]
    fn a_slow_first_panel_favours_narrow_panels() {
        let node = h200(1);
        let widths = candidate_widths(4096, 65536);
        // 1 GB/s to the first panel: every doubling of the width costs its bytes again.
        let slow = Late(8.0 * 16384.0 / 1e9);
        let c = choose(&node, 16384, 16384, 65536, true, &widths, &slow).unwrap();
        let free = choose(&node, 16384, 16384, 65536, true, &widths, &IN_PLACE).unwrap();
        assert!(c.panel < free.panel, "{c:?} vs {free:?}");
    }
}
