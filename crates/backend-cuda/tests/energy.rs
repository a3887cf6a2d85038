//! NVML power and energy on real GPUs (skipped without an NVIDIA driver; failed with
//! HETBLAS_REQUIRE=cuda): every GPU reports a plausible power and a total-energy counter that
//! grows while it idles.

use hetblas_conformance::required;
use hetblas_core::energy::meter::PowerMeter;
use hetblas_cuda::nvml::NvmlMeter;
use std::time::Duration;

#[test]
fn nvml_reports_power_and_a_growing_energy_counter() {
    let m = match NvmlMeter::open(None) {
        Ok(m) => m,
        Err(why) => {
            assert!(!required("cuda"), "HETBLAS_REQUIRE=cuda: {why}");
            println!("skipped: {why}");
            return;
        }
    };
    let labels = m.devices();
    assert!(!labels.is_empty());
    let before: Vec<f64> = labels
        .iter()
        .map(|l| m.energy_j(l).expect("energy counter"))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    for (l, b) in labels.iter().zip(before) {
        let w = m.power_w(l).expect("power");
        // An idle H200 draws about 70-120 W, a busy one up to 700 W.
        assert!(w > 10.0 && w < 1500.0, "{l}: {w} W");
        let after = m.energy_j(l).expect("energy counter");
        // Half a second at 10 W or more: at least 5 J, within the counter's ticks.
        assert!(after - b > 2.0, "{l}: {b} J -> {after} J");
        println!("{l}: {w:.1} W, {:.2} J in 0.5 s", after - b);
    }
}
