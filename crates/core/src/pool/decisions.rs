//! The decision caches: what the model decided per problem and options (GEMM's autotuner, the
//! TRSM/TRMM and factorization choices), so that a repeated call pays nothing for it. Bounded
//! like the plan cache.

// A poisoned lock only means a panic elsewhere; the cache stays valid.
use crate::error::lock;
use crate::error::Result;
use crate::problem::GemmProblem;
use crate::tiling::Blocking;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The most decisions kept; the cache is emptied when it is full.
const CAPACITY: usize = 1024;

/// A GEMM decision's key: (problem, devices asked for, blocking asked for, memory limit, host
/// fold mode asked for, objective).
pub(super) type DecisionKey = (
    GemmProblem,
    Option<Vec<usize>>,
    Option<Blocking>,
    Option<u64>,
    crate::autotune::FoldRequest,
    crate::energy::Objective,
);

/// One routine family's decisions by key.
pub(super) struct DecisionCache<K, V> {
    decisions: Mutex<HashMap<K, V>>,
    /// Bumped by every [`DecisionCache::clear`]: a decision made while the cache was cleared
    /// (from what the clear made out of date: a failed device, an old fold price) is used by
    /// its call but not kept.
    generation: AtomicU64,
}

impl<K, V> Default for DecisionCache<K, V> {
    fn default() -> Self {
        DecisionCache {
            decisions: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
        }
    }
}

impl<K: Eq + Hash + Clone, V: Clone> DecisionCache<K, V> {
    /// The cached decision for `key` (and `true`), else `decide()`'s, cached (and `false`).
    pub(super) fn get_or_decide(
        &self,
        key: &K,
        decide: impl FnOnce() -> Result<V>,
    ) -> Result<(V, bool)> {
        let generation = {
            let c = lock(&self.decisions);
            if let Some(d) = c.get(key) {
                return Ok((d.clone(), true));
            }
            self.generation.load(Ordering::Acquire)
        };
        let d = decide()?;
        let mut c = lock(&self.decisions);
        if self.generation.load(Ordering::Acquire) != generation {
            return Ok((d, false));
        }
        if c.len() >= CAPACITY {
            c.clear();
        }
        c.insert(key.clone(), d.clone());
        Ok((d, false))
    }

    /// Forgets the decision for `key` (its memory budgets are out of date, or a device it
    /// names failed).
    pub(super) fn forget(&self, key: &K) {
        lock(&self.decisions).remove(key);
    }

    pub(super) fn clear(&self) {
        let mut c = lock(&self.decisions);
        self.generation.fetch_add(1, Ordering::AcqRel);
        c.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autotune::Decision;
    use crate::problem::GemmProblem;
    use crate::scalar::DType;
    use crate::tiling::TileGrid;
    use crate::{MemorySpace, Trans};

    fn key() -> DecisionKey {
        let problem = GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m: 8,
            n: 8,
            k: 8,
            dtype: DType::F64,
            beta_zero: false,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        };
        (
            problem,
            None,
            None,
            None,
            Default::default(),
            Default::default(),
        )
    }

    fn decision(tile: usize) -> Decision {
        Decision {
            devices: vec![0],
            weights: vec![1.0],
            grid: TileGrid {
                m: 8,
                n: 8,
                k: 8,
                tm: tile,
                tn: tile,
                tk: tile,
            },
            group: 1,
            budgets: vec![1 << 20],
            host_fold: false,
            fold_tail: 0,
            strip: None,
            balancer_weights: vec![1.0],
            left_out: vec![],
            prices: None,
        }
    }

    #[test]
    fn a_decision_made_across_a_clear_is_not_kept() {
        let cache = DecisionCache::<DecisionKey, Decision>::default();
        // The cache is cleared while the decision is made (another call found it out of
        // date): this call uses it, the next decides again.
        let (d, _) = cache
            .get_or_decide(&key(), || {
                cache.clear();
                Ok(decision(4))
            })
            .unwrap();
        assert_eq!(d.grid.tm, 4);
        let (d, _) = cache.get_or_decide(&key(), || Ok(decision(2))).unwrap();
        assert_eq!(d.grid.tm, 2);
        // Made without a clear in between, it is kept.
        let (d, _) = cache.get_or_decide(&key(), || Ok(decision(8))).unwrap();
        assert_eq!(d.grid.tm, 2);
    }
}
