//! Kernel execution time: measured GEMM times per square tile size, interpolated off the grid.
//!
//! The flop rate is interpolated, not the time: time grows like `T^3` (a straight line between
//! two times badly overestimates in between), while the rate varies slowly; linearly in
//! `log2 T`, as the grids are geometric. Outside the grid the nearest measured rate holds.
//! Rates are real flops (a complex multiply-add counts 8). An `m x n x k` tile takes the rate of
//! the cube of the same volume, so a thin edge tile gets a small tile's (lower) rate.

use crate::error::{Error, Result};
use crate::scalar::DType;

/// Anything that predicts the time of one GEMM on one device.
pub trait ExecTime {
    /// Seconds for a `m x n x k` GEMM (`2 m n k` flops). Zero work takes zero time.
    fn gemm_time(&self, m: usize, n: usize, k: usize) -> f64;
    /// Seconds for a square `T x T x T` tile.
    fn tile_time(&self, t: usize) -> f64 {
        self.gemm_time(t, t, t)
    }
}

/// Measured GEMM times of one device and dtype, per square tile size.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecTable {
    dtype: DType,
    /// (T, seconds), sorted by T, distinct T.
    points: Vec<(usize, f64)>,
    /// log2(T) of each point.
    log_t: Vec<f64>,
    /// Flop rate of each point.
    rates: Vec<f64>,
}

impl ExecTable {
    /// A table from `(T, seconds)` measurements. Points are sorted; repeated sizes are averaged.
    ///
    /// # Errors
    /// `InvalidInput` when there is no point, or a point has `T == 0` or a time that is not a
    /// positive finite number.
    pub fn new(dtype: DType, points: impl IntoIterator<Item = (usize, f64)>) -> Result<ExecTable> {
        let mut pts: Vec<(usize, f64)> = points.into_iter().collect();
        if pts.is_empty() {
            return Err(Error::InvalidInput(format!(
                "exec table ({dtype}): no measured point"
            )));
        }
        for &(t, s) in &pts {
            if t == 0 || !(s.is_finite() && s > 0.0) {
                return Err(Error::InvalidInput(format!(
                    "exec table ({dtype}): bad point T = {t}, {s} s"
                )));
            }
        }
        pts.sort_by_key(|p| p.0);
        // A running mean of each size's times.
        let merged: Vec<(usize, f64)> = pts
            .chunk_by(|a, b| a.0 == b.0)
            .map(|same| {
                let mean = same
                    .iter()
                    .skip(1)
                    .zip(2u32..)
                    .fold(same[0].1, |m, (&(_, s), n)| m + (s - m) / f64::from(n));
                (same[0].0, mean)
            })
            .collect();
        let log_t = merged.iter().map(|p| (p.0 as f64).log2()).collect();
        let rates = merged
            .iter()
            .map(|&(t, s)| cube_flops(dtype, t as f64) / s)
            .collect();
        Ok(ExecTable {
            dtype,
            points: merged,
            log_t,
            rates,
        })
    }

    /// The dtype the times were measured for.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The measured `(T, seconds)` points, sorted by T.
    pub fn points(&self) -> &[(usize, f64)] {
        &self.points
    }

    /// Flop rate (flop/s) for a cube of edge `size` (may be fractional), interpolated linearly
    /// in `log2(size)`, the nearest measured rate outside the grid.
    pub fn rate_at(&self, size: f64) -> f64 {
        let n = self.rates.len();
        if n == 1 || size.is_nan() || size <= 0.0 {
            return self.rates[0];
        }
        let x = size.log2();
        if x <= self.log_t[0] {
            return self.rates[0];
        }
        if x >= self.log_t[n - 1] {
            return self.rates[n - 1];
        }
        // First index with log_t > x; 1 <= hi <= n-1 here.
        let hi = self.log_t.partition_point(|&l| l <= x);
        let lo = hi - 1;
        let f = (x - self.log_t[lo]) / (self.log_t[hi] - self.log_t[lo]);
        self.rates[lo] + f * (self.rates[hi] - self.rates[lo])
    }

    /// Flop rate of a square tile of size `t`.
    pub fn rate(&self, t: usize) -> f64 {
        self.rate_at(t as f64)
    }

    /// Seconds for a square `T x T x T` GEMM tile (exactly the measurement on the grid).
    pub fn time(&self, t: usize) -> f64 {
        if t == 0 {
            return 0.0;
        }
        if let Ok(i) = self.points.binary_search_by_key(&t, |p| p.0) {
            return self.points[i].1;
        }
        cube_flops(self.dtype, t as f64) / self.rate(t)
    }

    /// Seconds for an `m x n x k` GEMM, from the rate of the cube of the same volume.
    pub fn time_mnk(&self, m: usize, n: usize, k: usize) -> f64 {
        if m == 0 || n == 0 || k == 0 {
            return 0.0;
        }
        if m == n && n == k {
            return self.time(m);
        }
        let vol = m as f64 * n as f64 * k as f64;
        self.dtype.flops_per_fma() * vol / self.rate_at(vol.cbrt())
    }
}

impl ExecTime for ExecTable {
    fn gemm_time(&self, m: usize, n: usize, k: usize) -> f64 {
        self.time_mnk(m, n, k)
    }
    fn tile_time(&self, t: usize) -> f64 {
        self.time(t)
    }
}

/// Real flops of a `t^3` product: 2 per multiply-add, 8 per complex one.
fn cube_flops(dtype: DType, t: f64) -> f64 {
    dtype.flops_per_fma() * t * t * t
}

#[cfg(test)]
mod tests {
    use super::fixed::FixedRate;
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    /// A device whose rate ramps from 1 TF at T=256 to 8 TF at T=2048 and stays there.
    fn ramp() -> ExecTable {
        let pts = [(256usize, 1e12), (512, 2e12), (1024, 4e12), (2048, 8e12)]
            .map(|(t, r)| (t, 2.0 * (t as f64).powi(3) / r));
        ExecTable::new(DType::F64, pts).unwrap()
    }

    #[test]
    fn exact_on_grid() {
        let e = ramp();
        for &(t, s) in e.points() {
            assert_eq!(e.time(t), s);
            assert!(close(e.time_mnk(t, t, t), s, 1e-12));
        }
    }

    #[test]
    fn interpolates_rate_in_log_t() {
        let e = ramp();
        // Geometric midpoint of 512 and 1024: halfway in log2 -> rate 3 TF.
        let t = (512.0f64 * 1024.0).sqrt();
        assert!(close(e.rate_at(t), 3e12, 1e-12));
        // 768 = 512 * 1.5: log2 fraction 0.585 -> rate 2 + 0.585*2 TF.
        let f = 1.5f64.log2();
        let r = 2e12 + f * 2e12;
        assert!(close(e.time(768), 2.0 * 768f64.powi(3) / r, 1e-12));
        // Monotone in T.
        let mut prev = 0.0;
        for t in (128..4096).step_by(64) {
            let s = e.time(t);
            assert!(s > prev, "time not increasing at {t}");
            prev = s;
        }
    }

    #[test]
    fn extrapolates_with_nearest_rate() {
        let e = ramp();
        assert!(close(e.rate(8192), 8e12, 1e-12));
        assert!(close(e.time(4096), 2.0 * 4096f64.powi(3) / 8e12, 1e-12));
        assert!(close(e.rate(64), 1e12, 1e-12));
        assert!(close(e.time(128), 2.0 * 128f64.powi(3) / 1e12, 1e-12));
    }

    #[test]
    fn non_square_uses_equal_volume_cube() {
        let e = ramp();
        // 2048 x 2048 x 256 has the volume of a 1024 cube: rate 4 TF.
        let s = e.time_mnk(2048, 2048, 256);
        assert!(close(s, 2.0 * 2048.0 * 2048.0 * 256.0 / 4e12, 1e-12));
        assert_eq!(e.time_mnk(0, 5, 5), 0.0);
        assert_eq!(e.time(0), 0.0);
        // The ExecTime view agrees.
        let d: &dyn ExecTime = &e;
        assert_eq!(d.tile_time(512), e.time(512));
        assert_eq!(d.gemm_time(2048, 2048, 256), s);
    }

    #[test]
    fn construction_rules() {
        assert!(ExecTable::new(DType::F32, []).is_err());
        assert!(ExecTable::new(DType::F32, [(0, 1.0)]).is_err());
        assert!(ExecTable::new(DType::F32, [(64, 0.0)]).is_err());
        assert!(ExecTable::new(DType::F32, [(64, f64::NAN)]).is_err());
        let e = ExecTable::new(DType::F32, [(128, 3.0), (64, 1.0), (128, 1.0)]).unwrap();
        assert_eq!(e.points(), &[(64, 1.0), (128, 2.0)]);
        assert_eq!(e.dtype(), DType::F32);
        // One point: a constant rate.
        let one = ExecTable::new(DType::F64, [(4096, 0.02)]).unwrap();
        assert!(close(one.time(8192), 0.16, 1e-12));
        let f = FixedRate { flops_per_sec: 1e9 };
        assert!(close(f.tile_time(1000), 2.0, 1e-12));
    }
}

/// Test support: a device of one flop rate.
#[cfg(test)]
pub(crate) mod fixed {
    use super::ExecTime;

    /// A device that runs every GEMM at one flop rate (a datasheet number, or a quick estimate).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct FixedRate {
        /// Flops per second.
        pub flops_per_sec: f64,
    }

    impl ExecTime for FixedRate {
        fn gemm_time(&self, m: usize, n: usize, k: usize) -> f64 {
            2.0 * m as f64 * n as f64 * k as f64 / self.flops_per_sec
        }
    }
}
