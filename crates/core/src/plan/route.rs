//! Routing: how a tile reaches the device slot that needs it. From its origin over the direct
//! link; from another device that already holds it, over a faster peer link (NVLink before
//! PCIe); or, between spaces with no link (devices of two backends), through a host staging
//! slot in two hops. Finished C tiles leave through host staging the same way.

use super::builder::{Builder, DeviceState, TileLoc};
use super::task::{Op, QueueId, TaskId};
use crate::error::Result;
use crate::memory::MemorySpace;
use crate::problem::Operand;
use crate::tiling::TileKey;

impl Builder<'_> {
    /// Makes an A or B tile available on the device; returns where the product finds it.
    pub(super) fn ensure(
        &mut self,
        states: &mut [DeviceState],
        d: usize,
        key: TileKey,
        pinned: &[TileKey],
    ) -> Result<TileLoc> {
        let st = &mut states[d];
        if st.in_place(&self.p, key.op) {
            return Ok(TileLoc::InPlace);
        }
        if let Some(&slot) = st.resident.get(&key) {
            return Ok(TileLoc::Slot(slot));
        }
        let peer = self.best_peer(states, d, key);
        let st = &mut states[d];
        let (dev, space) = (st.dev, st.space);
        let slot = self.acquire(st, key, pinned)?;
        match peer {
            None => {
                self.fetch(st, key, slot);
            }
            Some((e, e_slot)) => {
                let link = (states[e as usize].space, space);
                let (from, to) = (self.slot(e, e_slot, key), self.slot(dev, slot, key));
                let origin = Some(self.origin(key));
                self.graph.copy(dev, link, key, from, to, origin);
            }
        }
        self.holders.entry(key).or_default().push((dev, slot));
        Ok(TileLoc::Slot(slot))
    }

    /// The holder of `key` with the fastest link to device `d`, if that link beats the one
    /// from the tile's origin (by 20%: forwarding adds a dependency on the holder's fetch).
    fn best_peer(&self, states: &[DeviceState], d: usize, key: TileKey) -> Option<(u16, u32)> {
        let speed = self.req.link_speed?;
        let dst = states[d].space;
        // A device that accumulates C in its own memory, in place, neither takes tiles from a
        // peer nor gives them: its products must depend on no other device, or a device that
        // fails would leave its C tiles half-accumulated, their old values gone.
        let c_home = self.p.location(Operand::C);
        if dst == c_home {
            return None;
        }
        let origin = speed(self.p.location(key.op), dst).unwrap_or(0.0);
        self.holders
            .get(&key)?
            .iter()
            .filter(|&&(e, _)| e as usize != d && states[e as usize].space != c_home)
            .filter_map(|&(e, slot)| speed(states[e as usize].space, dst).map(|bw| (bw, (e, slot))))
            .filter(|&(bw, _)| bw > 1.2 * origin)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, h)| h)
    }

    /// Tile `key` from its origin into slot `slot` of the device: over the direct link, or
    /// through a host staging slot where there is none (devices of two backends).
    pub(super) fn fetch(&mut self, st: &mut DeviceState, key: TileKey, slot: u32) -> TaskId {
        let src = self.p.location(key.op);
        let (origin, to) = (self.origin(key), self.slot(st.dev, slot, key));
        let id = if self.req.links.contains(&(src, st.space)) {
            self.graph
                .copy(st.dev, (src, st.space), key, origin, to, None)
        } else {
            let staged = self.staging(key);
            self.graph
                .copy(st.dev, (src, MemorySpace::HOST), key, origin, staged, None);
            self.graph
                .copy(st.dev, (MemorySpace::HOST, st.space), key, staged, to, None)
        };
        let b = self.req.grid.stored_block(&self.p, key);
        st.fetched += b.rows * b.cols;
        id
    }

    /// A finished C tile from `slot` back to C's location: folded on the host (through a
    /// staging slot), over the direct link, or staged through host memory when there is none;
    /// a tile that travels `whole` (a rank update's diagonal tile) is never folded. The write
    /// into C finishes the tile. Returns the task that reads the slot.
    pub(super) fn write_back(
        &mut self,
        st: &DeviceState,
        kc: TileKey,
        slot: u32,
        whole: bool,
    ) -> TaskId {
        let c_space = self.p.location(Operand::C);
        let (from, c) = (self.slot(st.dev, slot, kc), self.origin(kc));
        let direct = self.req.links.contains(&(st.space, c_space));
        let folds = st.folds(kc.r as usize, kc.c as usize) && !whole;
        if direct && !folds {
            let wb = self
                .graph
                .copy(st.dev, (st.space, c_space), kc, from, c, None);
            self.graph.task_mut(wb).finishes = true;
            return wb;
        }
        // A device computing in host memory folds from its slot; others bring the tile to a
        // host staging slot first.
        let (staged, out) = if st.space.is_host() && folds {
            (from, None)
        } else {
            let staged = self.staging(kc);
            let link = (st.space, MemorySpace::HOST);
            let out = self.graph.copy(st.dev, link, kc, from, staged, None);
            (staged, Some(out))
        };
        let last = if folds {
            self.host_folds = true;
            let mask = st.region.mask(kc.r as usize, kc.c as usize);
            // C in a device's memory (a tile the region holds in part) is folded in host
            // staging and goes back.
            let c_host = if c_space.is_host() {
                c
            } else {
                let c_host = self.staging(kc);
                self.graph
                    .copy(st.dev, (c_space, MemorySpace::HOST), kc, c, c_host, None);
                c_host
            };
            let fold = Op::Fold {
                key: kc,
                c: c_host,
                staged,
                mask,
            };
            let fold = self.graph.add(st.dev, QueueId::HostFold, fold);
            if c_space.is_host() {
                fold
            } else {
                self.graph
                    .copy(st.dev, (MemorySpace::HOST, c_space), kc, c_host, c, None)
            }
        } else {
            self.graph
                .copy(st.dev, (MemorySpace::HOST, c_space), kc, staged, c, None)
        };
        self.graph.task_mut(last).finishes = true;
        out.unwrap_or(last)
    }
}
