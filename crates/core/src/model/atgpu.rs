//! The ATGPU abstract cost model (an abstract GPU model with host-device transfer), kept as a
//! point of comparison for the calibrated models.
//!
//! An algorithm runs in `R` rounds. Round i moves `I_i` words in `Î_i` transactions to the
//! device at its start and `O_i` words in `Ô_i` transactions back at its end, executes at most
//! `t_i` operations on any multiprocessor and touches `q_i` global-memory blocks. With
//! `α` the cost of a transfer transaction, `β` of a transferred word, `γ` the operation rate,
//! `λ` the cycles of one global memory block access and `σ` the fixed synchronisation cost:
//!
//! - `T_I(i) = Î_i α + I_i β`, `T_O(i) = Ô_i α + O_i β`
//! - Expression 1 ("perfect GPU", every block resident at once):
//!   `sum_i T_I(i) + (t_i + λ q_i)/γ + T_O(i) + σ`
//! - Expression 2 (GPU cost with occupancy: `k` thread blocks on `k'` multiprocessors holding
//!   `ℓ = min(floor(M/m), H)` blocks each run in `ceil(k/(k' ℓ))` waves):
//!   `sum_i T_I(i) + (ceil(k/(k' ℓ)) t_i + λ q_i)/γ + T_O(i) + σ`
//!
//! The wave count multiplies the operation term only, as Expression 2 and DESIGN.md write it
//! (the paper's vector-addition example multiplies the whole fraction; the expression is taken
//! as authoritative).
//!
//! Units: with `α`, `β`, `σ` in seconds and `γ` in operations (cycles) per second, costs are
//! seconds.

use serde::{Deserialize, Serialize};

/// Machine parameters of the ATGPU model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AtgpuParams {
    /// `α`: cost of one transfer transaction (s).
    pub alpha: f64,
    /// `β`: cost of one transferred word (s).
    pub beta: f64,
    /// `γ`: operations (cycles) per second of a multiprocessor.
    pub gamma: f64,
    /// `λ`: cycles to access one global memory block.
    pub lambda: f64,
    /// `σ`: fixed synchronisation cost per round (s).
    pub sigma: f64,
}

/// What one round of an algorithm does.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct AtgpuRound {
    /// `Î_i`: host -> device transfer transactions.
    pub in_transactions: f64,
    /// `I_i`: words moved host -> device.
    pub in_words: f64,
    /// `Ô_i`: device -> host transfer transactions.
    pub out_transactions: f64,
    /// `O_i`: words moved device -> host.
    pub out_words: f64,
    /// `t_i`: the most operations any multiprocessor executes.
    pub ops: f64,
    /// `q_i`: global memory blocks accessed by all multiprocessors.
    pub io_blocks: f64,
    /// `k`: thread blocks of the round's kernel.
    pub thread_blocks: u64,
}

impl AtgpuRound {
    /// The shared-memory tiled matrix multiplication of the paper (n x n matrices, b x b
    /// blocks), with its asymptotic counts taken with constant 1: `(n/b)^2` thread blocks,
    /// `t = n b`, `q = (n/b)^2 (n + b)`, A and B in (2 transactions, `2 n^2` words), C out
    /// (1 transaction, `n^2` words).
    pub fn shared_memory_gemm(n: u64, b: u64) -> AtgpuRound {
        let nb = n.div_ceil(b.max(1));
        let (nf, bf) = (n as f64, b as f64);
        AtgpuRound {
            in_transactions: 2.0,
            in_words: 2.0 * nf * nf,
            out_transactions: 1.0,
            out_words: nf * nf,
            ops: nf * bf,
            io_blocks: (nb * nb) as f64 * (nf + bf),
            thread_blocks: nb * nb,
        }
    }
}

/// How many thread blocks a GPU runs at once: `k'` multiprocessors times `ℓ` per multiprocessor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupancy {
    /// `k'`: multiprocessors.
    pub multiprocessors: u64,
    /// `ℓ`: resident blocks per multiprocessor.
    pub blocks_per_mp: u64,
}

impl Occupancy {
    /// `ℓ = min(floor(M / m), H)` from the shared memory per multiprocessor `M`, per block `m`
    /// and the hardware limit `H`.
    pub fn from_shared_memory(
        multiprocessors: u64,
        shared_per_mp: u64,
        shared_per_block: u64,
        hw_limit: u64,
    ) -> Occupancy {
        let fit = shared_per_mp
            .checked_div(shared_per_block)
            .unwrap_or(hw_limit);
        Occupancy {
            multiprocessors,
            blocks_per_mp: fit.min(hw_limit),
        }
    }

    /// `ceil(k / (k' ℓ))`; `None` when no block fits (`k' ℓ == 0`) and there is work.
    pub fn waves(&self, thread_blocks: u64) -> Option<u64> {
        if thread_blocks == 0 {
            return Some(0);
        }
        let slots = self.multiprocessors.checked_mul(self.blocks_per_mp)?;
        if slots == 0 {
            None
        } else {
            Some(thread_blocks.div_ceil(slots))
        }
    }
}

impl AtgpuParams {
    /// `T_I(i)`.
    pub fn transfer_in(&self, r: &AtgpuRound) -> f64 {
        r.in_transactions * self.alpha + r.in_words * self.beta
    }

    /// `T_O(i)`.
    pub fn transfer_out(&self, r: &AtgpuRound) -> f64 {
        r.out_transactions * self.alpha + r.out_words * self.beta
    }

    /// Expression 1: the cost on a GPU that runs every block at once.
    pub fn cost(&self, rounds: &[AtgpuRound]) -> f64 {
        rounds
            .iter()
            .map(|r| {
                self.transfer_in(r)
                    + (r.ops + self.lambda * r.io_blocks) / self.gamma
                    + self.transfer_out(r)
                    + self.sigma
            })
            .sum()
    }

    /// Expression 2: the cost with occupancy waves. Infinite when a round has blocks but the
    /// GPU can hold none.
    pub fn gpu_cost(&self, rounds: &[AtgpuRound], occupancy: Occupancy) -> f64 {
        rounds
            .iter()
            .map(|r| match occupancy.waves(r.thread_blocks) {
                None => f64::INFINITY,
                Some(w) => {
                    self.transfer_in(r)
                        + (w as f64 * r.ops + self.lambda * r.io_blocks) / self.gamma
                        + self.transfer_out(r)
                        + self.sigma
                }
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs()
    }

    fn params() -> AtgpuParams {
        AtgpuParams {
            alpha: 10e-6,
            beta: 1e-9,
            gamma: 1e9,
            lambda: 400.0,
            sigma: 1e-5,
        }
    }

    /// The paper's vector addition (n = 10^6, blocks of 32): `α 3 + β 3n + (13 + λ 3k)/γ + σ`.
    fn vector_add() -> AtgpuRound {
        AtgpuRound {
            in_transactions: 2.0,
            in_words: 2e6,
            out_transactions: 1.0,
            out_words: 1e6,
            ops: 13.0,
            io_blocks: 3.0 * 31250.0,
            thread_blocks: 31250,
        }
    }

    #[test]
    fn expression_1_by_hand() {
        // 3e-5 + 3e-3 + (13 + 400 * 93750) / 1e9 + 1e-5 = 0.040540013
        let c = params().cost(&[vector_add()]);
        assert!(rel(c, 0.040540013) < 1e-12, "{c}");
        // Two identical rounds cost twice as much.
        assert!(rel(params().cost(&[vector_add(); 2]), 2.0 * 0.040540013) < 1e-12);
    }

    #[test]
    fn expression_2_by_hand() {
        // 80 MPs x 2 blocks: ceil(31250 / 160) = 196 waves.
        let occ = Occupancy {
            multiprocessors: 80,
            blocks_per_mp: 2,
        };
        assert_eq!(occ.waves(31250), Some(196));
        // 3e-5 + 3e-3 + (196 * 13 + 37_500_000) / 1e9 + 1e-5 = 0.040542548
        let c = params().gpu_cost(&[vector_add()], occ);
        assert!(rel(c, 0.040542548) < 1e-12, "{c}");
        let none = Occupancy {
            multiprocessors: 80,
            blocks_per_mp: 0,
        };
        assert_eq!(params().gpu_cost(&[vector_add()], none), f64::INFINITY);
    }

    #[test]
    fn occupancy_and_gemm_round() {
        // 96 KiB per MP, 40 KiB per block, limit 16: 2 blocks.
        let o = Occupancy::from_shared_memory(132, 96 << 10, 40 << 10, 16);
        assert_eq!(o.blocks_per_mp, 2);
        // No shared memory used: the hardware limit.
        assert_eq!(
            Occupancy::from_shared_memory(1, 1024, 0, 32).blocks_per_mp,
            32
        );
        let r = AtgpuRound::shared_memory_gemm(1024, 32);
        assert_eq!(r.thread_blocks, 1024);
        assert_eq!(r.ops, 32768.0);
        assert_eq!(r.io_blocks, 1024.0 * 1056.0);
        assert_eq!(r.in_words, 2.0 * 1024.0 * 1024.0);
    }
}
