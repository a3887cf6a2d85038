//! How a panel travels from its owner to the other processes of a grid row or column.
//!
//! Two transports, chosen per call ([`Transport`]):
//! - `MPI_Ibcast`, one collective per k-block. Open MPI implements it in libnbc, whose
//!   schedule advances only inside MPI calls on this process; for messages of gigabytes it
//!   moved about 2 GB/s between two ranks of one node.
//! - A chain of point-to-point messages in chunks: the root sends each chunk to the next
//!   process of the group, which forwards it as soon as it has arrived, and so on. Every chunk
//!   is posted at once (the receiver's `MPI_Irecv`s before the data arrives), so the MPI
//!   library can keep several transfers in flight, and the forwarding overlaps the arrival of
//!   the next chunks: a chain of `p` processes takes about `bytes / bandwidth + (p - 2) *
//!   chunk / bandwidth`, independent of `log p`.

use mpi::datatype::Equivalence;
use mpi::request::{Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::collections::VecDeque;

/// The transport of the panel broadcasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One `MPI_Ibcast` per k-block.
    Ibcast,
    /// Point-to-point messages of at most `chunk_bytes`, forwarded along a chain.
    Chain { chunk_bytes: usize },
    /// No copy between processes of one node: panels in a shared-memory window
    /// ([`crate::shared`]), read by every process of the group from the owner's segment.
    /// Used for a group whose processes share a node when every panel is one k-block; the
    /// other groups, and calls whose panels join several k-blocks, use the default chain.
    Shared,
}

impl Default for Transport {
    fn default() -> Self {
        Transport::Chain {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
        }
    }
}

/// Chunks of 64 MiB: large enough that the per-message cost (a rendezvous) is negligible,
/// small enough that a chain of a few processes forwards while receiving.
pub const DEFAULT_CHUNK_BYTES: usize = 64 << 20;

impl std::str::FromStr for Transport {
    type Err = String;

    /// `ibcast`, `chain` (64 MiB chunks), `chain:MIB` or `shared`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            None if s == "ibcast" => Ok(Transport::Ibcast),
            None if s == "chain" => Ok(Transport::default()),
            None if s == "shared" => Ok(Transport::Shared),
            Some(("chain", mib)) => match mib.parse::<usize>() {
                Ok(m) if m > 0 => Ok(Transport::Chain {
                    chunk_bytes: m << 20,
                }),
                _ => Err(format!(
                    "transport {s:?}: chunk MiB must be a positive integer"
                )),
            },
            _ => Err(format!(
                "transport {s:?}: expected ibcast, chain or chain:MIB"
            )),
        }
    }
}

/// Tags of the chain's messages: one per k-block of a call, so that chunks of different
/// k-blocks between the same two processes never match each other's receives (a process may
/// forward one k-block while it sends its own next one). MPI guarantees tags up to 32767:
/// the data and "ready" signals take 0..16000, the "done" signals 16000..32000.
pub(crate) fn block_tag(seq: usize) -> i32 {
    (seq % 16_000) as i32
}

/// The tag of the signal a reader sends the owner when it no longer reads a shared k-block.
pub(crate) fn done_tag(seq: usize) -> i32 {
    16_000 + block_tag(seq)
}

/// How the root fills its buffer: `fill(start, out)` writes elements `start..start + out.len()`
/// (packing them from the local matrix), one chunk at a time, so that the first chunks travel
/// while the next are packed.
pub(crate) type Fill<'f, T> = &'f dyn Fn(usize, &mut [T]);

/// One k-block's broadcast in progress on this process.
pub(crate) struct PanelBroadcast<'a, 'c, T, S: Scope<'a>> {
    comm: &'c SimpleCommunicator,
    tag: i32,
    /// The collective, for [`Transport::Ibcast`].
    collective: Option<Request<'a, [T], S>>,
    /// Chain: receives in chunk order, and where to forward each chunk once it arrived.
    receives: VecDeque<Request<'a, [T], S>>,
    next: Option<i32>,
    sends: Vec<Request<'a, [T], S>>,
    /// Shared windows: the owner's "ready" to every other process, or the one a reader waits
    /// for (empty messages).
    signals: Vec<Request<'a, [u8], S>>,
    scope: S,
}

impl<'a, 'c, T: Equivalence, S: Scope<'a> + Copy> PanelBroadcast<'a, 'c, T, S> {
    /// Posts the broadcast of `buf` from `root` (a rank of `comm`) to every process of
    /// `comm`. The root fills `buf` through `fill` (given on the root only; a root without it
    /// sends `buf` as it is); `tick` is called between chunks, to move other broadcasts along
    /// while this one is packed.
    #[allow(clippy::too_many_arguments)] // the broadcast's parameters and the two callbacks
    pub(crate) fn post(
        comm: &'c SimpleCommunicator,
        root: usize,
        buf: &'a mut [T],
        transport: Transport,
        tag: i32,
        scope: S,
        fill: Option<Fill<'_, T>>,
        tick: &mut dyn FnMut(),
    ) -> Self {
        let mut me = PanelBroadcast {
            comm,
            tag,
            collective: None,
            receives: VecDeque::new(),
            next: None,
            sends: Vec::new(),
            signals: Vec::new(),
            scope,
        };
        let p = comm.size() as usize;
        let chunk_bytes = match transport {
            Transport::Ibcast | Transport::Shared => DEFAULT_CHUNK_BYTES,
            Transport::Chain { chunk_bytes } => chunk_bytes,
        };
        // Elements per chunk; MPI counts are i32.
        let size = std::mem::size_of::<T>().max(1);
        let chunk = (chunk_bytes / size).clamp(1, i32::MAX as usize);
        if p < 2 || transport != (Transport::Chain { chunk_bytes }) {
            if let Some(fill) = fill {
                for (i, c) in buf.chunks_mut(chunk).enumerate() {
                    fill(i * chunk, c);
                    tick();
                }
            }
            if p < 2 {
                return me;
            }
            let root_p = comm.process_at_rank(root as i32);
            if transport == Transport::Ibcast {
                me.collective = Some(root_p.immediate_broadcast_into(scope, buf));
            } else if comm.rank() as usize == root {
                // Shared: `buf` is my slot in the window, visible to the others once synced
                // (by the caller, before this) and signalled.
                for r in (0..p).filter(|&r| r != root) {
                    let to = comm.process_at_rank(r as i32);
                    me.signals
                        .push(to.immediate_send_with_tag(scope, &[] as &[u8], tag));
                }
            } else {
                me.signals.push(root_p.immediate_receive_into_with_tag(
                    scope,
                    &mut [] as &mut [u8],
                    tag,
                ));
            }
            return me;
        }
        // My place in the chain root, root + 1, ... (ranks of the group, wrapping).
        let me_rank = comm.rank() as usize;
        let pos = (me_rank + p - root) % p;
        if pos + 1 < p {
            me.next = Some(((me_rank + 1) % p) as i32);
        }
        if pos == 0 {
            let next = comm.process_at_rank(me.next.unwrap_or(0));
            for (i, c) in buf.chunks_mut(chunk).enumerate() {
                if let Some(fill) = fill {
                    fill(i * chunk, c);
                }
                let c: &'a [T] = c;
                me.sends.push(next.immediate_send_with_tag(scope, c, tag));
                me.progress();
                tick();
            }
        } else {
            let prev = comm.process_at_rank(((me_rank + p - 1) % p) as i32);
            for c in buf.chunks_mut(chunk) {
                me.receives
                    .push_back(prev.immediate_receive_into_with_tag(scope, c, tag));
            }
        }
        me
    }

    /// Moves what has arrived along and tells whether everything of this broadcast is done
    /// on this process (received and forwarded). Never blocks.
    pub(crate) fn progress(&mut self) -> bool {
        if let Some(r) = self.collective.take() {
            if let Err(r) = r.test() {
                self.collective = Some(r);
                return false;
            }
        }
        // Chunks are forwarded in order (the next process posted its receives in that order).
        while let Some(r) = self.receives.pop_front() {
            match r.test_with_data() {
                Ok((_, data)) => self.forward(data),
                Err(r) => {
                    self.receives.push_front(r);
                    break;
                }
            }
        }
        let mut i = 0;
        while i < self.signals.len() {
            let r = self.signals.swap_remove(i);
            if let Err(r) = r.test() {
                self.signals.push(r);
                let last = self.signals.len() - 1;
                self.signals.swap(i, last);
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.sends.len() {
            let r = self.sends.swap_remove(i);
            match r.test() {
                Ok(_) => {}
                Err(r) => {
                    self.sends.push(r);
                    let last = self.sends.len() - 1;
                    self.sends.swap(i, last);
                    i += 1;
                }
            }
        }
        self.receives.is_empty() && self.sends.is_empty() && self.signals.is_empty()
    }

    /// Blocks until the broadcast is done on this process.
    pub(crate) fn wait(mut self) {
        if let Some(r) = self.collective.take() {
            r.wait_without_status();
        }
        while let Some(r) = self.receives.pop_front() {
            let data = r.wait_for_data();
            self.forward(data);
        }
        for r in self.sends.drain(..) {
            r.wait_without_status();
        }
        for r in self.signals.drain(..) {
            r.wait_without_status();
        }
    }

    fn forward(&mut self, data: &'a [T]) {
        if let Some(next) = self.next {
            let to = self.comm.process_at_rank(next);
            self.sends
                .push(to.immediate_send_with_tag(self.scope, data, self.tag));
        }
    }
}

/// Broadcasts `buf` from `root` to every process of `comm` with `transport`, driven the way
/// SUMMA drives its panels while a product runs: tested in a loop that yields the processor
/// between tests, or sleeps `nap` (the polling before the chain transport existed). What
/// `hetblas-mpi bcast` measures. Collective over `comm`.
pub fn broadcast<T: Equivalence>(
    comm: &SimpleCommunicator,
    root: usize,
    buf: &mut [T],
    transport: Transport,
    nap: Option<std::time::Duration>,
) {
    mpi::request::scope(|sc| {
        let mut bc = PanelBroadcast::post(comm, root, buf, transport, 0, sc, None, &mut || {});
        while !bc.progress() {
            match nap {
                Some(d) => std::thread::sleep(d),
                None => std::thread::yield_now(),
            }
        }
        bc.wait();
    });
}
