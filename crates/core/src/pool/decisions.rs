//! The decision cache: what the autotuner decided per problem and options, so that a repeated
//! call pays nothing for it. Bounded like the plan cache.

use crate::autotune::Decision;
use crate::error::Result;
use crate::problem::GemmProblem;
use crate::tiling::Blocking;
use std::collections::HashMap;
use std::sync::Mutex;

/// The most decisions kept; the cache is emptied when it is full.
const CAPACITY: usize = 1024;

/// (problem, devices asked for, blocking asked for, memory limit, host fold mode asked for,
/// objective).
pub(super) type DecisionKey = (
    GemmProblem,
    Option<Vec<usize>>,
    Option<Blocking>,
    Option<u64>,
    crate::autotune::FoldRequest,
    crate::energy::Objective,
);

#[derive(Default)]
pub(super) struct DecisionCache {
    decisions: Mutex<HashMap<DecisionKey, Decision>>,
}

impl DecisionCache {
    /// The cached decision for `key`, else `decide()`'s, cached.
    pub(super) fn get_or_decide(
        &self,
        key: &DecisionKey,
        decide: impl FnOnce() -> Result<Decision>,
    ) -> Result<Decision> {
        if let Some(d) = lock(&self.decisions).get(key) {
            return Ok(d.clone());
        }
        let d = decide()?;
        let mut c = lock(&self.decisions);
        if c.len() >= CAPACITY {
            c.clear();
        }
        c.insert(key.clone(), d.clone());
        Ok(d)
    }

    /// Forgets the decision for `key` (its memory budgets are out of date).
    pub(super) fn forget(&self, key: &DecisionKey) {
        lock(&self.decisions).remove(key);
    }

    pub(super) fn clear(&self) {
        lock(&self.decisions).clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the cache stays valid.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
