//! Tilings learned from measured calls: a GEMM shape whose calls on the devices run clearly
//! slower than the model predicted tries, for one call, the square tile the model priced next
//! cheapest (when below what its own tile measured), and from then on runs at the tile
//! measured fastest.
//!
//! Why: the model picks a shape's tile from predictions, and a prediction can be off by more
//! than the gap between two tiles. NumPy's `a @ b` at 8192 with a fresh output each call ran
//! its model's 1024 tiles in 41.3-44.2 ms against 34.0 predicted, where 2048 tiles run in
//! 34.6-35.0 (nvidia-h200, pip NumPy, 2026-12-01 15:45Z and 15:58Z): 0.66 of the CLI's rate
//! instead of 0.8. A program that repeats a shape (a loop, an iterative method) pays such a
//! misprice on every call; measuring an alternative costs it [`MAX_TRIALS`] call. Only a tile
//! the model priced below the measured time is tried: a neighbour tried blind (8192 tiles at
//! 16384, fresh output) took 1.54 s where the model's 4096 took 0.185.
//!
//! Only the model's square tiles are judged (its streaming and deep blockings are left as
//! chosen), only from a shape's second call at the model's tile (the first carries one-time
//! costs), and only once per shape. Each later call updates its tile's time, so a tile that
//! becomes slower than another measured one loses its place, as routes do in
//! [`crate::measured`].

use crate::measured::{make_room, Key};
use hetblas_core::autotune::TilePrices;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// A call at the model's tile this much slower than predicted (or more) sets off the
/// exploration. The model's steady-state error on fresh seeded sets has a p90 of 6-10% on the
/// H200 (issue 57's runs, `docs/PERFORMANCE.md`): beyond this, the call is mispriced, not
/// noisy.
pub const MISPRICED: f64 = 1.15;

/// At most this many other tiles are tried per shape: the model's cheapest other square tile.
/// A trial also pays what a new tile size costs the first time (pinned staging of its size):
/// at 8192 with a fresh output a second trial, 3072 tiles priced at 35 ms, took 223 ms where
/// the first, 2048, took 34 and was kept (nvidia-h200, 2026-12-01 16:12Z).
pub const MAX_TRIALS: usize = 1;

/// A tile this module asks a call to run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forced {
    pub tile: usize,
    /// A tile on trial (its time says nothing yet of the shape's route: a trial may be slow);
    /// `false`: the tile measured fastest.
    pub trial: bool,
}

/// What was measured of one shape's tilings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Learned {
    /// The model's square tile, once a call ran at it.
    model: Option<usize>,
    /// Calls measured at the model's tile.
    model_calls: u32,
    /// Seconds of the last call at each tile measured (the model's included).
    times: Vec<(usize, f64)>,
    /// Tiles still to try, in order.
    pending: Vec<usize>,
    /// The tiles to try were chosen once: never again for this shape.
    explored: bool,
}

impl Learned {
    /// The tile to force on the next call: the next one to try, else the fastest measured
    /// when it is not the model's; `None`: the model's choice.
    pub fn next_tile(&self) -> Option<Forced> {
        if let Some(&tile) = self.pending.first() {
            return Some(Forced { tile, trial: true });
        }
        let best = self
            .times
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|&(t, _)| t)?;
        (Some(best) != self.model).then_some(Forced {
            tile: best,
            trial: false,
        })
    }

    /// A call of an `m x n x k` shape ran in `seconds` at tiles `ran` (as the report gives
    /// them: clamped to the shape). `forced`: the tile this module asked for; `None`: the
    /// model's own choice, with its `prices`.
    pub fn record(
        &mut self,
        (m, n, k): (usize, usize, usize),
        ran: Option<(usize, usize, usize)>,
        forced: Option<usize>,
        seconds: f64,
        prices: Option<&TilePrices>,
    ) {
        let tile = match (forced, ran) {
            (Some(t), _) => {
                self.pending.retain(|&p| p != t);
                t
            }
            (None, Some(ran)) => match square_tile((m, n, k), ran) {
                Some(t) => t,
                None => return,
            },
            (None, None) => return,
        };
        match self.times.iter_mut().find(|(t, _)| *t == tile) {
            Some(entry) => entry.1 = seconds,
            None => self.times.push((tile, seconds)),
        }
        if forced.is_some() {
            return;
        }
        if self.model != Some(tile) {
            // The model's tile changed (a new profile, a device left out): start over from it.
            *self = Learned {
                model: Some(tile),
                times: vec![(tile, seconds)],
                ..Learned::default()
            };
        }
        self.model_calls += 1;
        let Some(prices) = prices else { return };
        // A shape's first call carries one-time costs not all reported apart (the first touch
        // of a fresh output): only later calls judge the model.
        let mispriced = prices.chosen_seconds > 0.0 && seconds > MISPRICED * prices.chosen_seconds;
        if !self.explored && self.model_calls >= 2 && mispriced {
            self.explored = true;
            self.pending = cheaper_in_model(prices, tile, seconds);
        }
    }
}

/// The square tiles other than `tile` that the model priced below `measured` (what `tile` ran
/// in), cheapest first, at most [`MAX_TRIALS`].
fn cheaper_in_model(prices: &TilePrices, tile: usize, measured: f64) -> Vec<usize> {
    let mut below: Vec<(usize, f64)> = prices
        .square
        .iter()
        .copied()
        .filter(|&(t, s)| t != tile && s < measured)
        .collect();
    below.sort_by(|a, b| a.1.total_cmp(&b.1));
    below.into_iter().take(MAX_TRIALS).map(|(t, _)| t).collect()
}

/// The square tile `t` a report's clamped tiles `ran` come from: each of them `t` or the
/// whole of its dimension (`t` = the largest). `None` for the model's other blockings.
fn square_tile(
    (m, n, k): (usize, usize, usize),
    (tm, tn, tk): (usize, usize, usize),
) -> Option<usize> {
    let t = tm.max(tn).max(tk);
    let fits = |got: usize, dim: usize| got == t || (got == dim && dim < t);
    (t > 0 && fits(tm, m) && fits(tn, n) && fits(tk, k)).then_some(t)
}

/// The learned tilings of this process.
#[derive(Debug, Default)]
pub struct Tilings {
    table: Mutex<HashMap<Key, Learned>>,
}

impl Tilings {
    /// The tile to force on the next call of `key` (`None`: the model's).
    pub fn next_tile(&self, key: &Key) -> Option<Forced> {
        self.lock().get(key).and_then(Learned::next_tile)
    }

    /// See [`Learned::record`].
    pub fn record(
        &self,
        key: Key,
        ran: Option<(usize, usize, usize)>,
        forced: Option<usize>,
        seconds: f64,
        prices: Option<&TilePrices>,
    ) {
        let dims = |x: i64| usize::try_from(x).unwrap_or(0);
        make_room(&mut self.lock(), &key).record(
            (dims(key.m), dims(key.n), dims(key.k)),
            ran,
            forced,
            seconds,
            prices,
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Learned>> {
        // A poisoned lock means a panic while updating plain values: the table is whole.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The process's learned tilings.
pub fn tilings() -> &'static Tilings {
    static T: OnceLock<Tilings> = OnceLock::new();
    T.get_or_init(Tilings::default)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: (usize, usize, usize) = (8192, 8192, 8192);

    fn trial(tile: usize) -> Option<Forced> {
        Some(Forced { tile, trial: true })
    }

    /// The model's prices: its choice `chosen` at `seconds`, and the other square tiles.
    fn prices(chosen: usize, square: &[(usize, f64)]) -> TilePrices {
        TilePrices {
            chosen_seconds: square.iter().find(|p| p.0 == chosen).unwrap().1,
            square: square.to_vec(),
        }
    }

    fn model_call(l: &mut Learned, tile: usize, seconds: f64, p: &TilePrices) {
        l.record(SHAPE, Some((tile, tile, tile)), None, seconds, Some(p));
    }

    #[test]
    fn a_mispriced_shape_tries_the_tile_priced_next_then_keeps_the_faster() {
        // 8192 fresh on the H200: 1024 priced 34.0 ms ran 41-44; 512 priced beyond that.
        let p = prices(
            1024,
            &[(512, 0.046), (1024, 0.034), (2048, 0.0345), (4096, 0.036)],
        );
        let mut l = Learned::default();
        // First call: never judged (one-time costs).
        model_call(&mut l, 1024, 0.080, &p);
        assert_eq!(l.next_tile(), None);
        // Second: 30% over its price.
        model_call(&mut l, 1024, 0.0442, &p);
        assert_eq!(l.next_tile(), trial(2048));
        l.record(SHAPE, Some((2048, 2048, 2048)), Some(2048), 0.035, None);
        let kept = Some(Forced {
            tile: 2048,
            trial: false,
        });
        assert_eq!(l.next_tile(), kept);
        l.record(SHAPE, Some((2048, 2048, 2048)), Some(2048), 0.0346, None);
        assert_eq!(l.next_tile(), kept);
        // The kept tile is measured on every call: slower than the model's last time, the
        // model's choice comes back.
        l.record(SHAPE, Some((2048, 2048, 2048)), Some(2048), 0.045, None);
        assert_eq!(l.next_tile(), None);
    }

    #[test]
    fn a_shape_within_its_price_is_left_to_the_model() {
        let p = prices(2048, &[(1024, 0.036), (2048, 0.034), (4096, 0.035)]);
        let mut l = Learned::default();
        for _ in 0..5 {
            model_call(&mut l, 2048, 0.0385, &p);
            assert_eq!(l.next_tile(), None);
        }
        // Without prices nothing is judged either.
        let mut l = Learned::default();
        for _ in 0..3 {
            l.record(SHAPE, Some((1024, 1024, 1024)), None, 0.05, None);
        }
        assert_eq!(l.next_tile(), None);
    }

    #[test]
    fn tiles_priced_above_the_measured_time_are_not_tried() {
        // 16384 fresh: 4096 priced 161 ms ran 189; 8192 priced far above (it took 1.54 s).
        let p = prices(
            4096,
            &[(1024, 0.203), (2048, 0.196), (4096, 0.161), (8192, 0.4)],
        );
        let mut l = Learned::default();
        model_call(&mut l, 4096, 0.189, &p);
        model_call(&mut l, 4096, 0.189, &p);
        assert_eq!(l.next_tile(), None);
        assert!(l.explored);
    }

    #[test]
    fn the_model_wins_when_the_others_are_slower_and_exploration_is_once() {
        let p = prices(2048, &[(1024, 0.0078), (2048, 0.0077), (4096, 0.0135)]);
        let mut l = Learned::default();
        model_call(&mut l, 2048, 0.009, &p);
        model_call(&mut l, 2048, 0.009, &p);
        assert_eq!(l.next_tile(), trial(1024));
        l.record(SHAPE, Some((1024, 1024, 1024)), Some(1024), 0.0095, None);
        assert_eq!(l.next_tile(), None);
        for _ in 0..3 {
            model_call(&mut l, 2048, 0.009, &p);
            assert_eq!(l.next_tile(), None, "explored once");
        }
    }

    #[test]
    fn a_new_model_tile_starts_over() {
        let p = prices(1024, &[(1024, 0.034), (2048, 0.0345)]);
        let mut l = Learned::default();
        model_call(&mut l, 1024, 0.05, &p);
        model_call(&mut l, 1024, 0.05, &p);
        assert_eq!(l.next_tile(), trial(2048));
        // The profile changed under the shape: its new tile is judged afresh.
        let q = prices(4096, &[(4096, 0.029)]);
        model_call(&mut l, 4096, 0.030, &q);
        assert_eq!(l.next_tile(), None);
        assert_eq!(l.times, vec![(4096, 0.030)]);
    }

    #[test]
    fn clamped_square_tiles_are_recognised_and_other_blockings_are_not() {
        let shape = (7592, 7550, 1982);
        assert_eq!(square_tile(shape, (2048, 2048, 1982)), Some(2048));
        assert_eq!(
            square_tile((4096, 4096, 4096), (4096, 4096, 4096)),
            Some(4096)
        );
        assert_eq!(
            square_tile((300, 20000, 20000), (300, 4096, 4096)),
            Some(4096)
        );
        // A streaming blocking (narrow C tiles, deep K) is not a square tile.
        assert_eq!(square_tile((2131, 845, 16471), (2131, 512, 8192)), None);
        assert_eq!(square_tile((4096, 4096, 4096), (4096, 1024, 4096)), None);
        let p = prices(512, &[(512, 0.1), (1024, 0.1)]);
        let mut l = Learned::default();
        for _ in 0..3 {
            let shape = (2131, 845, 16471);
            l.record(shape, Some((2131, 512, 8192)), None, 1.0, Some(&p));
        }
        assert_eq!(l.next_tile(), None);
    }

    #[test]
    fn only_the_cheapest_other_tile_below_the_measured_time_is_tried() {
        let p = prices(
            1024,
            &[
                (256, 0.03),
                (512, 0.02),
                (1024, 0.01),
                (2048, 0.025),
                (4096, 0.05),
            ],
        );
        assert_eq!(cheaper_in_model(&p, 1024, 0.04), vec![512]);
        assert_eq!(cheaper_in_model(&p, 1024, 0.019), Vec::<usize>::new());
        assert_eq!(MAX_TRIALS, 1);
    }
}
