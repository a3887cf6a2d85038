//! Waiting for an emulated device's deadline: the throttles of copies and kernels end here.
//!
//! A plain `thread::sleep` wakes late by the kernel's timer slack and the scheduler's wake-up
//! (50-60 us on an idle machine, more and more variable on a busy 2-core one), so an emulated
//! link of 200 us latency ran anywhere from 250 to 300 us a copy, and what calibration fitted
//! moved with the load. Sleeping to a margin before the deadline and yielding the rest keeps
//! the emulated rates what they were configured to be.

use std::time::{Duration, Instant};

/// Slept short of the deadline by this much; the rest is yielded away.
const MARGIN: Duration = Duration::from_micros(120);

/// Returns at `deadline` (or at once, when it has passed).
pub fn wait_until(deadline: Instant) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    if let Some(sleep) = (deadline - now).checked_sub(MARGIN) {
        std::thread::sleep(sleep);
    }
    while Instant::now() < deadline {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_at_the_deadline_not_long_after() {
        // The median of 21 waits of 200 us: a plain sleep overshoots by the timer slack (50 us
        // or more); this must land within 40 us.
        let mut late: Vec<Duration> = (0..21)
            .map(|_| {
                let deadline = Instant::now() + Duration::from_micros(200);
                wait_until(deadline);
                Instant::now() - deadline
            })
            .collect();
        late.sort();
        assert!(
            late[10] < Duration::from_micros(40),
            "median {:?}",
            late[10]
        );
    }
}
