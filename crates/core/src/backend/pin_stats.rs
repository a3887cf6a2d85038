//! What a backend's host registration cache did ([`crate::device::Device::host_pin_stats`]).

/// Counters of a registration cache, for reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PinStats {
    pub registrations: u64,
    pub hits: u64,
    pub failures: u64,
    pub evictions: u64,
    /// Cached registrations found stale (memory freed and mapped again) and redone.
    pub stale: u64,
    /// Registrations replaced by one covering their union (buffers sharing pages).
    pub merges: u64,
    /// Registrations dropped because their memory was found no longer mapped.
    pub released_unmapped: u64,
    /// Registrations dropped because the allocator hook reported their memory freed.
    pub released_freed: u64,
    pub bytes_registered: u64,
    /// Seconds registering, the pre-faulting included.
    pub seconds_registering: f64,
    /// Bytes populated in parallel before their registration.
    pub bytes_prefaulted: u64,
    pub seconds_prefaulting: f64,
}

impl std::ops::AddAssign<&PinStats> for PinStats {
    /// The counters of two caches together (a runtime with GPUs of two backends).
    fn add_assign(&mut self, o: &PinStats) {
        self.registrations += o.registrations;
        self.hits += o.hits;
        self.failures += o.failures;
        self.evictions += o.evictions;
        self.stale += o.stale;
        self.merges += o.merges;
        self.released_unmapped += o.released_unmapped;
        self.released_freed += o.released_freed;
        self.bytes_registered += o.bytes_registered;
        self.seconds_registering += o.seconds_registering;
        self.bytes_prefaulted += o.bytes_prefaulted;
        self.seconds_prefaulting += o.seconds_prefaulting;
    }
}
