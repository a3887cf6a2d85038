//! The pool's side of the simulator: the plan a call ran (GEMM or TRSM/TRMM), replayed against
//! a profile with the real queues' names, so the predicted timeline sits beside the real one
//! queue by queue.

use super::options::GemmReport;
use super::tri::TriReport;
use super::DevicePool;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::plan::{Plan, QueueId};
use crate::profile::MachineProfile;
use crate::sim::{simulate, SimRequest, Simulation};
use std::sync::Arc;

impl DevicePool {
    /// Simulates the plan of a finished GEMM call (`report.plan`) against `profile` (the
    /// pool's own when `None`). Queues carry the names the executor's trace gives them.
    ///
    /// # Errors
    /// `InvalidInput` for a report without a plan (a quick return) or naming devices this
    /// pool does not have; `Profile` without a profile or when it lacks what the plan uses.
    pub fn simulate_report(
        &self,
        report: &GemmReport,
        profile: Option<&MachineProfile>,
    ) -> Result<Simulation> {
        self.simulate_ran(report.plan.as_deref(), &report.devices, profile)
    }

    /// [`DevicePool::simulate_report`] for a finished TRSM or TRMM call.
    ///
    /// # Errors
    /// As [`DevicePool::simulate_report`].
    pub fn simulate_tri_report(
        &self,
        report: &TriReport,
        profile: Option<&MachineProfile>,
    ) -> Result<Simulation> {
        self.simulate_ran(report.plan.as_deref(), &report.devices, profile)
    }

    /// Replays `plan`, run on the pool's devices `labels` (per plan device).
    fn simulate_ran(
        &self,
        plan: Option<&Plan>,
        labels: &[String],
        profile: Option<&MachineProfile>,
    ) -> Result<Simulation> {
        let plan = plan
            .ok_or_else(|| Error::InvalidInput("the call ran no plan (a quick return)".into()))?;
        let own = self.profile();
        let profile = profile
            .or(own.as_deref())
            .ok_or_else(|| Error::Profile("no profile to simulate with".into()))?;
        let devices: Vec<Arc<dyn Device>> = labels
            .iter()
            .map(|l| {
                self.devices
                    .iter()
                    .find(|d| d.info().label() == *l)
                    .cloned()
                    .ok_or_else(|| Error::InvalidInput(format!("no device {l} in this pool")))
            })
            .collect::<Result<_>>()?;
        // The executors' queues: compute queue `index` modulo the device's queues, a link's
        // own queue.
        let names = |q: QueueId| -> String {
            match q {
                QueueId::Compute { device, index } => {
                    let qs = devices[device as usize].compute_queues();
                    if qs.is_empty() {
                        format!("{}/compute{index}", labels[device as usize])
                    } else {
                        qs[index as usize % qs.len()].name().to_string()
                    }
                }
                QueueId::Link { src, dst } => self
                    .link(src, dst)
                    .map_or_else(|| format!("{src}->{dst}"), |l| l.queue().name().to_string()),
                QueueId::HostFold => "host-fold".to_string(),
            }
        };
        simulate(&SimRequest {
            plan,
            profile,
            devices: labels,
            queue_names: Some(&names),
        })
    }
}
