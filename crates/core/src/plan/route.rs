//! Routing: how a tile reaches the device slot that needs it. From its origin over the direct
//! link; from another device that already holds it, over a faster peer link (NVLink before
//! PCIe); or, between spaces with no link (devices of two backends), through a host staging
//! slot in two hops. Finished C tiles leave through host staging the same way.

use super::builder::{Builder, DeviceState};
use super::task::{QueueId, Source, TaskId, TaskKind, TileLoc};
use crate::error::Result;
use crate::memory::MemorySpace;
use crate::problem::Operand;
use crate::tiling::TileKey;

impl Builder<'_> {
    /// Makes an A or B tile available on the device; returns its location and the fetch (if any)
    /// that a reader must wait for.
    pub(super) fn ensure(
        &mut self,
        states: &mut [DeviceState],
        d: usize,
        key: TileKey,
        pinned: &[TileKey],
    ) -> Result<(TileLoc, Option<TaskId>)> {
        let st = &mut states[d];
        if st.in_place(&self.p, key.op) {
            return Ok((TileLoc::InPlace, None));
        }
        if let Some(&slot) = st.resident.get(&key) {
            return Ok((TileLoc::Slot(slot), st.filled_by.get(&key).copied()));
        }
        let peer = self.best_peer(states, d, key);
        let st = &mut states[d];
        let (slot, waits) = self.acquire(st, key, pinned)?;
        let fetch = match peer {
            None => self.fetch(st, key, slot, waits),
            Some((e, e_slot, filled)) => {
                let mut deps = waits;
                deps.push(filled);
                let id = self.push(
                    st.dev,
                    TaskKind::Fetch {
                        key,
                        source: Source::Peer {
                            device: e,
                            slot: e_slot,
                        },
                        slot,
                    },
                    QueueId::Link {
                        src: states[e as usize].space,
                        dst: states[d].space,
                    },
                    deps,
                );
                // The holder may not reuse its slot before this copy is done.
                states[e as usize].readers[e_slot as usize].push(id);
                states[d].filled_by.insert(key, id);
                id
            }
        };
        self.holders
            .entry(key)
            .or_default()
            .push((states[d].dev, slot, fetch));
        Ok((TileLoc::Slot(slot), Some(fetch)))
    }

    /// The holder of `key` with the fastest link to device `d`, if that link beats the one
    /// from the tile's origin (by 20%: forwarding adds a dependency on the holder's fetch).
    fn best_peer(
        &self,
        states: &[DeviceState],
        d: usize,
        key: TileKey,
    ) -> Option<(u16, u32, TaskId)> {
        let speed = self.link_speed?;
        let dst = states[d].space;
        // A device that accumulates C in its own memory, in place, neither takes tiles from a
        // peer nor gives them: its products must depend on no other device, or a device that
        // fails would leave its C tiles half-accumulated, their old values gone.
        let c_home = self.p.location(crate::problem::Operand::C);
        if dst == c_home {
            return None;
        }
        let origin = speed(self.p.location(key.op), dst).unwrap_or(0.0);
        self.holders
            .get(&key)?
            .iter()
            .filter(|&&(e, _, _)| e as usize != d && states[e as usize].space != c_home)
            .filter_map(|&(e, slot, filled)| {
                speed(states[e as usize].space, dst).map(|bw| (bw, (e, slot, filled)))
            })
            .filter(|&(bw, _)| bw > 1.2 * origin)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, h)| h)
    }

    pub(super) fn fetch(
        &mut self,
        st: &mut DeviceState,
        key: TileKey,
        slot: u32,
        waits: Vec<TaskId>,
    ) -> TaskId {
        let src = self.p.location(key.op);
        let id = if self.links.contains(&(src, st.space)) {
            self.push(
                st.dev,
                TaskKind::Fetch {
                    key,
                    source: Source::Origin,
                    slot,
                },
                QueueId::Link { src, dst: st.space },
                waits,
            )
        } else {
            // No direct link (devices of two backends): through a host staging slot.
            let (host, host_waits) = self.host_slot();
            let stage = self.push(
                st.dev,
                TaskKind::StageIn { key, host },
                QueueId::Link {
                    src,
                    dst: MemorySpace::HOST,
                },
                host_waits,
            );
            let mut deps = waits;
            deps.push(stage);
            let id = self.push(
                st.dev,
                TaskKind::Fetch {
                    key,
                    source: Source::Staged { host },
                    slot,
                },
                QueueId::Link {
                    src: MemorySpace::HOST,
                    dst: st.space,
                },
                deps,
            );
            self.host_ring[host as usize].push(id);
            id
        };
        st.filled_by.insert(key, id);
        let (r, c) = self.grid.op_shape(key);
        st.fetched += r * c;
        id
    }

    /// A finished C tile from device slot `slot` into the next host staging slot, after
    /// `after`; returns the task and the staging slot.
    pub(super) fn stage_out(
        &mut self,
        st: &DeviceState,
        key: TileKey,
        slot: u32,
        after: TaskId,
    ) -> (TaskId, u32) {
        let (host, mut waits) = self.host_slot();
        waits.push(after);
        let out = self.push(
            st.dev,
            TaskKind::StageOut { key, slot, host },
            QueueId::Link {
                src: st.space,
                dst: MemorySpace::HOST,
            },
            waits,
        );
        (out, host)
    }

    /// A finished C tile from `slot` back to C's location after `after`: folded on the host
    /// (through a staging slot), over the direct link, or staged through host memory when
    /// there is none; a tile that travels `whole` (a rank update's diagonal tile) is never
    /// folded. Returns the task the slot's reuse must wait for.
    pub(super) fn write_back(
        &mut self,
        st: &DeviceState,
        kc: TileKey,
        slot: u32,
        after: TaskId,
        whole: bool,
    ) -> TaskId {
        let c_space = self.p.location(Operand::C);
        if st.folds(kc.r as usize, kc.c as usize) && !whole {
            let (out, host) = self.stage_out(st, kc, slot, after);
            let f = self.push(
                st.dev,
                TaskKind::FoldC { key: kc, host },
                QueueId::HostFold,
                vec![out],
            );
            self.host_ring[host as usize].push(f);
            out
        } else if self.links.contains(&(st.space, c_space)) {
            self.push(
                st.dev,
                TaskKind::WriteBack { key: kc, slot },
                QueueId::Link {
                    src: st.space,
                    dst: c_space,
                },
                vec![after],
            )
        } else {
            let (out, host) = self.stage_out(st, kc, slot, after);
            let un = self.push(
                st.dev,
                TaskKind::Unstage { key: kc, host },
                QueueId::Link {
                    src: MemorySpace::HOST,
                    dst: c_space,
                },
                vec![out],
            );
            self.host_ring[host as usize].push(un);
            out
        }
    }
}
