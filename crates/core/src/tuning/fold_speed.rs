//! What host folds achieve in this process, against the calibrated rate the model prices them
//! at: the host's memory, shared with whatever else runs, varies from process to process, so
//! when recent folds ran well below the calibrated rate ([`KEEP_SHARE`]) the model prices them
//! at the rate they reached ([`FoldSpeed::level`]). One record per pool; only folds of a call
//! that ran alone are counted (concurrent calls say nothing of the next call).

// A poisoned lock only means a panic elsewhere; the sums stay valid.
use crate::error::lock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Folds smaller than this are not counted: their time is mostly the fixed cost the model
/// prices apart ([`crate::fold::TASK_S`]).
pub const MIN_BYTES: u64 = 4 << 20;

/// Bytes of folds over which an old observation loses half its weight: about one call's folds
/// on the shapes where the price matters.
pub const HALF_LIFE_BYTES: f64 = 256.0 * (1u64 << 20) as f64;

/// With no fold for this long, what was observed is forgotten (a call that slow folds turned
/// away from folding records none).
pub const FORGET_AFTER: Duration = Duration::from_secs(5);

/// Folds are taken to run as calibrated down to this share of the rate: on H200 they ran at
/// 0.92-1.5x the calibrated rate in ordinary processes, and a level following that spread
/// would turn borderline choices back and forth.
pub const KEEP_SHARE: f64 = 0.75;

/// A fold that starts this long after the last one ended finds the fold threads asleep (they
/// sleep after tens of microseconds): longer on purpose, to err on the safe side.
pub const WAKE_GAP: Duration = Duration::from_micros(200);

/// Steps of the level ([`FoldSpeed::level`]), so that cached decisions drop only when it moves.
pub const STEPS: u32 = 8;

/// Recent folds: bytes and seconds, each weighted down as newer folds come in.
#[derive(Debug, Default)]
pub struct FoldSpeed {
    state: Mutex<State>,
    /// Calls of the pool in flight ([`FoldSpeed::call`]).
    calls: AtomicUsize,
    /// How many calls entered while another was in flight: a fold whose call was alone when
    /// it started, and during which this did not move, ran alone.
    overlaps: AtomicU64,
    /// When the last fold (of any call, any size) ended: the fold threads' last work.
    last_end: Mutex<Option<Instant>>,
}

/// A call of the pool in flight, from [`FoldSpeed::call`] until dropped.
#[derive(Debug)]
pub struct CallInFlight<'a>(&'a FoldSpeed);

impl Drop for CallInFlight<'_> {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A fold that started while its call was the only one in flight ([`FoldSpeed::alone_since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AloneSince {
    overlaps: u64,
    /// The fold threads were asleep when it started ([`WAKE_GAP`]).
    woke: bool,
}

#[derive(Debug, Default)]
struct State {
    bytes: f64,
    seconds: f64,
    last: Option<Instant>,
}

impl FoldSpeed {
    /// One fold of `bytes` of C that took `seconds`, ending now.
    pub fn record(&self, bytes: u64, seconds: f64) {
        self.record_at(bytes, seconds, Instant::now());
    }

    /// [`FoldSpeed::record`] ending at `now`.
    pub fn record_at(&self, bytes: u64, seconds: f64, now: Instant) {
        if bytes < MIN_BYTES || !(seconds > 0.0 && seconds.is_finite()) {
            return;
        }
        let mut s = lock(&self.state);
        if s.last
            .is_some_and(|t| now.saturating_duration_since(t) > FORGET_AFTER)
        {
            *s = State::default();
        }
        let keep = 0.5f64.powf(bytes as f64 / HALF_LIFE_BYTES);
        s.bytes = s.bytes * keep + bytes as f64;
        s.seconds = s.seconds * keep + seconds;
        s.last = Some(now);
    }

    /// A call of the pool enters: until the returned guard drops, the folds of any other call
    /// are not counted, and neither are folds already running.
    pub fn call(&self) -> CallInFlight<'_> {
        if self.calls.fetch_add(1, Ordering::SeqCst) > 0 {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
        CallInFlight(self)
    }

    /// A fold starts: `Some` when at most one call is in flight (its own; none when the fold
    /// runs outside the pool's calls, as in a harness).
    pub fn alone_since(&self) -> Option<AloneSince> {
        self.alone_since_at(Instant::now())
    }

    /// [`FoldSpeed::alone_since`] for a fold starting at `now`.
    pub fn alone_since_at(&self, now: Instant) -> Option<AloneSince> {
        let overlaps = self.overlaps.load(Ordering::SeqCst);
        let woke =
            lock(&self.last_end).is_none_or(|end| now.saturating_duration_since(end) > WAKE_GAP);
        (self.calls.load(Ordering::SeqCst) <= 1).then_some(AloneSince { overlaps, woke })
    }

    /// A fold that began at `started` ([`FoldSpeed::alone_since`]) ended now, after `seconds`:
    /// [`FoldSpeed::record`]ed only when its call ran alone throughout, less the threads' wake
    /// when it woke them. Call it for every fold that completed: it also marks when the threads
    /// last worked.
    pub fn record_alone(&self, started: Option<AloneSince>, bytes: u64, seconds: f64) {
        self.record_alone_at(started, bytes, seconds, Instant::now());
    }

    /// [`FoldSpeed::record_alone`] for a fold ending at `now`.
    pub fn record_alone_at(
        &self,
        started: Option<AloneSince>,
        bytes: u64,
        seconds: f64,
        now: Instant,
    ) {
        *lock(&self.last_end) = Some(now);
        let Some(s) = started.filter(|s| s.overlaps == self.overlaps.load(Ordering::SeqCst)) else {
            return;
        };
        let wake = crate::fold::FIRST_S;
        if !s.woke {
            self.record_at(bytes, seconds, now);
        } else if seconds >= 2.0 * wake {
            // Shorter, the fold was mostly the wake (or the threads were awake after all) and
            // says little of the rate.
            self.record_at(bytes, seconds - wake, now);
        }
    }

    /// Forgets every fold recorded (a harness starting a new case).
    pub fn reset(&self) {
        *lock(&self.state) = State::default();
        *lock(&self.last_end) = None;
    }

    /// Bytes of C per second that recent folds reached; `None` without any in the last
    /// [`FORGET_AFTER`].
    pub fn observed(&self, now: Instant) -> Option<f64> {
        let s = lock(&self.state);
        let last = s.last?;
        (now.saturating_duration_since(last) <= FORGET_AFTER && s.seconds > 0.0)
            .then(|| s.bytes / s.seconds)
    }

    /// The share of the calibrated rate (`calibrated`, bytes of C per second) that folds are
    /// priced at: 1 while recent folds reached at least [`KEEP_SHARE`] of it (or none ran),
    /// else what they reached over it, to the nearest step of 1 / [`STEPS`] (at least one
    /// step).
    pub fn level(&self, calibrated: f64, now: Instant) -> f64 {
        match self.observed(now) {
            Some(rate) if calibrated > 0.0 && rate < KEEP_SHARE * calibrated => {
                let steps = ((rate / calibrated) * STEPS as f64).round() as u32;
                steps.clamp(1, STEPS) as f64 / STEPS as f64
            }
            _ => 1.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn nothing_observed_prices_folds_as_calibrated() {
        let f = FoldSpeed::default();
        let now = Instant::now();
        assert_eq!(f.observed(now), None);
        assert_eq!(f.level(20e9, now), 1.0);
    }

    #[test]
    fn folds_faster_than_calibrated_change_nothing() {
        let f = FoldSpeed::default();
        let now = Instant::now();
        // 32 MiB in 1 ms: 33.6 GB/s.
        f.record_at(32 * MIB, 1e-3, now);
        assert!((f.observed(now).unwrap() - 33.554e9).abs() < 0.01e9);
        assert_eq!(f.level(20e9, now), 1.0);
    }

    #[test]
    fn slow_folds_lower_the_level_in_steps() {
        let f = FoldSpeed::default();
        let now = Instant::now();
        // 32 MiB at 11 GB/s against 20 calibrated: 0.55, to the nearest 1/8: 4/8.
        f.record_at(32 * MIB, 32.0 * MIB as f64 / 11e9, now);
        assert_eq!(f.level(20e9, now), 0.5);
        // At 16 GB/s: 0.8, within the spread of ordinary processes.
        let h = FoldSpeed::default();
        h.record_at(32 * MIB, 32.0 * MIB as f64 / 16e9, now);
        assert_eq!(h.level(20e9, now), 1.0);
        // At 14.5 GB/s: 0.725, to the nearest eighth: 6/8.
        let j = FoldSpeed::default();
        j.record_at(32 * MIB, 32.0 * MIB as f64 / 14.5e9, now);
        assert_eq!(j.level(20e9, now), 0.75);
        // Hopelessly slow: one step, never zero.
        let g = FoldSpeed::default();
        g.record_at(32 * MIB, 1.0, now);
        assert_eq!(g.level(20e9, now), 1.0 / STEPS as f64);
    }

    #[test]
    fn small_and_broken_folds_are_not_counted() {
        let f = FoldSpeed::default();
        let now = Instant::now();
        f.record_at(MIN_BYTES - 1, 1.0, now);
        f.record_at(32 * MIB, 0.0, now);
        f.record_at(32 * MIB, f64::NAN, now);
        assert_eq!(f.observed(now), None);
    }

    #[test]
    fn newer_folds_outweigh_older_ones() {
        let f = FoldSpeed::default();
        let now = Instant::now();
        let at = |gbs: f64| 32.0 * MIB as f64 / (gbs * 1e9);
        for _ in 0..4 {
            f.record_at(32 * MIB, at(10.0), now);
        }
        // 2 GiB of folds at 30 GB/s: 8 half-lives, the slow ones are gone but for 0.4%.
        for _ in 0..64 {
            f.record_at(32 * MIB, at(30.0), now);
        }
        let r = f.observed(now).unwrap();
        assert!(r > 29.5e9 && r < 30.0e9, "{r}");
    }

    #[test]
    fn folds_beside_another_call_are_not_counted() {
        let f = FoldSpeed::default();
        let slow = 32.0 * MIB as f64 / 2e9;
        // One instant throughout: the threads never sleep between these folds.
        let now = Instant::now();
        // Two calls in flight: neither one's folds count.
        {
            let _one = f.call();
            let _two = f.call();
            let started = f.alone_since_at(now);
            assert_eq!(started, None);
            f.record_alone_at(started, 32 * MIB, slow, now);
        }
        assert_eq!(f.observed(now), None);
        // Alone when the fold started, but another call entered (and left) before it ended.
        let one = f.call();
        let started = f.alone_since_at(now);
        assert!(started.is_some());
        drop(f.call());
        f.record_alone_at(started, 32 * MIB, slow, now);
        assert_eq!(f.observed(now), None);
        // Alone throughout: counted (the other call has gone).
        let started = f.alone_since_at(now);
        f.record_alone_at(started, 32 * MIB, slow, now);
        drop(one);
        let r = f.observed(now).unwrap();
        assert!((r - 2e9).abs() < 1e6, "{r}");
        assert_eq!(f.level(20e9, now), 1.0 / STEPS as f64);
    }

    /// A fold that finds the threads asleep is recorded without their wake, which the model
    /// prices apart; the next fold, right after, is recorded whole; a cold fold hardly longer
    /// than the wake is not recorded.
    #[test]
    fn a_fold_that_wakes_the_threads_is_recorded_without_the_wake() {
        let wake = crate::fold::FIRST_S;
        let at = |gbs: f64| 32.0 * MIB as f64 / (gbs * 1e9);
        let f = FoldSpeed::default();
        let t0 = Instant::now();
        let first = f.alone_since_at(t0);
        assert!(first.is_some_and(|s| s.woke));
        let t1 = t0 + Duration::from_secs_f64(at(20.0) + wake);
        f.record_alone_at(first, 32 * MIB, at(20.0) + wake, t1);
        let r = f.observed(t1).unwrap();
        assert!((r - 20e9).abs() < 1e6, "{r}");
        // Back to back: awake, recorded as it ran (10 GB/s, weighed with the first).
        let second = f.alone_since_at(t1 + Duration::from_micros(20));
        assert!(second.is_some_and(|s| !s.woke));
        let t2 = t1 + Duration::from_secs_f64(at(10.0));
        f.record_alone_at(second, 32 * MIB, at(10.0), t2);
        let r = f.observed(t2).unwrap();
        assert!(r > 12e9 && r < 14e9, "{r}");
        // Asleep only after more than the gap.
        assert!(f.alone_since_at(t2 + WAKE_GAP).is_some_and(|s| !s.woke));
        let after = t2 + WAKE_GAP + Duration::from_micros(1);
        assert!(f.alone_since_at(after).is_some_and(|s| s.woke));
        // After a pause the threads sleep again; a 4 MiB fold of 150 us is mostly wake.
        let g = FoldSpeed::default();
        let late = t2 + WAKE_GAP + Duration::from_micros(1);
        let cold = g.alone_since_at(late);
        assert!(cold.is_some_and(|s| s.woke));
        g.record_alone_at(cold, 4 * MIB, 1.5 * wake, late);
        assert_eq!(g.observed(late), None);
        // Folds of another call keep the threads awake for this one's, though uncounted.
        let h = FoldSpeed::default();
        {
            let _one = h.call();
            let _two = h.call();
            h.record_alone_at(h.alone_since_at(t0), 32 * MIB, at(5.0), t1);
        }
        assert_eq!(h.observed(t1), None);
        assert!(h.alone_since_at(t1).is_some_and(|s| !s.woke));
    }

    #[test]
    fn an_old_observation_is_forgotten() {
        let f = FoldSpeed::default();
        let then = Instant::now();
        f.record_at(32 * MIB, 1.0, then);
        let later = then + FORGET_AFTER + Duration::from_millis(1);
        assert_eq!(f.observed(later), None);
        assert_eq!(f.level(20e9, later), 1.0);
        // A new fold after the gap starts afresh: the slow one no longer counts.
        f.record_at(32 * MIB, 1e-3, later);
        assert!(f.observed(later).unwrap() > 30e9);
        f.reset();
        assert_eq!(f.observed(later), None);
    }
}
