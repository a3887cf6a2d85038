//! The network between ranks as a model: latency and bandwidth per kind of link, the input of
//! the projection to more nodes than we have ([`crate::project`]). Values come from a
//! measurement between ranks (`hetblas-mpi pingpong`, `hetblas-mpi bcast`) or from a datasheet
//! (`infiniband_ndr`).
//!
//! Measured between two ranks of one node: on the 2-core build machine (shared, load 12),
//! Open MPI 4.1.4's shared memory (vader, CMA) moved 1-3 GB/s for 256 MiB-1 GiB messages and
//! took about 5 us for small ones; on the H200 machine, broadcasts of 4 GiB panels between two
//! ranks reached about 1.8 GB/s (Ibcast polled every 20 us). Neither is a property of the
//! hardware (a memory copy runs at 10 GB/s and more): they are why the panels now travel as
//! chunked point-to-point messages polled without sleeping.

/// One kind of link between two ranks: a message of `b` bytes takes `latency + b / bandwidth`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkLink {
    /// Seconds for an empty message, one way.
    pub latency_s: f64,
    /// Bytes per second, one way, one message at a time.
    pub bandwidth: f64,
}

impl NetworkLink {
    /// Time of one message of `bytes`.
    pub fn time(&self, bytes: f64) -> f64 {
        self.latency_s + bytes / self.bandwidth
    }
}

/// The links a distributed run uses: between ranks of one node, and between nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkModel {
    pub intra_node: NetworkLink,
    pub inter_node: NetworkLink,
    /// Ranks placed on one node (consecutive ranks share a node).
    pub ranks_per_node: usize,
}

impl NetworkModel {
    /// InfiniBand NDR (400 Gb/s per port, one port per node): 50 GB/s and about 1 us per
    /// message between nodes as stated by the vendor; inside a node shared memory, taken as
    /// 10 GB/s and 0.5 us (a single-copy transfer at memory-copy speed; see the module notes
    /// for what was measured).
    pub fn infiniband_ndr(ranks_per_node: usize) -> Self {
        NetworkModel {
            intra_node: NetworkLink {
                latency_s: 0.5e-6,
                bandwidth: 10e9,
            },
            inter_node: NetworkLink {
                latency_s: 1.0e-6,
                bandwidth: 50e9,
            },
            ranks_per_node: ranks_per_node.max(1),
        }
    }

    /// The link between two ranks.
    pub fn link(&self, a: usize, b: usize) -> NetworkLink {
        if a / self.ranks_per_node == b / self.ranks_per_node {
            self.intra_node
        } else {
            self.inter_node
        }
    }

    /// A broadcast of `bytes` from `ranks[0]` to the others as a binomial tree whose rounds
    /// each cost the slowest link used: `ceil(log2 p)` rounds. Large messages are pipelined by
    /// MPI libraries (closer to `2 * bytes / bandwidth`); the smaller of the two estimates is
    /// returned.
    pub fn broadcast_time(&self, ranks: &[usize], bytes: f64) -> f64 {
        if ranks.len() < 2 {
            return 0.0;
        }
        let links = ranks[1..].iter().map(|&r| self.link(ranks[0], r));
        let slowest = links
            .reduce(|w, l| if l.bandwidth < w.bandwidth { l } else { w })
            .unwrap_or(self.intra_node);
        let rounds = (ranks.len() as f64).log2().ceil();
        let tree = rounds * slowest.time(bytes);
        let pipelined = rounds * slowest.latency_s + 2.0 * bytes / slowest.bandwidth;
        tree.min(pipelined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_broadcasts() {
        let net = NetworkModel::infiniband_ndr(4);
        assert_eq!(net.link(0, 3), net.intra_node);
        assert_eq!(net.link(3, 4), net.inter_node);
        let b = 1e9;
        assert_eq!(net.broadcast_time(&[0], b), 0.0);
        // Two ranks on two nodes: one message.
        let t = net.broadcast_time(&[0, 4], b);
        assert!((t - net.inter_node.time(b)).abs() < 1e-12);
        // More ranks never broadcast faster.
        assert!(net.broadcast_time(&[0, 4, 8, 12], b) >= t);
    }
}
