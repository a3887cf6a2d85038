//! The makespan of a triangular plan's DAG: a list-schedule replay in issue order, each device's
//! compute one server (its queues share its arithmetic units) and each link one server, every
//! task starting when its predecessors are done and its server is free. It sees both limits a
//! TRSM has: the critical path of dependent diagonal solves and updates, and the throughput of
//! the devices and links.

use crate::memory::MemorySpace;
use crate::plan::tri::{TriPlan, TriTaskKind};
use crate::plan::QueueId;
use std::collections::HashMap;

/// Share of a device's GEMM rate that its tile TRSM/TRMM reaches. Calibration does not measure
/// the triangular kernels yet; vendor TRSM on large tiles runs at roughly this share of GEMM.
pub const TRI_EFFICIENCY: f64 = 0.6;

/// What the replay needs to know of the plan's devices and links.
pub struct TriRates<'a> {
    /// Per plan device: GEMM flop/s at the plan's tile size.
    pub gemm: Vec<f64>,
    /// Seconds to move `bytes` from `src` to `dst`.
    pub link: &'a dyn Fn(MemorySpace, MemorySpace, usize) -> f64,
}

/// The replay's answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TriPrediction {
    /// Predicted seconds from the first issue to the last completion.
    pub seconds: f64,
    /// Per plan device: seconds its compute is busy.
    pub compute: Vec<f64>,
    /// Seconds of the longest chain of dependent tasks (no waiting for servers).
    pub critical_path: f64,
}

/// Replays `plan` against `rates`.
pub fn replay(plan: &TriPlan, rates: &TriRates<'_>) -> TriPrediction {
    let p = &plan.problem;
    let fma = p.dtype.flops_per_fma();
    let es = p.dtype.size();
    let n = plan.tasks.len();
    let mut end = vec![0.0f64; n];
    let mut chain = vec![0.0f64; n];
    let mut free: HashMap<(u16, QueueId), f64> = HashMap::new();
    let mut compute = vec![0.0; plan.devices.len()];
    for (id, t) in plan.tasks.iter().enumerate() {
        let d = t.device as usize;
        let (dur, server) = match t.kind {
            TriTaskKind::Fetch { key, .. } => {
                let b = plan.block(key);
                let src = match key {
                    crate::plan::tri::TriKey::A { .. } => plan.locations[0],
                    crate::plan::tri::TriKey::B { .. } => plan.locations[1],
                };
                (
                    (rates.link)(src, plan.devices[d].space, b.rows * b.cols * es),
                    (0, t.queue),
                )
            }
            TriTaskKind::WriteBack { key, .. } => {
                let b = plan.block(key);
                (
                    (rates.link)(
                        plan.devices[d].space,
                        plan.locations[1],
                        b.rows * b.cols * es,
                    ),
                    (0, t.queue),
                )
            }
            TriTaskKind::Diag { k, j, .. } => {
                let b = plan.block(crate::plan::tri::TriKey::B { k, j });
                let order = plan.block_span(k as usize).1 as f64;
                let f = fma * 0.5 * order * (b.rows * b.cols) as f64;
                (f / (rates.gemm[d] * TRI_EFFICIENCY), (1, compute_server(d)))
            }
            TriTaskKind::Update { i, k, j, .. } => {
                let c = plan.block(crate::plan::tri::TriKey::B { k: i, j });
                let kk = plan.block_span(k as usize).1 as f64;
                let f = fma * kk * (c.rows * c.cols) as f64;
                (f / rates.gemm[d], (1, compute_server(d)))
            }
        };
        let ready = t.deps.iter().map(|&x| end[x as usize]).fold(0.0, f64::max);
        let slot = free.entry(server).or_insert(0.0);
        let start = ready.max(*slot);
        end[id] = start + dur;
        *slot = end[id];
        chain[id] = t
            .deps
            .iter()
            .map(|&x| chain[x as usize])
            .fold(0.0, f64::max)
            + dur;
        if server.0 == 1 {
            compute[d] += dur;
        }
    }
    TriPrediction {
        seconds: end.iter().copied().fold(0.0, f64::max),
        compute,
        critical_path: chain.iter().copied().fold(0.0, f64::max),
    }
}

/// The one compute server of plan device `d` (whatever queue a task names).
fn compute_server(d: usize) -> QueueId {
    QueueId::Compute {
        device: d as u16,
        index: 0,
    }
}
