//! The latency/bandwidth transfer model of one directed link (CoCoPeLia Section IV-A):
//! `t(b) = t_i + t_b * b`, and `t_bid(b) = sl * t(b)` while the opposite direction is busy.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Transfer time model of one link direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinkModel {
    /// Fixed cost of one transfer, seconds (`t_i`).
    pub latency_s: f64,
    /// Seconds per byte (`t_b`, the inverse of the bandwidth).
    pub sec_per_byte: f64,
    /// Factor applied to the transfer time while the opposite direction is busy for the whole
    /// transfer (`sl`, 1.0 = no slowdown).
    pub bid_slowdown: f64,
}

impl LinkModel {
    /// A model from a latency (s), a bandwidth (bytes/s) and a bidirectional slowdown.
    /// A non-positive bandwidth gives an infinitely slow link (`sec_per_byte = inf`).
    pub fn new(latency_s: f64, bytes_per_sec: f64, bid_slowdown: f64) -> LinkModel {
        LinkModel {
            latency_s,
            sec_per_byte: if bytes_per_sec > 0.0 {
                1.0 / bytes_per_sec
            } else {
                f64::INFINITY
            },
            bid_slowdown,
        }
    }

    /// Bandwidth in bytes per second (`1 / t_b`).
    pub fn bytes_per_sec(&self) -> f64 {
        1.0 / self.sec_per_byte
    }

    /// Seconds to move `bytes` when the opposite direction is idle. Moving nothing costs nothing
    /// (no transfer is issued), so `time(0) == 0`.
    pub fn time(&self, bytes: usize) -> f64 {
        if bytes == 0 {
            0.0
        } else {
            self.latency_s + self.sec_per_byte * bytes as f64
        }
    }

    /// Fits `t = t_i + t_b * b` to `(bytes, seconds)` samples minimising relative residuals
    /// (weights `1/t^2`): calibration's sizes grow geometrically, and an ordinary fit would let
    /// the noise of the largest transfers swamp the latency. The latency is kept non-negative
    /// (else the fit is redone through the origin); the slowdown of the result is 1.
    ///
    /// # Errors
    /// `InvalidInput` with no usable sample (finite, positive), or when the fitted time does not
    /// grow with the size (`t_b <= 0`): the samples do not describe a link.
    pub fn fit_relative(samples: &[(usize, f64)]) -> Result<LinkModel> {
        let pts: Vec<(f64, f64, f64)> = samples
            .iter()
            .filter(|(_, t)| t.is_finite() && *t >= 0.0)
            .map(|&(b, t)| (b as f64, t, 1.0 / (t * t)))
            .filter(|(_, _, w)| w.is_finite() && *w > 0.0)
            .collect();
        if pts.is_empty() {
            return Err(Error::InvalidInput(
                "link fit: no usable (bytes, seconds) sample".into(),
            ));
        }
        let sw: f64 = pts.iter().map(|p| p.2).sum();
        let mb = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / sw;
        let mt = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / sw;
        let sbb: f64 = pts.iter().map(|p| p.2 * (p.0 - mb) * (p.0 - mb)).sum();
        let sbt: f64 = pts.iter().map(|p| p.2 * (p.0 - mb) * (p.1 - mt)).sum();
        let (mut latency, mut slope) = if sbb > 0.0 {
            let s = sbt / sbb;
            (mt - s * mb, s)
        } else {
            // One distinct size: latency and bandwidth cannot be told apart; all to bandwidth.
            (-1.0, 0.0)
        };
        if latency < 0.0 {
            let sb2: f64 = pts.iter().map(|p| p.2 * p.0 * p.0).sum();
            let sbt0: f64 = pts.iter().map(|p| p.2 * p.0 * p.1).sum();
            latency = 0.0;
            slope = if sb2 > 0.0 { sbt0 / sb2 } else { 0.0 };
        }
        if !(slope > 0.0 && slope.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "link fit: transfer time does not grow with size (t_b = {slope:e} s/B)"
            )));
        }
        Ok(LinkModel {
            latency_s: latency,
            sec_per_byte: slope,
            bid_slowdown: 1.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn time_and_bidirectional() {
        let m = LinkModel::new(2.5e-6, 12.18e9, 1.27);
        let b = 4096 * 4096 * 8;
        let t = 2.5e-6 + b as f64 / 12.18e9;
        assert!(close(m.time(b), t, 1e-12));
        assert_eq!(m.time(0), 0.0);
        assert!(close(m.bytes_per_sec(), 12.18e9, 1e-12));
    }

    #[test]
    fn fit_recovers_exact_line() {
        let truth = LinkModel::new(2e-4, 2e9, 1.0);
        let samples: Vec<(usize, f64)> = (0..12)
            .map(|i| {
                let b = 1024usize << i;
                (b, truth.time(b))
            })
            .collect();
        let m = LinkModel::fit_relative(&samples).unwrap();
        assert!(close(m.latency_s, 2e-4, 1e-9), "{m:?}");
        assert!(close(m.bytes_per_sec(), 2e9, 1e-9), "{m:?}");
        assert_eq!(m.bid_slowdown, 1.0);
    }

    #[test]
    fn fit_with_noise() {
        // Deterministic +-3% multiplicative noise.
        let truth = LinkModel::new(5e-5, 10e9, 1.0);
        let samples: Vec<(usize, f64)> = (0..40)
            .map(|i| {
                let b = 4096 * (i + 1) * (i + 1) * 64;
                let noise = 1.0 + 0.03 * ((i as f64 * 2.399).sin());
                (b, truth.time(b) * noise)
            })
            .collect();
        let r = LinkModel::fit_relative(&samples).unwrap();
        assert!(close(r.bytes_per_sec(), 10e9, 0.05), "{r:?}");
        assert!(close(r.latency_s, 5e-5, 0.3), "{r:?}");
    }

    #[test]
    fn latency_clamped_non_negative() {
        // Points on t = -1e-3 + 1e-9 b: the intercept is negative; the fit goes through 0.
        let samples: Vec<(usize, f64)> = [2_000_000usize, 4_000_000, 8_000_000]
            .iter()
            .map(|&b| (b, -1e-3 + 1e-9 * b as f64))
            .collect();
        let m = LinkModel::fit_relative(&samples).unwrap();
        assert_eq!(m.latency_s, 0.0);
        let w = |t: f64| 1.0 / (t * t);
        let sb2: f64 = samples.iter().map(|s| w(s.1) * (s.0 as f64).powi(2)).sum();
        let sbt: f64 = samples.iter().map(|s| w(s.1) * s.0 as f64 * s.1).sum();
        assert!(close(m.sec_per_byte, sbt / sb2, 1e-12));
    }

    #[test]
    fn fit_errors() {
        assert!(LinkModel::fit_relative(&[]).is_err());
        assert!(LinkModel::fit_relative(&[(100, f64::NAN)]).is_err());
        // Decreasing time with size is not a link.
        assert!(LinkModel::fit_relative(&[(100, 2.0), (200, 1.0)]).is_err());
        // A single size: all of it goes to bandwidth.
        let m = LinkModel::fit_relative(&[(1000, 1e-6), (1000, 1e-6)]).unwrap();
        assert_eq!(m.latency_s, 0.0);
        assert!(close(m.sec_per_byte, 1e-9, 1e-12));
    }
}

/// A link as the executor uses it: tiles that are columns of a larger host matrix move as 2D
/// copies whose speed depends on the bytes per column and on the host pitch (short columns far
/// apart are slow on PCIe DMA: measured 32 GB/s for 12 KiB columns against 55 GB/s contiguous on
/// H200, while columns closer than [`NEAR_PITCH`] move at the contiguous rate). `strided` holds
/// `(bytes per column, bytes per second)` measured by calibration; empty means "like contiguous".
#[derive(Debug, Clone, PartialEq)]
pub struct TileLink {
    pub model: LinkModel,
    /// At a host pitch of [`STRIDED_PITCH`] bytes.
    pub strided: Vec<(usize, f64)>,
    /// The same at a host pitch of [`WIDE_PITCH`] bytes (empty: as `strided`). Measured because
    /// fat-by-thin problems with 32768-row operands ran slower than the model; on H200 the two
    /// tables came out the same, so the pitch was not the cause.
    pub wide: Vec<(usize, f64)>,
    /// 2D copies at [`STRIDED_PITCH`] while the device computes (empty: not measured). From
    /// that pitch up, copies that run under products take this speed (H200 timelines: 8-16 KiB
    /// columns at 30-35 GB/s at 64-256 KiB pitches, against 49-55 alone).
    pub busy: Vec<(usize, f64)>,
    /// 2D copies at [`NEAR_PITCH`] alone (empty: not measured; then the pitch does not count).
    pub near: Vec<(usize, f64)>,
    /// The same while the device computes.
    pub near_busy: Vec<(usize, f64)>,
    /// 2D copies take the busy speed whether or not products run (where `busy` is measured).
    /// True of host->device tile copies on H200: in pipeline timelines 16 KiB columns at
    /// 182-201 KiB pitches moved at 33.5-35 GB/s with products under 4-15% of the copies
    /// (125x6488x25167 f64, 404x6672x45561 f32; the busy table's rate, and what
    /// `linkprobe.cu` measured beside DGEMM), not at the 49 GB/s of copies with nothing else
    /// on the device. Device->host copies did blend: 43 GB/s for 8 KiB columns with 39% under
    /// products (15107x10947x899 f32), between 49 alone and 33.5 beside DGEMM.
    /// Columns longer than [`ALWAYS_BUSY_COLUMN_BYTES`] take it only from [`far_pitch`] on:
    /// nearer, they blend (see [`TileLink::tile_time`]).
    pub busy_always: bool,
}

/// On a `busy_always` link, columns longer than this blend their alone and busy speeds at
/// pitches nearer than [`far_pitch`]. Every timeline behind `busy_always` had columns far
/// apart; a link-bound call whose B tiles crossed as 21-32 KiB columns 52.5 KiB apart, with
/// products beside 14% of the copies (540x10363x6721 f64 in 4096 tiles), ran 10% faster than
/// the busy speed priced it, at the alone rate. Over the seeded sets of seeds 2040-2087 (1497
/// calls as they ran) this cut the calls beyond 7% from 212 to 189 and the p90 from 8.4% to
/// 7.7%; the sweeps' points of every tile moved the same way (p90 17% to 16%). Blending 16 KiB
/// columns too (828x11302x14130 f32 in 4096 tiles, priced 11% slow) cost the sweeps' smaller
/// tiles more than it gained (p90 19%).
pub const ALWAYS_BUSY_COLUMN_BYTES: usize = 16 * 1024;

/// Columns up to this many bytes move at the [`TileLink::busy`] speed whether or not products
/// run (when that table is measured).
pub const SHORT_COLUMN_BYTES: usize = 12 * 1024;

/// Host pitch (bytes) of [`TileLink::strided`]: a 16384-row f64 matrix.
pub const STRIDED_PITCH: usize = 16384 * 8;
/// Host pitch (bytes) of [`TileLink::wide`]: a 32768-row f64 matrix.
pub const WIDE_PITCH: usize = 32768 * 8;
/// Host pitch (bytes) of [`TileLink::near`]: a 4096-row f64 matrix. On H200 (walking tiles of a
/// 2 GiB registered matrix, `crates/bench/cuda/linkprobe.cu`) 8-16 KiB columns at this pitch
/// moved at 51-55 GB/s under DGEMM and 4 KiB ones at 39, against 33 and 21 from 64 KiB up;
/// columns 1 KiB apart moved at the contiguous rate, alone or not.
pub const NEAR_PITCH: usize = 4096 * 8;

/// The host pitch from which 2D copies of `row_bytes` columns move at the far
/// ([`STRIDED_PITCH`]) rate: twelve columns, at least twice [`NEAR_PITCH`] and at most
/// [`STRIDED_PITCH`]. On H200 (`crates/bench/cuda/linkprobe.cu`, under DGEMM) 4 and 8 KiB
/// columns already moved at their far rate 64 KiB apart (21 and 34 GB/s, against 21 and 33 at
/// 128 KiB), while 16 KiB columns moved halfway there (41 GB/s, between 55 and 33). Tiles in
/// pipelines did better: with eight columns, the 70 link-bound calls of the seeded sets
/// (2026-11-30 and 12-01) whose tiles crossed as 6-12 KiB columns 32-128 KiB apart were priced
/// 7.8% slow at the median, 29 of them by more than 12% (8 KiB columns 36-50 KiB apart, the
/// 1024-row f64 tiles of 4500-6500-row matrices, ran near the near rate); with twelve, 5.1%
/// and 19.
pub fn far_pitch(row_bytes: usize) -> usize {
    row_bytes
        .saturating_mul(12)
        .clamp(2 * NEAR_PITCH, STRIDED_PITCH)
}

/// A strided table made non-decreasing in the column length: a 2D copy of longer columns (fewer,
/// larger DMA bursts at the same pitch) is never slower than one of shorter columns. Applied to
/// the tables net of the per-copy latency ([`without_latency`]), the rates copies stream at.
/// The calibrated tables dip where single copies landed in the slow of two modes (H200, busy
/// host->device: 12 KiB columns at 18 GB/s and 16 KiB at 27, between 33 at 8 KiB and 48 at
/// 32 KiB); made monotone, the shortest columns' net rate is the floor of the longer ones
/// (on that profile 38 GB/s up to 16 KiB, somewhat above the 30-37 GB/s pipeline timelines
/// showed for 8-16 KiB columns far apart: `docs/PERFORMANCE.md` gives what each choice of
/// floor scored).
///
/// Entries whose calibrated copy was mostly latency ([`latency_bound`]) keep their own rate
/// but set no floor: their net rate is the least certain (a link whose per-copy latency is a
/// large part of a short column's copy would otherwise price every longer column at the rate
/// that subtraction gives). `table` must be sorted by column length; entries that are not
/// finite are dropped.
pub fn monotone(table: &[(usize, f64)], latency_bound: &[bool]) -> Vec<(usize, f64)> {
    debug_assert!(
        table.windows(2).all(|w| w[0].0 <= w[1].0),
        "unsorted strided table"
    );
    let mut best = 0.0f64;
    table
        .iter()
        .enumerate()
        .filter(|(_, &(_, bps))| bps.is_finite())
        .map(|(i, &(col_bytes, bps))| {
            let own = bps.max(best);
            if !latency_bound.get(i).copied().unwrap_or(false) {
                best = own;
            }
            (col_bytes, own)
        })
        .collect()
}

/// Share of a calibrated 2D copy's time above which it counts as latency-bound
/// ([`latency_bound`]). On the H200 profile the shortest entry (2 KiB columns, a 0.5 MB tile)
/// spent 28% of its time in the per-copy latency, the next 8%.
pub const LATENCY_BOUND_SHARE: f64 = 0.5;

/// Per entry of a calibrated strided table (as [`without_latency`] reads it): whether the
/// per-copy latency took more than [`LATENCY_BOUND_SHARE`] of the copy's measured time.
pub fn latency_bound(table: &[(usize, f64)], latency_s: f64) -> Vec<bool> {
    table
        .iter()
        .map(|&(col_bytes, bps)| {
            let t = (col_bytes * col_bytes / 8) as f64 / bps.max(1.0);
            latency_s > LATENCY_BOUND_SHARE * t
        })
        .collect()
}

/// A strided table as calibration measures it (per column length `c` in bytes, the speed of one
/// square f64 tile of `c / 8` columns, per-copy latency included) as [`TileLink::tile_time`]
/// uses it: the speed once the copy runs, since `tile_time` adds `latency_s` itself. Left as it
/// was, a tile paid its latency twice: on H200 the 2-4 KiB columns of sub-millisecond calls'
/// tiles (0.5-2 MB) were priced at 31-43 GB/s where they moved at 46-53 (the tables' own
/// copies, less 5.3 us each). At most `contiguous`, and a copy keeps at least half its
/// measured time.
pub fn without_latency(
    table: &[(usize, f64)],
    latency_s: f64,
    contiguous: f64,
) -> Vec<(usize, f64)> {
    table
        .iter()
        .map(|&(col_bytes, bps)| {
            let bytes = (col_bytes * col_bytes / 8) as f64;
            let t = bytes / bps.max(1.0);
            let net = (t - latency_s.max(0.0)).max(0.5 * t);
            (col_bytes, (bytes / net).min(contiguous.max(bps)))
        })
        .collect()
}

impl TileLink {
    /// Seconds to move a `rows x cols` tile of `elem`-byte elements whose host side has a
    /// pitch of `pitch_bytes`; `contiguous` when the host side is one run of memory (the tile
    /// spans whole columns). `load`: the share of the copy that runs while the device computes
    /// (0 to 1), blending the alone and [`TileLink::busy`] speeds of 2D copies.
    pub fn tile_time(
        &self,
        rows: usize,
        cols: usize,
        elem: usize,
        contiguous: bool,
        pitch_bytes: usize,
        load: f64,
    ) -> f64 {
        let bytes = rows * cols * elem;
        if bytes == 0 {
            return 0.0;
        }
        if contiguous || self.strided.is_empty() {
            return self.model.time(bytes);
        }
        let row_bytes = rows * elem;
        let alone = self.pitched_bandwidth(row_bytes, pitch_bytes);
        let bw = if self.busy.is_empty() {
            alone
        } else {
            let busy = self.busy_bandwidth(row_bytes, pitch_bytes);
            let always = self.busy_always
                && (row_bytes <= ALWAYS_BUSY_COLUMN_BYTES || pitch_bytes >= far_pitch(row_bytes));
            if row_bytes <= SHORT_COLUMN_BYTES || always {
                // Short columns alone run at one of two speeds from copy to copy (H200, 8 KiB:
                // 33 or 48 GB/s); in every pipeline timeline they ran at the busy speed, as did,
                // on links marked `busy_always`, columns up to `ALWAYS_BUSY_COLUMN_BYTES` at any
                // pitch and longer ones from `far_pitch` on.
                busy
            } else {
                alone + (busy - alone) * load.clamp(0.0, 1.0)
            }
        };
        self.model.latency_s + bytes as f64 / bw
    }

    /// Bandwidth of 2D copies with `row_bytes` per column at host pitch `pitch_bytes` while the
    /// device computes: the busy table from [`far_pitch`] up; nearer, log-linear in the pitch
    /// towards the near busy table at [`NEAR_PITCH`] and the contiguous rate at a pitch of one
    /// column (when the near table is measured).
    pub fn busy_bandwidth(&self, row_bytes: usize, pitch_bytes: usize) -> f64 {
        let contiguous = self.model.bytes_per_sec();
        let far = Self::table_bandwidth(&self.busy, contiguous, row_bytes);
        self.toward_near(&self.near_busy, far, row_bytes, pitch_bytes)
    }

    /// `far` (the rate of columns far apart) carried to a nearer pitch: log-linear in the pitch
    /// between `near` (at [`NEAR_PITCH`]) and `far` (reached at [`far_pitch`]), and below
    /// [`NEAR_PITCH`] between the contiguous rate (columns back to back) and `near`. Unchanged
    /// without a near table or from [`far_pitch`] up.
    fn toward_near(
        &self,
        near: &[(usize, f64)],
        far: f64,
        row_bytes: usize,
        pitch_bytes: usize,
    ) -> f64 {
        if near.is_empty() || pitch_bytes >= STRIDED_PITCH {
            return far;
        }
        let contiguous = self.model.bytes_per_sec();
        let at_near = if row_bytes >= NEAR_PITCH {
            // Columns as long as the near pitch are all but contiguous there.
            contiguous
        } else {
            Self::table_bandwidth(near, contiguous, row_bytes)
        };
        let ln = |x: usize| (x.max(1) as f64).ln();
        let pitch = pitch_bytes.max(row_bytes);
        if pitch >= NEAR_PITCH {
            let far_from = far_pitch(row_bytes);
            let f = ((ln(pitch) - ln(NEAR_PITCH)) / (ln(far_from) - ln(NEAR_PITCH))).min(1.0);
            at_near + (far - at_near) * f
        } else {
            let span = (ln(NEAR_PITCH) - ln(row_bytes)).max(f64::MIN_POSITIVE);
            let f = ((ln(pitch) - ln(row_bytes)) / span).clamp(0.0, 1.0);
            contiguous + (at_near - contiguous) * f
        }
    }

    /// Bandwidth of 2D copies with `row_bytes` per column at host pitch `pitch_bytes`: the
    /// strided table from [`far_pitch`] to [`STRIDED_PITCH`], the wide one from [`WIDE_PITCH`],
    /// log-linear in between; nearer than [`far_pitch`], towards the near table (see
    /// `toward_near`).
    pub fn pitched_bandwidth(&self, row_bytes: usize, pitch_bytes: usize) -> f64 {
        let base = Self::table_bandwidth(&self.strided, self.model.bytes_per_sec(), row_bytes);
        if self.wide.is_empty() || pitch_bytes <= STRIDED_PITCH {
            return self.toward_near(&self.near, base, row_bytes, pitch_bytes);
        }
        let wide = Self::table_bandwidth(&self.wide, self.model.bytes_per_sec(), row_bytes);
        if pitch_bytes >= WIDE_PITCH {
            return wide;
        }
        let f = ((pitch_bytes as f64).ln() - (STRIDED_PITCH as f64).ln())
            / ((WIDE_PITCH as f64).ln() - (STRIDED_PITCH as f64).ln());
        base + (wide - base) * f
    }

    /// Interpolated linearly in log(row bytes) between measured points, clamped at the ends,
    /// never above contiguous.
    fn table_bandwidth(pts: &[(usize, f64)], contiguous: f64, row_bytes: usize) -> f64 {
        let x = (row_bytes.max(1) as f64).ln();
        let bw = match pts.iter().position(|&(rb, _)| rb >= row_bytes) {
            None => pts.last().map_or(contiguous, |p| p.1),
            Some(0) => pts[0].1,
            Some(i) => {
                let (x0, y0) = ((pts[i - 1].0 as f64).ln(), pts[i - 1].1);
                let (x1, y1) = ((pts[i].0 as f64).ln(), pts[i].1);
                y0 + (y1 - y0) * (x - x0) / (x1 - x0).max(f64::MIN_POSITIVE)
            }
        };
        bw.min(contiguous).max(1.0)
    }
}

#[cfg(test)]
mod tile_link_tests {
    use super::*;

    /// A 55 GB/s link with only the far tables (`strided` alone, `busy` under products).
    fn far_tables(
        strided: Vec<(usize, f64)>,
        busy: Vec<(usize, f64)>,
        busy_always: bool,
    ) -> TileLink {
        TileLink {
            model: LinkModel::new(0.0, 55e9, 1.0),
            strided,
            wide: vec![],
            busy,
            near: vec![],
            near_busy: vec![],
            busy_always,
        }
    }

    #[test]
    fn strided_interpolates_and_clamps() {
        let l = TileLink {
            model: LinkModel::new(1e-5, 50e9, 1.0),
            strided: vec![(4096, 20e9), (16384, 40e9), (65536, 60e9)],
            wide: vec![(4096, 10e9), (65536, 30e9)],
            busy: vec![],
            near: vec![],
            near_busy: vec![],
            busy_always: false,
        };
        assert!((l.pitched_bandwidth(1024, STRIDED_PITCH) - 20e9).abs() < 1.0);
        assert!((l.pitched_bandwidth(8192, STRIDED_PITCH) - 30e9).abs() < 1e3);
        // Never above the contiguous bandwidth.
        assert!((l.pitched_bandwidth(1 << 20, STRIDED_PITCH) - 50e9).abs() < 1.0);
        let t = l.tile_time(1024, 1024, 8, false, STRIDED_PITCH, 0.0);
        assert!((t - (1e-5 + 8.0 * 1048576.0 / 30e9)).abs() < 1e-9);
        assert!(
            (l.tile_time(1024, 1024, 8, true, STRIDED_PITCH, 0.0) - l.model.time(8 << 20)).abs()
                < 1e-12
        );
        // Pitch: the base table up to 128 KiB, the wide one from 256 KiB, log-linear between.
        assert_eq!(l.pitched_bandwidth(4096, 8192), 20e9);
        assert_eq!(l.pitched_bandwidth(4096, WIDE_PITCH * 2), 10e9);
        let mid = ((STRIDED_PITCH as f64) * (WIDE_PITCH as f64)).sqrt() as usize;
        assert!((l.pitched_bandwidth(4096, mid) - 15e9).abs() < 1e6);
        // Under products: the busy table, whatever the pitch, blended by the share of the
        // copy that runs under them.
        let busy = TileLink {
            busy: vec![(8192, 25e9), (32768, 45e9)],
            ..l
        };
        let bytes = 2048.0 * 1024.0 * 8.0;
        for pitch in [8192, STRIDED_PITCH, WIDE_PITCH * 2] {
            let alone = busy.pitched_bandwidth(16384, pitch);
            let at = |load| busy.tile_time(2048, 1024, 8, false, pitch, load) - 1e-5;
            assert!((at(0.0) - bytes / alone).abs() < 1e-12);
            assert!((at(1.0) - bytes / 35e9).abs() < 1e-9);
            assert!((at(0.5) - bytes / (0.5 * (alone + 35e9))).abs() < 1e-9);
            // Short columns: the busy speed, loaded or not.
            let short = busy.tile_time(1024, 1024, 8, false, pitch, 0.0) - 1e-5;
            assert!((short - 8.0 * 1048576.0 / 25e9).abs() < 1e-9);
        }
    }

    /// A dip in a calibrated table (one copy caught in the slow mode) does not survive: longer
    /// columns keep the best rate of any shorter ones.
    #[test]
    fn monotone_tables_never_fall_with_longer_columns() {
        let t = vec![(8192, 33e9), (12288, 18e9), (16384, 27e9), (32768, 48e9)];
        assert_eq!(
            monotone(&t, &[false; 4]),
            vec![(8192, 33e9), (12288, 33e9), (16384, 33e9), (32768, 48e9)]
        );
        assert!(monotone(&[], &[]).is_empty());
        assert_eq!(monotone(&[(4096, 30e9)], &[]), vec![(4096, 30e9)]);
        // Not-finite entries are dropped, not taken as a floor of 0 or infinity.
        assert_eq!(
            monotone(
                &[(2048, f64::NAN), (4096, 30e9), (8192, f64::INFINITY)],
                &[]
            ),
            vec![(4096, 30e9)]
        );
    }

    /// On a link whose per-copy latency is most of a short column's calibrated copy, that
    /// entry's net rate (twice its measured one here) keeps its place but is no floor: longer
    /// columns keep their own rates instead of reading as contiguous.
    #[test]
    fn latency_bound_entries_set_no_floor() {
        // 2 KiB columns: a 0.5 MiB tile measured at 20 GB/s (26 us) behind a 15 us latency,
        // which leaves it 40 GB/s net (it keeps half its time), above the longer columns.
        let raw = vec![(2048, 20e9), (8192, 30e9), (16384, 35e9)];
        let bound = latency_bound(&raw, 15e-6);
        assert_eq!(bound, vec![true, false, false]);
        let net = without_latency(&raw, 15e-6, 55e9);
        assert!((net[0].1 - 40e9).abs() < 1e6, "{net:?}");
        let m = monotone(&net, &bound);
        assert_eq!(m, net, "already rising once the 2 KiB entry sets no floor");
        assert!(m[1].1 < 32e9 && m[2].1 < 36e9, "{m:?}");
        // Without the mark the 2 KiB entry would be the floor of both.
        let all = monotone(&net, &[false; 3]);
        assert_eq!(all[1].1, net[0].1);
        assert_eq!(all[2].1, net[0].1);
    }

    /// With `busy_always`, 2D copies of long columns take the busy speed even with no products
    /// beside them; without it they blend by the share under products (short columns take
    /// the busy speed either way).
    #[test]
    fn busy_always_prices_2d_copies_at_the_busy_speed_without_products() {
        let blend = far_tables(
            vec![(8192, 33e9), (16384, 49e9)],
            vec![(8192, 33e9), (16384, 34e9)],
            false,
        );
        let always = TileLink {
            busy_always: true,
            ..blend.clone()
        };
        let bytes = 2048.0 * 2048.0 * 8.0;
        let time = |l: &TileLink, load| l.tile_time(2048, 2048, 8, false, STRIDED_PITCH, load);
        assert!((time(&blend, 0.0) - bytes / 49e9).abs() < 1e-9);
        assert!((time(&always, 0.0) - bytes / 34e9).abs() < 1e-9);
        assert!((time(&always, 1.0) - time(&blend, 1.0)).abs() < 1e-12);
        // 8 KiB columns: the busy speed in both.
        let short = |l: &TileLink| l.tile_time(1024, 1024, 8, false, STRIDED_PITCH, 0.0);
        assert!((short(&blend) - short(&always)).abs() < 1e-12);
    }

    /// On a `busy_always` link, columns longer than [`ALWAYS_BUSY_COLUMN_BYTES`] blend by
    /// the share under products while nearer than [`far_pitch`], and take the busy speed from
    /// there on; columns up to that length take it at any pitch.
    #[test]
    fn long_columns_near_each_other_blend_even_on_a_busy_always_link() {
        let link = far_tables(
            vec![(16384, 49e9), (32768, 54e9)],
            vec![(16384, 34e9), (32768, 46e9)],
            true,
        );
        // 32 KiB columns 56 KiB apart (no near tables: the far tables' rates).
        let long = |load| link.tile_time(4096, 1024, 8, false, 56 * 1024, load);
        let bytes = 4096.0 * 1024.0 * 8.0;
        assert!((long(0.0) - bytes / 54e9).abs() < 1e-9);
        assert!((long(0.5) - bytes / 50e9).abs() < 1e-9);
        assert!((long(1.0) - bytes / 46e9).abs() < 1e-9);
        // The same columns from the far pitch on: the busy speed, alone or not.
        let far = far_pitch(32768);
        assert!((link.tile_time(4096, 1024, 8, false, far, 0.0) - bytes / 46e9).abs() < 1e-9);
        // 16 KiB columns as near: the busy speed, alone or not.
        let t16 = link.tile_time(2048, 1024, 8, false, 40 * 1024, 0.0);
        assert!((t16 - 2048.0 * 1024.0 * 8.0 / 34e9).abs() < 1e-9);
    }

    /// The far rate starts at twelve columns' pitch, no nearer than twice the near pitch and no
    /// farther than the strided pitch.
    #[test]
    fn far_pitch_is_twelve_columns_within_the_measured_pitches() {
        assert_eq!(far_pitch(4096), 2 * NEAR_PITCH);
        assert_eq!(far_pitch(5461), 2 * NEAR_PITCH);
        assert_eq!(far_pitch(8192), 96 * 1024);
        assert_eq!(far_pitch(12288), STRIDED_PITCH);
        assert_eq!(far_pitch(16384), STRIDED_PITCH);
        assert_eq!(far_pitch(1 << 20), STRIDED_PITCH);
        assert_eq!(far_pitch(usize::MAX), STRIDED_PITCH);
    }

    /// Nearer than [`far_pitch`], 2D copies move towards the near tables at [`NEAR_PITCH`] and
    /// the contiguous rate at a pitch of one column, log-linear in the pitch; without near
    /// tables the pitch below [`STRIDED_PITCH`] does not count.
    #[test]
    fn near_pitches_move_towards_the_near_tables_and_contiguous() {
        let far = far_tables(
            vec![(4096, 34e9), (16384, 49e9)],
            vec![(4096, 21e9), (16384, 33e9)],
            false,
        );
        let l = TileLink {
            near: vec![(4096, 53e9), (16384, 55e9)],
            near_busy: vec![(4096, 39e9), (16384, 55e9)],
            busy_always: false,
            ..far.clone()
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b;
        for pitch in [STRIDED_PITCH, 2 * STRIDED_PITCH] {
            assert!(close(l.busy_bandwidth(4096, pitch), 21e9));
            assert!(close(l.pitched_bandwidth(4096, pitch), 34e9));
        }
        assert!(close(l.busy_bandwidth(4096, NEAR_PITCH), 39e9));
        assert!(close(l.pitched_bandwidth(16384, NEAR_PITCH), 55e9));
        // 16 KiB columns reach the far rate at the strided pitch: halfway there in log
        // pitch, halfway in rate. 4 KiB columns reach it at twice the near pitch.
        assert!(close(l.busy_bandwidth(16384, 2 * NEAR_PITCH), 44e9));
        assert!(close(l.busy_bandwidth(4096, 2 * NEAR_PITCH), 21e9));
        assert!(close(l.pitched_bandwidth(4096, 2 * NEAR_PITCH), 34e9));
        let mid = (NEAR_PITCH as f64 * 2f64.sqrt()) as usize;
        assert!((l.busy_bandwidth(4096, mid) - 30e9).abs() < 0.01e9);
        // Columns back to back are contiguous; a third of the way in log pitch towards the near
        // pitch (4 KiB columns 8 KiB apart), a third of the way towards the near rate.
        assert!(close(l.busy_bandwidth(4096, 4096), 55e9));
        assert!(close(l.busy_bandwidth(4096, 8192), 55e9 - 16e9 / 3.0));
        // Without near tables the old behaviour: the strided and busy tables at any pitch.
        assert!(close(far.busy_bandwidth(4096, 4096 * 2), 21e9));
        assert!(close(far.pitched_bandwidth(16384, NEAR_PITCH), 49e9));
        // The tile time uses them: 16 KiB columns under products at the near pitch.
        let bytes = 4096.0 * 2048.0 * 4.0;
        assert!(close(
            l.tile_time(4096, 2048, 4, false, NEAR_PITCH, 1.0),
            bytes / 55e9
        ));
        assert!(close(
            far.tile_time(4096, 2048, 4, false, NEAR_PITCH, 1.0),
            bytes / 33e9
        ));
    }
}
